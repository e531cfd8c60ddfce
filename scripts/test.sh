#!/usr/bin/env bash
# Runs the whole test suite (C++ unit tests + Python end-to-end tests against onnxruntime).
#   scripts/test.sh              Release build in ./build, all tests but the opt-in label slow
#                                (ctest --test-dir build -L slow: the batch device tests on the PTX simulator)
#   scripts/test.sh --sanitize   the sanitizer build in ./build-san (clang, ASan+UBSan; shared
#                                with scripts/fuzz.sh: scripts/sanitizer_build.sh), C++ unit tests only
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "${1:-}" = "--sanitize" ]; then
  # shellcheck source=scripts/sanitizer_build.sh
  source scripts/sanitizer_build.sh
  san_configure "test.sh --sanitize"
  cmake --build "$SAN_DIR" -j"$(nproc)"
  # intercept_tls_get_addr=0: the sanitizer runtimes before GCC 14 / LLVM 17 take a dynamic TLS
  # block that happens to start 16 bytes into a page (PoCL's, dlopen'd) for a pre-2.25 glibc
  # header, and LeakSanitizer's tracer then faults at exit ("Tracer caught signal 11"), failing a
  # test that passed.
  export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1:intercept_tls_get_addr=0
  export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
  # Four whole-model tests run in the Release build only: with ASan, UBSan and the fuzzers'
  # coverage instrumentation they took ~10 of the run's ~19 CPU-minutes (the IR3 passes over all 77
  # real kernels, the fixture per sample on the reference and cpu backends, the cuda batch-3
  # variants, the graph passes on the fixture; the rest: ~4.5 CPU-minutes, 2.4 min on CI's two
  # cores); smaller tests of the same code run here.
  ctest --test-dir "$SAN_DIR" -L unit --output-on-failure -j"$(nproc)" \
    -E '^(Ir3Passes\.RealKernelsValidateAndWrongRewritesAreCaught|BatchCompile\.FixturePerSampleOnReferenceAndCpu|CudaBatch\.VariantsCompileAtBatch3|GraphPassesFixture\.OptimisedGraphComputesTheSame)$'
else
  cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null
  cmake --build build -j"$(nproc)"
  ctest --test-dir build -LE slow --output-on-failure -j"$(nproc)"
fi
