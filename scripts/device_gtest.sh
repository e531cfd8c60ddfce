#!/usr/bin/env bash
# Runs C++ test binaries on the lent GPU machine (which has the CUDA driver but none of our build
# dependencies), from a bundle made here:
#   bash scripts/device_gtest.sh --bundle BUILD/test_backend [more binaries]
#       makes .devrun/gtest/: the binaries and the shared libraries they need that the GPU image
#       lacks (the same selection as bench/device_opencl.sh, plus gtest), xz-compressed
#   bash scripts/device_gtest.sh [gtest args]     (on the GPU machine; the run tool carries .devrun)
#       runs each bundled test_* binary with the args (other binaries ride along, in /tmp/opv_gtest/bin), e.g. --gtest_filter='*Cuda*'
set -euo pipefail
if [[ "${1:-}" == "-h" || "${1:-}" == "--help" ]]; then
  sed -n '2,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'
  exit 0
fi
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
D="$ROOT/.devrun/gtest"
if [[ "${1:-}" == "--bundle" ]]; then
  shift
  rm -rf "$D" && mkdir -p "$D/bin" "$D/lib"
  for bin in "$@"; do
    cp "$bin" "$D/bin/"
    for l in $(ldd "$bin" | awk '{print $3}' | grep -E "dnnl|protobuf|onnx|zip|bz2|crypto|gomp|OpenCL|gtest|gmock"); do
      cp -L "$l" "$D/lib/"
    done
  done
  (cd "$D" && tar cf - bin lib | xz -T2 -6 > bundle.tar.xz && rm -rf bin lib)
  du -sh "$D"
  exit 0
fi
W=/tmp/opv_gtest
mkdir -p "$W" && tar xJf "$D/bundle.tar.xz" -C "$W"
export LD_LIBRARY_PATH="$W/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader || true
rc=0
for bin in "$W"/bin/test_*; do
  echo "== $(basename "$bin") $*"
  (cd "$ROOT" && "$bin" "$@") || rc=$?
done
exit $rc
