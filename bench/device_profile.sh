#!/usr/bin/env bash
# On the GPU machine, from the .devrun bundle (bench/device_opencl.sh --bundle): compiles the fixture
# for opencl with each plan-meta variant given, prints opvision's per-kernel table for each, and the
# PyTorch peer's per-kernel profile. Artifacts' outputs go to $OUT when set.
#   bench/device_profile.sh [COMPILE-ARGS ...]   e.g. "--cl-busy-items 65536"
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
D="$ROOT/.devrun"
# shellcheck source=bench/device_env.sh
source "$ROOT/bench/device_env.sh"
i=0
for variant in "$@"; do
  i=$((i + 1))
  echo "== variant $i: $variant"
  # shellcheck disable=SC2086
  "$OPV" compile "$M.onnx" -o /tmp/v$i.opv --target opencl $variant
  "$OPV" verify /tmp/v$i.opv --ref "${M}_ref.npz" --backend opencl --device nvidia || true
  "$OPV" bench /tmp/v$i.opv --backend opencl --device nvidia --warmup 50 --iters 300
done
echo "== PyTorch peer"
python3 "$ROOT/bench/torch_profile.py" || true
