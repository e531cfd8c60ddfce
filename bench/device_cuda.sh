#!/usr/bin/env bash
# The cuda target on the lent GPU machine (issue 15; see BENCHMARKS.md "CUDA"). Two halves:
#   bash bench/device_cuda.sh --bundle [--build DIR] [--base-bin OPVISION]
#       here, after building ./build (or DIR): bundles into .devrun/ opvision (stripped), the
#       shared libraries it needs that the GPU image lacks (lib.tar.xz, as bench/device_opencl.sh),
#       the shared fixture (ONNX + reference), the cuda test binaries (scripts/device_gtest.sh
#       --bundle: stripped, without the libraries lib.tar.xz carries) and the onnxruntime
#       references of generated variants (make-model widths/depths/heads, fp32 and fp16; fp16_wide's
#       stage 0 has enough pixel tiles for the ConvFFN's depthwise conv inside its launch); the
#       variants' ONNX is not carried: make-model is deterministic, so the GPU machine makes them
#       again and checks their SHA-256 against the bundle's; and tinygrad's wheel (bench_cuda.py
#       --tinygrad; installed there by bench/device_env.sh). --base-bin adds a second opvision
#       binary (e.g. one built from an earlier commit) as .devrun/opvision_base for a before/after.
#       Ends by checking that the working tree and .devrun fit the run tool's 64 MiB.
#   bash bench/device_cuda.sh [--arch compute_NN] [--base-flags "COMPILE FLAGS"] [--base-bin] [--batch N] [--probe] [bench_cuda.py args]
#       on the GPU machine (the run tool carries .devrun): compiles the fixture there (NVRTC of the
#       machine's CUDA; the bundle carries the ONNX, not a 21 MB artifact), the cuda gtests,
#       `opvision verify --backend cuda` on every artifact (and the fixture's with --cuda-code ptx),
#       the fixture's module load with its stored SASS against the PTX JIT-compiled (driver cache
#       off), bench/cuda_floor.cu where nvcc is there, then bench/bench_cuda.py against PyTorch
#       (latency, throughput with --inflight N frames in flight, torch.compile bounded by
#       --compile-timeout S). --base-flags compiles a second fixture artifact with these extra
#       compile flags (e.g. "--cuda-ffn off"), --base-bin with the bundle's opvision_base (both:
#       with that binary and those flags), and times it in the same rounds (a before/after; its
#       per-kernel profile is printed too).
#       --base-flags may be given several times (a sweep, e.g. of --cuda-tune values): one base
#       artifact each (fixture_fp16_base1.opv, ...), all verified and timed in the same rounds; the
#       generated variants are compiled with the first's flags only.
#       --arch (default compute_80): the PTX architecture every artifact is compiled for (compute_90:
#       the H200's own, with the thread-block cluster forms of the split layers).
#       --batch N (default 32; 0: none) also compiles the fixture with `compile --batch N`,
#       verifies it (every sample slot against the batch-1 reference), prints its per-kernel
#       profile, and times it in the throughput rounds against PyTorch's batch-N CUDA graph
#       (bench_cuda.py --batch-art, --inflight N).
#       --probe also compiles the fixture with --cuda-tune probe=1 and prints `bench --probe 5`'s
#       table (every call's blocks, SMs, entries and ends inside the replay; docs/CUDA.md), its CSV
#       into $OUT/probe.csv.
set -euo pipefail
# shellcheck source=bench/device_prologue.sh
source "$(dirname "$0")/device_prologue.sh"
V="$D/cuda_variants"
ARCH=compute_80  # the bundled artifacts' PTX (compile --cuda-arch): compute_80+ has the tensor-core 1x1s
# The generated variants: name, HxW, then make-model flags (seed 7).
VARIANTS="fp32_small 64x128 --widths 16,32,32,64 --depths 1,1,2,1 --hidden 64
fp16_small 64x128 --widths 16,32,32,64 --depths 1,1,2,1 --hidden 64 --fp16
fp16_deep 64x128 --widths 32,64,64,128 --depths 2,2,4,2 --hidden 128 --fp16
fp16_wide 128x256 --widths 64,16,16,16 --depths 1,1,1,1 --hidden 32 --heads 12,6 --fp16"
make_variants() {  # make_variants OPVISION DIR: the variants' ONNX into DIR
  while read -r name hw flags; do
    # shellcheck disable=SC2086
    "$1" make-model "$2/$name.onnx" --height "${hw%x*}" --width "${hw#*x}" $flags --seed 7 >/dev/null
  done <<<"$VARIANTS"
}
LIBS_RE="dnnl|protobuf|onnx|zip|bz2|crypto|gomp|OpenCL"  # what the GPU image lacks (device_opencl.sh's)
if [[ "${1:-}" == "--bundle" ]]; then
  shift
  B="$ROOT/build"
  BASE_BIN=""
  while [[ $# -gt 0 ]]; do
    case "$1" in
      --build) B="$(cd "$2" && pwd)"; shift 2 ;;
      --base-bin) BASE_BIN="$2"; shift 2 ;;
      *) echo "device_cuda.sh --bundle: unknown argument $1" >&2; exit 2 ;;
    esac
  done
  rm -rf "$D" && mkdir -p "$D/lib" "$D/shared/models" "$V"
  cp "$B/opvision" "$D/" && strip "$D/opvision"
  bins=("$B/opvision")
  if [[ -n "$BASE_BIN" ]]; then
    cp "$BASE_BIN" "$D/opvision_base" && strip "$D/opvision_base"
    bins+=("$BASE_BIN")
  fi
  for bin in "${bins[@]}"; do
    for l in $(ldd "$bin" | awk '{print $3}' | grep -E "$LIBS_RE"); do cp -L "$l" "$D/lib/"; done
  done
  (cd "$D" && tar cf - lib | xz -T2 -6 > lib.tar.xz && rm -rf lib)
  cp "$ROOT/../shared/models/"* "$D/shared/models/"
  # tinygrad's wheel for bench_cuda.py --tinygrad (pure Python, no dependencies; the GPU image has
  # no tinygrad and reaches no registry)
  python3 -m pip download -q --no-deps --only-binary=:all: -d "$D/wheels" tinygrad==0.14.0 ||
    echo "device_cuda.sh --bundle: no tinygrad wheel (pip download failed): bench_cuda.py --tinygrad will not run there" >&2
  bash "$ROOT/scripts/device_gtest.sh" --bundle "$B/test_cuda" "$B/test_backend"
  # The variants: their references here (onnxruntime), their ONNX made again there.
  make_variants "$B/opvision" "$V"
  for m in "$V"/*.onnx; do
    python3 - "$m" "${m%.onnx}_ref.npz" <<'PY'
import sys, numpy as np, onnxruntime as ort
sess = ort.InferenceSession(sys.argv[1], providers=["CPUExecutionProvider"])
rng = np.random.default_rng(3)
feeds = {i.name: rng.integers(0, 256, size=i.shape, dtype=np.uint8) for i in sess.get_inputs()}
outs = dict(zip([o.name for o in sess.get_outputs()], sess.run(None, feeds)))
np.savez(sys.argv[2], **feeds, **outs)
PY
  done
  (cd "$V" && sha256sum ./*.onnx > onnx.sha256 && rm -f ./*.onnx)
  # What the run tool carries: the working tree (tracked and untracked files git does not ignore)
  # and .devrun; at most 64 MiB together.
  tree=$(cd "$ROOT" && git ls-files -z -co --exclude-standard | xargs -0 -r stat -c %s 2>/dev/null | awk '{s += $1} END {print s + 0}')
  dev=$(du -sb "$D" | cut -f1)
  du -sh "$D"/* "$D"/gtest/* "$D"/shared/models/* | sed 's/^/  /'
  echo "carried: working tree $((tree >> 20)) MiB + .devrun $((dev >> 20)) MiB = $(((tree + dev) >> 20)) MiB (limit 64 MiB)"
  if ((tree + dev > 64 << 20)); then
    echo "device_cuda.sh --bundle: over the run tool's 64 MiB" >&2
    exit 1
  fi
  exit 0
fi
# shellcheck source=bench/device_env.sh
source "$ROOT/bench/device_env.sh"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader || true
BASE_LIST=()  # every --base-flags value, in order
BATCH=32
OPVB=""  # the base artifacts' compiler (--base-bin: the bundle's opvision_base)
PROBE=0
while [[ "${1:-}" == "--base-flags" || "${1:-}" == "--batch" || "${1:-}" == "--base-bin" || "${1:-}" == "--arch" ||
         "${1:-}" == "--probe" ]]; do
  if [[ "$1" == "--probe" ]]; then
    PROBE=1
    shift
    continue
  fi
  if [[ "$1" == "--base-bin" ]]; then
    OPVB="$D/opvision_base"
    [[ -x "$OPVB" ]] || { echo "--base-bin: the bundle has no opvision_base (device_cuda.sh --bundle --base-bin)" >&2; exit 2; }
    shift
    continue
  fi
  [[ "$1" == "--base-flags" ]] && BASE_LIST+=("$2")
  [[ "$1" == "--batch" ]] && BATCH="$2"
  [[ "$1" == "--arch" ]] && ARCH="$2"
  shift 2
done
BASE_FLAGS="${BASE_LIST[0]:-}"  # the first base's flags (the generated variants' base)
BASE=""
[[ -n "$BASE_FLAGS" || -n "$OPVB" ]] && BASE="${BASE_FLAGS:-no flags}${OPVB:+, compiled by opvision_base}"
OPVB="${OPVB:-$OPV}"
A=/tmp/opv/art  # artifacts compiled here
VM=/tmp/opv/variants  # the variants' ONNX, made again here (the bundle carries their references)
mkdir -p "$A" "$VM"
make_variants "$OPV" "$VM"
(cd "$VM" && sha256sum --quiet -c "$V/onnx.sha256") || { echo "the variants made here differ from the bundle's" >&2; exit 1; }
echo "== compile the fixture (--cuda-arch $ARCH${BASE:+; base: $BASE})"
"$OPV" compile "$M.onnx" -o "$A/fixture_fp16.opv" --target cuda --cuda-arch "$ARCH"
for m in "$VM"/*.onnx; do  # the generated variants (with a base: both ways, verified both ways)
  "$OPV" compile "$m" -o "$A/$(basename "$m" .onnx).opv" --target cuda --cuda-arch "$ARCH" >/dev/null
  if [[ -n "$BASE" ]]; then
    # shellcheck disable=SC2086
    "$OPVB" compile "$m" -o "$A/$(basename "$m" .onnx)_base.opv" --target cuda --cuda-arch "$ARCH" $BASE_FLAGS >/dev/null
  fi
done
BATCH_ARGS=()
if [[ "$BATCH" -gt 0 ]]; then
  echo "== compile the fixture at --batch $BATCH"
  "$OPV" compile "$M.onnx" -o "$A/fixture_fp16_b$BATCH.opv" --target cuda --cuda-arch "$ARCH" --batch "$BATCH"
  BATCH_ARGS=(--inflight "$BATCH" --batch-art "$A/fixture_fp16_b$BATCH.opv")
fi
BASE_ARGS=()
if [[ -n "$BASE" ]]; then
  # shellcheck disable=SC2086
  "$OPVB" compile "$M.onnx" -o "$A/fixture_fp16_base.opv" --target cuda --cuda-arch "$ARCH" $BASE_FLAGS
  BASE_ARGS=(--base-art "$A/fixture_fp16_base.opv")
  for ((i = 1; i < ${#BASE_LIST[@]}; ++i)); do  # the sweep's further bases
    echo "== compile base $i: ${BASE_LIST[$i]}"
    # shellcheck disable=SC2086
    "$OPVB" compile "$M.onnx" -o "$A/fixture_fp16_base$i.opv" --target cuda --cuda-arch "$ARCH" ${BASE_LIST[$i]} >/dev/null
    BASE_ARGS+=(--base-art "$A/fixture_fp16_base$i.opv")
  done
fi
echo "== gtests (cuda)"
bash "$ROOT/scripts/device_gtest.sh" --gtest_filter='*Cuda*' 2>&1 | grep -E "^\[  (PASSED|FAILED|SKIPPED) |^\[==|^== |Failure|error|rel_l2" | head -60 || true
echo "== verify --backend cuda"
for art in "$A"/*.opv; do
  n="$(basename "$art" .opv)"
  ref="$V/${n%_base}_ref.npz"
  [[ "$n" == fixture_fp16* ]] && ref="$M""_ref.npz"
  printf '%-14s ' "$n"
  "$OPV" verify "$art" --ref "$ref" --backend cuda || echo "  ^ FAILED ($n)"
done
echo "== load: stored SASS against the PTX JIT-compiled (CUDA_CACHE_DISABLE=1: every load compiles)"
for code in auto ptx auto ptx; do
  CUDA_CACHE_DISABLE=1 "$OPV" run "$A/fixture_fp16.opv" --backend cuda --cuda-code "$code" 2>&1 |
    grep -E "cuda code:|\] .* ms$" | sed "s/^/  $code: /" || true
done
printf '%-14s ' "fixture, ptx"
"$OPV" verify "$A/fixture_fp16.opv" --ref "$M""_ref.npz" --backend cuda --cuda-code ptx || echo "  ^ FAILED (--cuda-code ptx)"
if [[ -n "${OUT:-}" ]]; then  # the run tool's output folder: a Chrome trace of profiled runs
  "$OPV" bench "$A/fixture_fp16.opv" --backend cuda --iters 20 --trace "$OUT/cuda_trace.json" >/dev/null
fi
if command -v nvcc >/dev/null; then  # the floor of a chain of dependent steps (bench/cuda_floor.cu)
  echo "== cuda_floor (43 steps; 132 and 264 blocks a step)"
  nvcc -O2 -arch=sm_90 "$ROOT/bench/cuda_floor.cu" -o /tmp/opv/cuda_floor &&
    { timeout 120 /tmp/opv/cuda_floor 43 132; timeout 120 /tmp/opv/cuda_floor 43 264; } || echo "  cuda_floor FAILED"
fi
echo "== registers, stack, spills and shared memory of each kernel (ptxas's report, kept by the compile)"
"$OPV" inspect "$A/fixture_fp16.opv" | sed -n '/ptxas -v/,/spill registers/p'
if [[ -n "$BASE" ]]; then  # the base artifact's kernels (the --art's come with bench_cuda.py)
  echo "== base artifact: per-kernel profile"
  "$OPV" bench "$A/fixture_fp16_base.opv" --backend cuda --iters 50 | sed -n '/^per kernel/,$p' | head -24
fi
if [[ "$BATCH" -gt 0 ]]; then  # the batch artifact's kernels (profiled: CUDA events per call, no graph)
  echo "== batch-$BATCH artifact: per-kernel profile"
  "$OPV" bench "$A/fixture_fp16_b$BATCH.opv" --backend cuda --iters 50 | sed -n '/^per kernel/,$p' | head -24
fi
if [[ "$PROBE" == 1 ]]; then  # every block's clocks inside the replay (a measuring build, not timed)
  echo "== probe (--cuda-tune probe=1)"
  "$OPV" compile "$M.onnx" -o /tmp/opv/probe.opv --target cuda --cuda-arch "$ARCH" --cuda-tune probe=1 >/dev/null
  "$OPV" bench /tmp/opv/probe.opv --backend cuda --staged-inputs --iters 50 --probe 5 \
    ${OUT:+--probe-csv "$OUT/probe.csv"} | sed -n '/^probe:/,/^$/p'
fi
echo "== bench ($ARCH build)"
python3 "$ROOT/bench/bench_cuda.py" --opvision "$OPV" --art "$A/fixture_fp16.opv" "${BASE_ARGS[@]}" \
  "${BATCH_ARGS[@]}" ${OUT:+--json "$OUT/bench.json"} "$@"
