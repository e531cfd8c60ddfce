#!/usr/bin/env bash
# Runs the OpenCL checks and benchmark on the lent GPU machine (see BENCHMARKS.md), from a bundle
# made on the build machine by `bash bench/device_opencl.sh --bundle` (opvision + the shared
# libraries it needs that the GPU image lacks + the shared fixtures, in .devrun/).
#   --bundle            make .devrun/ here (after building ./build/opvision)
#   (no argument)       on the GPU machine: register NVIDIA's OpenCL ICD, verify the fixture on
#                       NVIDIA's OpenCL, run bench/bench_opencl.py (extra args go to it)
set -euo pipefail
# shellcheck source=bench/device_prologue.sh
source "$(dirname "$0")/device_prologue.sh"
if [[ "${1:-}" == "--bundle" ]]; then
  rm -rf "$D" && mkdir -p "$D/lib" "$D/shared/models"
  cp "$ROOT/build/opvision" "$D/"
  for l in $(ldd "$ROOT/build/opvision" | awk '{print $3}' | grep -E "dnnl|protobuf|onnx|zip|bz2|crypto|gomp|OpenCL"); do
    cp -L "$l" "$D/lib/"
  done
  (cd "$D" && tar cf - lib | xz -T2 -6 > lib.tar.xz && rm -rf lib)
  cp "$ROOT/../shared/models/"* "$D/shared/models/"
  du -sh "$D"
  exit 0
fi
# shellcheck source=bench/device_env.sh
source "$ROOT/bench/device_env.sh"
"$OPV" devices
echo "== verify on NVIDIA OpenCL"
"$OPV" verify "$M.onnx" --ref "${M}_ref.npz" --backend opencl --device nvidia
echo "== bench"
python3 "$ROOT/bench/bench_opencl.py" --opvision "$OPV" --device nvidia "$@"
