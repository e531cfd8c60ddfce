#!/usr/bin/env bash
# Runs the whole test suite (C++ unit tests + Python end-to-end tests against onnxruntime).
#   scripts/test.sh              Release build in ./build, all tests but the opt-in label slow
#                                (ctest --test-dir build -L slow: the batch device tests on the PTX simulator)
#   scripts/test.sh --sanitize   ASan+UBSan build in ./build-asan, C++ unit tests only
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "${1:-}" = "--sanitize" ]; then
  cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=RelWithDebInfo -DOPV_SANITIZE=ON >/dev/null
  cmake --build build-asan -j"$(nproc)"
  export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
  ctest --test-dir build-asan -L unit --output-on-failure -j"$(nproc)"
else
  cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null
  cmake --build build -j"$(nproc)"
  ctest --test-dir build -LE slow --output-on-failure -j"$(nproc)"
fi
