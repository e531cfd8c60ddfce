#!/usr/bin/env bash
# Builds the libFuzzer harnesses (tests/fuzz, clang, ASan+UBSan) in ./build-san, the sanitizer
# build scripts/test.sh --sanitize shares (scripts/sanitizer_build.sh), and runs each target for
# SECONDS (default 3600), OPV_FUZZ_PARALLEL targets at a time (default 1: one after another).
#   scripts/fuzz.sh [SECONDS] [TARGET...]     targets: onnx opv npy ir3 container capture pm4 ptx cubin
# New corpus entries go to build-san/corpus/<target>/ (scratch, kept between runs; the committed
# seeds in tests/fuzz/corpus/<target>/ are only read). Any crash, sanitizer report, leak, timeout
# (> OPV_FUZZ_TIMEOUT s for one input, default 25) or out-of-memory (> 2 GB) is a finding: its
# input is saved under tests/fuzz/repro/<target>/ and the script exits 1 after the other targets.
# Environment: OPV_FUZZ_JOBS (build parallelism, default 2), OPV_FUZZ_PARALLEL (targets run at
# once, default 1), OPV_FUZZ_TIMEOUT, OPV_FUZZ_SEED (libFuzzer's -seed; 0, the default, picks a
# new one each run), OPV_FUZZ_RUNS (a budget of executions per target instead of time, e.g.
# "onnx=200000,ir3=1500": with a fixed seed each target's run is deterministic, however many run
# at once, so CI's result can be reproduced exactly; targets not listed run SECONDS).
set -euo pipefail
cd "$(dirname "$0")/.."
SECS=${1:-3600}
shift || true
ALL=(onnx opv npy ir3 container capture pm4 ptx cubin)
TARGETS=("$@")
[ ${#TARGETS[@]} -eq 0 ] && TARGETS=("${ALL[@]}")
for t in "${TARGETS[@]}"; do
  [[ " ${ALL[*]} " == *" $t "* ]] || { echo "fuzz: unknown target '$t' (targets: ${ALL[*]})" >&2; exit 2; }
done

par=${OPV_FUZZ_PARALLEL:-1}
[[ "$par" =~ ^[1-9][0-9]*$ ]] || { echo "fuzz: OPV_FUZZ_PARALLEL must be a positive integer, got '$par'" >&2; exit 2; }

# shellcheck source=scripts/sanitizer_build.sh
source scripts/sanitizer_build.sh
san_configure fuzz
cmake --build "$SAN_DIR" -j"${OPV_FUZZ_JOBS:-2}" --target fuzzers

# intercept_tls_get_addr=0: see scripts/test.sh (LeakSanitizer's tracer and dynamic TLS, clang < 17)
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:allocator_may_return_null=0:intercept_tls_get_addr=0}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
export OMP_NUM_THREADS=1
run_target() {  # run_target T: one target's run; its summary line into $SAN_DIR/fuzz-T.summary
  local t=$1 scratch=$SAN_DIR/corpus/$1 art=$SAN_DIR/artifacts/$1 log=$SAN_DIR/fuzz-$1.log rc=0
  mkdir -p "$scratch" "$art"
  rm -f "$art"/*
  echo "fuzz: $t for ${SECS}s (log $log)"
  local budget=(-max_total_time="$SECS") runs="${OPV_FUZZ_RUNS:-}" kv
  for kv in ${runs//,/ }; do
    [ "${kv%%=*}" = "$t" ] && budget=(-runs="${kv#*=}")
  done
  "$SAN_DIR"/tests/fuzz/fuzz_"$t" "${budget[@]}" -timeout="${OPV_FUZZ_TIMEOUT:-25}" -seed="${OPV_FUZZ_SEED:-0}" \
    -rss_limit_mb=2048 -print_final_stats=1 -artifact_prefix="$art/" \
    "$scratch" tests/fuzz/corpus/"$t" >"$log" 2>&1 || rc=$?
  local execs cov found
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  cov=$(grep -o 'cov: [0-9]*' "$log" | tail -1 || true)
  shopt -s nullglob
  found=("$art"/*)
  shopt -u nullglob
  if [ "$rc" -ne 0 ] || [ ${#found[@]} -gt 0 ]; then
    mkdir -p tests/fuzz/repro/"$t"
    for f in "${found[@]}"; do cp "$f" tests/fuzz/repro/"$t"/; done
    echo "fuzz: $t: FINDING (exit $rc); reproducers: ${found[*]:-none} -> tests/fuzz/repro/$t/" >&2
    grep -E 'ERROR|SUMMARY|runtime error|invariant broken|deadly signal|timeout|out-of-memory' "$log" | head -5 >&2 || true
  fi
  printf '%-10s %12s executions  %s  %s\n' "$t" "${execs:-?}" "${cov:-}" "$([ "$rc" -eq 0 ] && [ ${#found[@]} -eq 0 ] && echo ok || echo FAILED)" \
    >"$SAN_DIR/fuzz-$t.summary"
}
for t in "${TARGETS[@]}"; do
  rm -f "$SAN_DIR/fuzz-$t.summary"
  while [ "$(jobs -rp | wc -l)" -ge "$par" ]; do wait -n || true; done
  run_target "$t" &
done
wait
echo "fuzz: ${SECS}s per target${OPV_FUZZ_RUNS:+ (execution budgets: $OPV_FUZZ_RUNS)}, $par at a time"
failed=()
for t in "${TARGETS[@]}"; do
  line=$(cat "$SAN_DIR/fuzz-$t.summary" 2>/dev/null || printf '%-10s did not finish  FAILED' "$t")
  echo "$line"
  [[ "$line" == *ok ]] || failed+=("$t")
done
if [ ${#failed[@]} -gt 0 ]; then
  echo "fuzz: findings in: ${failed[*]}" >&2
  exit 1
fi
