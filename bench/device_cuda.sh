#!/usr/bin/env bash
# The cuda target on the lent GPU machine (issue 15; see BENCHMARKS.md "CUDA"). Two halves:
#   bash bench/device_cuda.sh --bundle [--build DIR]
#       here, after building ./build (or DIR): compiles the fp16 fixture and generated variants (make-model
#       widths/depths/heads, fp32 and fp16; fp16_wide's stage 0 has enough pixel tiles for the
#       ConvFFN's depthwise conv inside its launch) as ONNX, writes their onnxruntime references, and bundles opvision, the
#       cuda test binaries and the libraries they need into .devrun/ (with bench/device_opencl.sh's
#       and scripts/device_gtest.sh's bundles).
#   bash bench/device_cuda.sh [--base-flags "COMPILE FLAGS"] [--batch N] [bench_cuda.py args]
#       on the GPU machine (the run tool carries .devrun): compiles the fixture there (NVRTC of the
#       machine's CUDA; the bundle carries the ONNX, not a 21 MB artifact), the cuda gtests,
#       `opvision verify --backend cuda` on every artifact, then bench/bench_cuda.py against PyTorch
#       (latency, throughput with --inflight N frames in flight, torch.compile bounded by
#       --compile-timeout S). --base-flags compiles a second fixture artifact with these extra
#       compile flags (e.g. "--cuda-ffn off") and times it in the same rounds (a before/after).
#       --batch N (default 32; 0: none) also compiles the fixture with `compile --batch N`,
#       verifies it (every sample slot against the batch-1 reference), prints its per-kernel
#       profile, and times it in the throughput rounds against PyTorch's batch-N CUDA graph
#       (bench_cuda.py --batch-art, --inflight N).
set -euo pipefail
if [[ "${1:-}" == "-h" || "${1:-}" == "--help" ]]; then
  sed -n '2,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'
  exit 0
fi
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
D="$ROOT/.devrun"
V="$D/cuda_variants"
ARCH=compute_80  # the bundled artifacts' PTX (compile --cuda-arch): compute_80+ has the tensor-core 1x1s
if [[ "${1:-}" == "--bundle" ]]; then
  B="$ROOT/build"
  [[ "${2:-}" == "--build" ]] && B="$(cd "$3" && pwd)"
  if [[ "$B" == "$ROOT/build" ]]; then
    bash "$ROOT/bench/device_opencl.sh" --bundle
  else  # device_opencl.sh --bundle's steps with another build folder
    rm -rf "$D" && mkdir -p "$D/lib" "$D/shared/models"
    cp "$B/opvision" "$D/"
    for l in $(ldd "$B/opvision" | awk '{print $3}' | grep -E "dnnl|protobuf|onnx|zip|bz2|crypto|gomp|OpenCL"); do
      cp -L "$l" "$D/lib/"
    done
    (cd "$D" && tar cf - lib | xz -T2 -6 > lib.tar.xz && rm -rf lib)
    cp "$ROOT/../shared/models/"* "$D/shared/models/"
  fi
  bash "$ROOT/scripts/device_gtest.sh" --bundle "$B/test_cuda" "$B/test_backend"
  strip "$D/opvision"  # the run tool carries at most 64 MiB
  mkdir -p "$V"
  OPV="$B/opvision"
  # The fixture travels as its ONNX and is compiled on the GPU machine (an artifact is as large as
  # the ONNX, and two of them, for a before/after, would not fit the run tool's 64 MiB).
  rm -f "$V"/*.opv  # the variants travel as ONNX too (their PTX is most of an artifact) and are compiled there
  # Generated variants: name, then make-model flags.
  while read -r name hw flags; do
    "$OPV" make-model "$V/$name.onnx" --height "${hw%x*}" --width "${hw#*x}" $flags --seed 7 >/dev/null
    python3 - "$V/$name.onnx" "$V/${name}_ref.npz" <<'PY'
import sys, numpy as np, onnxruntime as ort
sess = ort.InferenceSession(sys.argv[1], providers=["CPUExecutionProvider"])
rng = np.random.default_rng(3)
feeds = {i.name: rng.integers(0, 256, size=i.shape, dtype=np.uint8) for i in sess.get_inputs()}
outs = dict(zip([o.name for o in sess.get_outputs()], sess.run(None, feeds)))
np.savez(sys.argv[2], **feeds, **outs)
PY
  done <<'LIST'
fp32_small 64x128 --widths 16,32,32,64 --depths 1,1,2,1 --hidden 64
fp16_small 64x128 --widths 16,32,32,64 --depths 1,1,2,1 --hidden 64 --fp16
fp16_deep 64x128 --widths 32,64,64,128 --depths 2,2,4,2 --hidden 128 --fp16
fp16_wide 128x256 --widths 64,16,16,16 --depths 1,1,1,1 --hidden 32 --heads 12,6 --fp16
LIST
  du -sh "$V"
  exit 0
fi
# shellcheck source=bench/device_env.sh
source "$ROOT/bench/device_env.sh"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader || true
BASE_FLAGS=""
BATCH=32
while [[ "${1:-}" == "--base-flags" || "${1:-}" == "--batch" ]]; do
  [[ "$1" == "--base-flags" ]] && BASE_FLAGS="$2"
  [[ "$1" == "--batch" ]] && BATCH="$2"
  shift 2
done
A=/tmp/opv/art  # artifacts compiled here
mkdir -p "$A"
echo "== compile the fixture (--cuda-arch $ARCH${BASE_FLAGS:+; base: $BASE_FLAGS})"
"$OPV" compile "$M.onnx" -o "$A/fixture_fp16.opv" --target cuda --cuda-arch "$ARCH"
for m in "$V"/*.onnx; do  # the generated variants (with --base-flags: both ways, verified both ways)
  "$OPV" compile "$m" -o "$A/$(basename "$m" .onnx).opv" --target cuda --cuda-arch "$ARCH" >/dev/null
  if [[ -n "$BASE_FLAGS" ]]; then
    # shellcheck disable=SC2086
    "$OPV" compile "$m" -o "$A/$(basename "$m" .onnx)_base.opv" --target cuda --cuda-arch "$ARCH" $BASE_FLAGS >/dev/null
  fi
done
BATCH_ARGS=()
if [[ "$BATCH" -gt 0 ]]; then
  echo "== compile the fixture at --batch $BATCH"
  "$OPV" compile "$M.onnx" -o "$A/fixture_fp16_b$BATCH.opv" --target cuda --cuda-arch "$ARCH" --batch "$BATCH"
  BATCH_ARGS=(--inflight "$BATCH" --batch-art "$A/fixture_fp16_b$BATCH.opv")
fi
BASE_ARGS=()
if [[ -n "$BASE_FLAGS" ]]; then
  # shellcheck disable=SC2086
  "$OPV" compile "$M.onnx" -o "$A/fixture_fp16_base.opv" --target cuda --cuda-arch "$ARCH" $BASE_FLAGS
  BASE_ARGS=(--base-art "$A/fixture_fp16_base.opv")
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
if [[ -n "${OUT:-}" ]]; then  # the run tool's output folder: a Chrome trace of profiled runs
  "$OPV" bench "$A/fixture_fp16.opv" --backend cuda --iters 20 --trace "$OUT/cuda_trace.json" >/dev/null
fi
if command -v nvcc >/dev/null; then  # registers/spills of the fused kernels (the CUDA C++ the PTX came from)
  for k in ffn_64 ffn_128 ffn_256; do
    "$OPV" inspect "$A/fixture_fp16.opv" --source "$k" 2>/dev/null | sed -n '/^\/\/ generated/,$p' > "/tmp/opv_$k.cu" || true
    [[ -s "/tmp/opv_$k.cu" ]] && timeout 60 nvcc -arch=sm_90 -Xptxas -v -c "/tmp/opv_$k.cu" -o /dev/null 2>&1 \
      | grep -E "registers|spill" | head -2 | sed "s/^/$k: /" || true
  done
fi
if [[ "$BATCH" -gt 0 ]]; then  # the batch artifact's kernels (profiled: CUDA events per call, no graph)
  echo "== batch-$BATCH artifact: per-kernel profile"
  "$OPV" bench "$A/fixture_fp16_b$BATCH.opv" --backend cuda --iters 50 | sed -n '/^per kernel/,$p' | head -24
fi
echo "== bench ($ARCH build)"
python3 "$ROOT/bench/bench_cuda.py" --opvision "$OPV" --art "$A/fixture_fp16.opv" "${BASE_ARGS[@]}" \
  "${BATCH_ARGS[@]}" ${OUT:+--json "$OUT/bench.json"} "$@"
