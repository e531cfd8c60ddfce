# Sourced by scripts/test.sh --sanitize and scripts/fuzz.sh: the one sanitizer build both use.
# clang with ASan+UBSan and libFuzzer's coverage instrumentation (OPV_SANITIZE=ON OPV_FUZZ=ON) in
# ./build-san, so the C++ unit tests (ctest -L unit) and the libFuzzer harnesses (target fuzzers)
# share their objects: CI compiles the project twice (Release, this), not three times.
# -O1 -g1 (line tables: stack traces still name file and line): builds in ~40% of -O2 -g's time.
SAN_DIR=build-san
san_configure() {  # san_configure WHO: configure ./build-san (WHO names the caller in errors)
  command -v clang++ >/dev/null || { echo "$1: clang++ not found (scripts/setup.sh installs it)" >&2; exit 2; }
  cmake -S . -B "$SAN_DIR" -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ \
    -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g1 -DNDEBUG" \
    -DCMAKE_C_FLAGS_RELWITHDEBINFO="-O1 -g1 -DNDEBUG" -DOPV_SANITIZE=ON -DOPV_FUZZ=ON >/dev/null
}
