#!/usr/bin/env bash
# Builds the libFuzzer harnesses (tests/fuzz, clang, ASan+UBSan) in ./build-fuzz and runs each
# target for SECONDS (default 3600) one after another.
#   scripts/fuzz.sh [SECONDS] [TARGET...]     targets: onnx opv npy ir3 container capture pm4 ptx
# New corpus entries go to build-fuzz/corpus/<target>/ (scratch, kept between runs; the committed
# seeds in tests/fuzz/corpus/<target>/ are only read). Any crash, sanitizer report, leak, timeout
# (> OPV_FUZZ_TIMEOUT s for one input, default 25) or out-of-memory (> 2 GB) is a finding: its
# input is saved under tests/fuzz/repro/<target>/ and the script exits 1 after the other targets.
# Environment: OPV_FUZZ_JOBS (build parallelism, default 2), OPV_FUZZ_TIMEOUT, OPV_FUZZ_SEED
# (libFuzzer's -seed; 0, the default, picks a new one each run), OPV_FUZZ_RUNS (a budget of
# executions per target instead of time, e.g. "onnx=200000,ir3=1500": with a fixed seed the run
# is deterministic, so CI's result can be reproduced exactly; targets not listed run SECONDS).
set -euo pipefail
cd "$(dirname "$0")/.."
SECS=${1:-3600}
shift || true
ALL=(onnx opv npy ir3 container capture pm4 ptx)
TARGETS=("$@")
[ ${#TARGETS[@]} -eq 0 ] && TARGETS=("${ALL[@]}")
for t in "${TARGETS[@]}"; do
  [[ " ${ALL[*]} " == *" $t "* ]] || { echo "fuzz: unknown target '$t' (targets: ${ALL[*]})" >&2; exit 2; }
done

command -v clang++ >/dev/null || { echo "fuzz: clang++ not found (scripts/setup.sh installs it)" >&2; exit 2; }
cmake -S . -B build-fuzz -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g1 -DNDEBUG" \
  -DCMAKE_C_FLAGS_RELWITHDEBINFO="-O1 -g1 -DNDEBUG" -DOPV_FUZZ=ON -DOPV_BUILD_TESTS=OFF >/dev/null
cmake --build build-fuzz -j"${OPV_FUZZ_JOBS:-2}" --target fuzzers

# intercept_tls_get_addr=0: see scripts/test.sh (LeakSanitizer's tracer and dynamic TLS, clang < 17)
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:allocator_may_return_null=0:intercept_tls_get_addr=0}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
export OMP_NUM_THREADS=1
failed=()
summary=""
for t in "${TARGETS[@]}"; do
  scratch=build-fuzz/corpus/$t
  art=build-fuzz/artifacts/$t
  log=build-fuzz/fuzz-$t.log
  mkdir -p "$scratch" "$art"
  rm -f "$art"/*
  echo "fuzz: $t for ${SECS}s (log $log)"
  rc=0
  budget=(-max_total_time="$SECS")
  runs="${OPV_FUZZ_RUNS:-}"
  for kv in ${runs//,/ }; do
    [ "${kv%%=*}" = "$t" ] && budget=(-runs="${kv#*=}")
  done
  build-fuzz/tests/fuzz/fuzz_"$t" "${budget[@]}" -timeout="${OPV_FUZZ_TIMEOUT:-25}" -seed="${OPV_FUZZ_SEED:-0}" \
    -rss_limit_mb=2048 -print_final_stats=1 -artifact_prefix="$art/" \
    "$scratch" tests/fuzz/corpus/"$t" >"$log" 2>&1 || rc=$?
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  cov=$(grep -o 'cov: [0-9]*' "$log" | tail -1 || true)
  shopt -s nullglob
  found=("$art"/*)
  shopt -u nullglob
  if [ "$rc" -ne 0 ] || [ ${#found[@]} -gt 0 ]; then
    mkdir -p tests/fuzz/repro/"$t"
    for f in "${found[@]}"; do cp "$f" tests/fuzz/repro/"$t"/; done
    failed+=("$t")
    echo "fuzz: $t: FINDING (exit $rc); reproducers: ${found[*]:-none} -> tests/fuzz/repro/$t/" >&2
    grep -E 'ERROR|SUMMARY|runtime error|invariant broken|deadly signal|timeout|out-of-memory' "$log" | head -5 >&2 || true
  fi
  summary+=$(printf '%-10s %12s executions  %s  %s' "$t" "${execs:-?}" "${cov:-}" "$([ "$rc" -eq 0 ] && echo ok || echo FAILED)")$'\n'
done
echo "fuzz: ${SECS}s per target${OPV_FUZZ_RUNS:+ (execution budgets: $OPV_FUZZ_RUNS)}"
printf '%s' "$summary"
if [ ${#failed[@]} -gt 0 ]; then
  echo "fuzz: findings in: ${failed[*]}" >&2
  exit 1
fi
