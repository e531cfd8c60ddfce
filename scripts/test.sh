#!/usr/bin/env bash
# Runs the whole test suite (C++ unit tests + Python end-to-end tests against onnxruntime).
#   scripts/test.sh              Release build in ./build, all tests but the opt-in label slow
#                                (ctest --test-dir build -L slow: the batch device tests on the PTX simulator)
#   scripts/test.sh --sanitize   ASan+UBSan build in ./build-asan, C++ unit tests only
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "${1:-}" = "--sanitize" ]; then
  # -O1 -g1 (line tables: stack traces still name file and line): builds in ~40% of -O2 -g's time.
  cmake -S . -B build-asan -DCMAKE_BUILD_TYPE=RelWithDebInfo -DOPV_SANITIZE=ON \
    -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g1 -DNDEBUG" -DCMAKE_C_FLAGS_RELWITHDEBINFO="-O1 -g1 -DNDEBUG" >/dev/null
  cmake --build build-asan -j"$(nproc)"
  # intercept_tls_get_addr=0: GCC 12's sanitizer runtime takes a dynamic TLS block that happens to
  # start 16 bytes into a page (PoCL's, dlopen'd) for a pre-2.25 glibc header, and LeakSanitizer's
  # tracer then faults at exit ("Tracer caught signal 11"), failing a test that passed (fixed
  # upstream in GCC 14 / LLVM 17).
  export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1:intercept_tls_get_addr=0
  export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
  ctest --test-dir build-asan -L unit --output-on-failure -j"$(nproc)"
else
  cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null
  cmake --build build -j"$(nproc)"
  ctest --test-dir build -LE slow --output-on-failure -j"$(nproc)"
fi
