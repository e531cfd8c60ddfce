#!/usr/bin/env bash
# The cuda target on the lent GPU machine (issue 15; see BENCHMARKS.md "CUDA"). Two halves:
#   bash bench/device_cuda.sh --bundle
#       here, after building ./build: compiles the fp16 fixture and generated variants (make-model
#       widths/depths/heads, fp32 and fp16) for --target cuda ahead of time (PTX; the GPU machine
#       needs no NVRTC for them), writes their onnxruntime references, and bundles opvision, the
#       cuda test binaries and the libraries they need into .devrun/ (with bench/device_opencl.sh's
#       and scripts/device_gtest.sh's bundles).
#   bash bench/device_cuda.sh [bench_cuda.py args]
#       on the GPU machine (the run tool carries .devrun): the cuda gtests, `opvision verify
#       --backend cuda` on every bundled artifact, then bench/bench_cuda.py against PyTorch (latency,
#       throughput with --inflight N frames in flight, torch.compile bounded by --compile-timeout S).
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
D="$ROOT/.devrun"
V="$D/cuda_variants"
ARCH=compute_80  # the bundled artifacts' PTX (compile --cuda-arch): compute_80+ has the tensor-core 1x1s
if [[ "${1:-}" == "--bundle" ]]; then
  bash "$ROOT/bench/device_opencl.sh" --bundle
  bash "$ROOT/scripts/device_gtest.sh" --bundle "$ROOT/build/test_cuda" "$ROOT/build/test_backend"
  strip "$D/opvision"  # the run tool carries at most 64 MiB
  mkdir -p "$V"
  OPV="$ROOT/build/opvision"
  # (A second build of the fixture, for a before/after in one run, does not fit the run tool's
  # 64 MiB next to this one.)
  "$OPV" compile "$ROOT/../shared/models/opvision_t12_fp16.onnx" -o "$V/fixture_fp16.opv" --target cuda \
    --cuda-arch "$ARCH"
  # The fixture's ONNX stays behind (the carry limit): the artifacts are compiled, the PyTorch peer
  # rebuilds the network with make_fixtures.py.
  rm -f "$D/shared/models/opvision_t12_fp16.onnx"
  # Generated variants: name, then make-model flags.
  while read -r name flags; do
    "$OPV" make-model "$V/$name.onnx" --height 64 --width 128 $flags --seed 7 >/dev/null
    python3 - "$V/$name.onnx" "$V/${name}_ref.npz" <<'PY'
import sys, numpy as np, onnxruntime as ort
sess = ort.InferenceSession(sys.argv[1], providers=["CPUExecutionProvider"])
rng = np.random.default_rng(3)
feeds = {i.name: rng.integers(0, 256, size=i.shape, dtype=np.uint8) for i in sess.get_inputs()}
outs = dict(zip([o.name for o in sess.get_outputs()], sess.run(None, feeds)))
np.savez(sys.argv[2], **feeds, **outs)
PY
    "$OPV" compile "$V/$name.onnx" -o "$V/$name.opv" --target cuda --cuda-arch "$ARCH" >/dev/null
    rm "$V/$name.onnx"
  done <<'LIST'
fp32_small --widths 16,32,32,64 --depths 1,1,2,1 --hidden 64
fp16_small --widths 16,32,32,64 --depths 1,1,2,1 --hidden 64 --fp16
fp16_deep --widths 32,64,64,128 --depths 2,2,4,2 --hidden 128 --fp16
LIST
  du -sh "$V"
  exit 0
fi
# shellcheck source=bench/device_env.sh
source "$ROOT/bench/device_env.sh"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader || true
echo "== gtests (cuda)"
bash "$ROOT/scripts/device_gtest.sh" --gtest_filter='*Cuda*' 2>&1 | grep -E "^\[  (PASSED|FAILED|SKIPPED) |^\[==|^== |Failure|error|rel_l2" | head -60 || true
echo "== verify --backend cuda"
for art in "$V"/*.opv; do
  n="$(basename "$art" .opv)"
  ref="$V/${n}_ref.npz"
  [[ "$n" == fixture_fp16 ]] && ref="$M""_ref.npz"
  printf '%-14s ' "$n"
  "$OPV" verify "$art" --ref "$ref" --backend cuda || echo "  ^ FAILED ($n)"
done
if [[ -n "${OUT:-}" ]]; then  # the run tool's output folder: a Chrome trace of profiled runs
  "$OPV" bench "$V/fixture_fp16.opv" --backend cuda --iters 20 --trace "$OUT/cuda_trace.json" >/dev/null
fi
if command -v nvcc >/dev/null; then  # registers/spills of the fused kernels (the CUDA C++ the PTX came from)
  for k in ffn_64 ffn_128 ffn_256; do
    "$OPV" inspect "$V/fixture_fp16.opv" --source "$k" 2>/dev/null | sed -n '/^\/\/ generated/,$p' > "/tmp/opv_$k.cu" || true
    [[ -s "/tmp/opv_$k.cu" ]] && timeout 60 nvcc -arch=sm_90 -Xptxas -v -c "/tmp/opv_$k.cu" -o /dev/null 2>&1 \
      | grep -E "registers|spill" | head -2 | sed "s/^/$k: /" || true
  done
fi
echo "== bench ($ARCH build)"
python3 "$ROOT/bench/bench_cuda.py" --opvision "$OPV" --art "$V/fixture_fp16.opv" ${OUT:+--json "$OUT/bench.json"} "$@"
