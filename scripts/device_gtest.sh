#!/usr/bin/env bash
# Runs C++ test binaries on the lent GPU machine (which has the CUDA driver but none of our build
# dependencies), from a bundle made here:
#   bash scripts/device_gtest.sh --bundle BUILD/test_backend [more binaries]
#       makes .devrun/gtest/: the binaries, stripped, and the shared libraries they need that the
#       GPU image lacks (the same selection as bench/device_opencl.sh, plus gtest/gmock where
#       linked shared, and libopv_cudasim.so, which test_cuda links for its simulator cases) except those .devrun/lib.tar.xz already carries (make that bundle first:
#       bench/device_opencl.sh or bench/device_cuda.sh --bundle), xz-compressed
#   bash scripts/device_gtest.sh [gtest args]     (on the GPU machine; the run tool carries .devrun)
#       runs each bundled test_* binary with the args (other binaries ride along, in /tmp/opv_gtest/bin), e.g. --gtest_filter='*Cuda*';
#       the libraries come from the bundle and .devrun/lib.tar.xz
set -euo pipefail
# shellcheck source=bench/device_prologue.sh
source "$(dirname "$0")/../bench/device_prologue.sh"
D="$ROOT/.devrun/gtest"
if [[ "${1:-}" == "--bundle" ]]; then
  shift
  rm -rf "$D" && mkdir -p "$D/bin" "$D/lib"
  have=""  # libraries .devrun/lib.tar.xz carries already (the run tool carries at most 64 MiB)
  [[ -f "$ROOT/.devrun/lib.tar.xz" ]] && have="$(tar tJf "$ROOT/.devrun/lib.tar.xz" | xargs -r -n1 basename)"
  for bin in "$@"; do
    cp "$bin" "$D/bin/"
    strip "$D/bin/$(basename "$bin")"  # symbols only: the tests run the same
    for l in $(ldd "$bin" | awk '{print $3}' | grep -E "dnnl|protobuf|onnx|zip|bz2|crypto|gomp|OpenCL|gtest|gmock|opv_cudasim"); do
      grep -qxF "$(basename "$l")" <<<"$have" || cp -L "$l" "$D/lib/"
    done
  done
  (cd "$D" && tar cf - bin lib | xz -T2 -6 > bundle.tar.xz && rm -rf bin lib)
  du -sh "$D"
  exit 0
fi
W=/tmp/opv_gtest
mkdir -p "$W" && tar xJf "$D/bundle.tar.xz" -C "$W"
[[ -f "$ROOT/.devrun/lib.tar.xz" ]] && tar xJf "$ROOT/.devrun/lib.tar.xz" -C "$W"  # lib/: what the bundle left out
export LD_LIBRARY_PATH="$W/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader || true
rc=0
for bin in "$W"/bin/test_*; do
  echo "== $(basename "$bin") $*"
  (cd "$ROOT" && "$bin" "$@") || rc=$?
done
exit $rc
