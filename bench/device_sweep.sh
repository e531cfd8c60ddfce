#!/usr/bin/env bash
# A sweep of compile variants of one model on the lent GPU machine, timed in alternating rounds
# (the pattern of BENCHMARKS.md "CUDA" sessions 26-29, one command instead of a hand-written
# script). Run after `bash bench/device_cuda.sh --bundle` here, through the run tool with
# carry [".devrun"]:
#   bash bench/device_sweep.sh [--batch N] [--arch compute_NN] [--rounds R] [--inflight K]
#                              [--model M.onnx] [--seeds "1 2"] [--iters 60]
#                              [--name NAME [--flags "FLAGS"] [--bin OPVISION] [--run-flags "FLAGS"]]...
#   --name/--flags: one variant each (its compile flags; --name first, then its --flags); the first
#       variant is the reference the others are held against (default: one variant "default" with
#       no flags). --bin FILE after a --name: that variant is compiled by another opvision binary
#       (e.g. .devrun/opvision_base from `device_cuda.sh --bundle --base-bin`: the code before a
#       change); every variant runs on the bundle's opvision. --run-flags after a --name: flags
#       of that variant's verify, run and bench (e.g. "--cuda-inputs mapped --staged-inputs"; run
#       and bench take --staged-inputs, verify does not, so it is left out there).
#   --batch N (default 1): `compile --batch N`; --inflight K (default 4 for N > 1, else 1): each
#       round times `opvision bench ART --inflight K --iters I` (--iters, default 60) and reports
#       ms per batch (median / K).
# Steps: compile every variant (PTX through the machine's NVRTC), `verify --backend cuda` each
# against the model's reference (M_ref.npz beside the ONNX), compare every variant's outputs with
# the first's byte for byte on each seed (`run --seed S`: "identical" or "differ"; forms that sum
# in another order differ within the verify tolerance), R rounds timing every variant in turn,
# the median and rounds of each, the per-round ratio to the first, and each variant's per-kernel
# profile (`opvision bench --iters 30`: CUDA events per call, no graph).
set -euo pipefail
# shellcheck source=bench/device_prologue.sh
source "$(dirname "$0")/device_prologue.sh"
BATCH=1 ARCH=compute_90 ROUNDS=5 INFLIGHT="" MODEL="" SEEDS="1 2" ITERS=60
NAMES=() FLAGS=() BINS=() RUNF=()
while [[ $# -gt 0 ]]; do
  case "$1" in
    --batch) BATCH="$2"; shift 2 ;;
    --arch) ARCH="$2"; shift 2 ;;
    --rounds) ROUNDS="$2"; shift 2 ;;
    --inflight) INFLIGHT="$2"; shift 2 ;;
    --model) MODEL="$2"; shift 2 ;;
    --seeds) SEEDS="$2"; shift 2 ;;
    --iters) ITERS="$2"; shift 2 ;;
    --name) NAMES+=("$2"); FLAGS+=(""); BINS+=(""); RUNF+=(""); shift 2 ;;
    --flags)
      [[ ${#NAMES[@]} -gt 0 ]] || { echo "device_sweep.sh: --flags before any --name" >&2; exit 2; }
      FLAGS[${#FLAGS[@]} - 1]="$2"; shift 2 ;;
    --bin)
      [[ ${#NAMES[@]} -gt 0 ]] || { echo "device_sweep.sh: --bin before any --name" >&2; exit 2; }
      [[ -x "$2" ]] || { echo "device_sweep.sh: --bin $2 is not an executable file" >&2; exit 2; }
      BINS[${#BINS[@]} - 1]="$(cd "$(dirname "$2")" && pwd)/$(basename "$2")"; shift 2 ;;
    --run-flags)
      [[ ${#NAMES[@]} -gt 0 ]] || { echo "device_sweep.sh: --run-flags before any --name" >&2; exit 2; }
      RUNF[${#RUNF[@]} - 1]="$2"; shift 2 ;;
    *) echo "device_sweep.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
done
[[ "$BATCH" =~ ^[1-9][0-9]*$ && "$ROUNDS" =~ ^[1-9][0-9]*$ && "$ITERS" =~ ^[1-9][0-9]*$ ]] ||
  { echo "device_sweep.sh: --batch, --rounds and --iters take positive integers" >&2; exit 2; }
[[ -z "$INFLIGHT" ]] && { [[ "$BATCH" -gt 1 ]] && INFLIGHT=4 || INFLIGHT=1; }
[[ "$INFLIGHT" =~ ^[1-9][0-9]*$ ]] || { echo "device_sweep.sh: --inflight takes a positive integer" >&2; exit 2; }
[[ ${#NAMES[@]} -gt 0 ]] || { NAMES=(default); FLAGS=(""); BINS=(""); RUNF=(""); }
[[ -d "$D" ]] || { echo "device_sweep.sh: no $D (run bash bench/device_cuda.sh --bundle first)" >&2; exit 2; }
# shellcheck source=bench/device_env.sh
source "$ROOT/bench/device_env.sh"
[[ -n "$MODEL" ]] && M="${MODEL%.onnx}"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader || true
A=/tmp/opv/sweep
mkdir -p "$A"
for i in "${!NAMES[@]}"; do
  echo "== compile ${NAMES[$i]}: --batch $BATCH ${FLAGS[$i]}${BINS[$i]:+ (by ${BINS[$i]})}"
  # shellcheck disable=SC2086
  "${BINS[$i]:-$OPV}" compile "$M.onnx" -o "$A/${NAMES[$i]}.opv" --target cuda --cuda-arch "$ARCH" --batch "$BATCH" ${FLAGS[$i]} | tail -1
done
echo "== verify --backend cuda"
for i in "${!NAMES[@]}"; do
  n="${NAMES[$i]}"
  printf '%-16s ' "$n"
  # shellcheck disable=SC2086
  "$OPV" verify "$A/$n.opv" --ref "${M}_ref.npz" --backend cuda ${RUNF[$i]//--staged-inputs/} 2>&1 | tail -1 ||
    echo "  ^ FAILED ($n)"
done
echo "== outputs against ${NAMES[0]}'s, byte for byte"
for s in $SEEDS; do
  for i in "${!NAMES[@]}"; do
    # shellcheck disable=SC2086
    "$OPV" run "$A/${NAMES[$i]}.opv" --backend cuda --seed "$s" ${RUNF[$i]} -o "$A/${NAMES[$i]}_seed$s.npz" >/dev/null 2>&1
  done
  for n in "${NAMES[@]:1}"; do
    cmp -s "$A/${NAMES[0]}_seed$s.npz" "$A/${n}_seed$s.npz" && echo "seed $s $n: identical" || echo "seed $s $n: differ"
  done
done
echo "== $ROUNDS rounds, ms a batch (bench --inflight $INFLIGHT, median / $INFLIGHT)"
for ((r = 1; r <= ROUNDS; ++r)); do
  for i in "${!NAMES[@]}"; do
    n="${NAMES[$i]}"
    # shellcheck disable=SC2086
    ms=$("$OPV" bench "$A/$n.opv" --backend cuda --inflight "$INFLIGHT" --iters "$ITERS" --warmup "$(( ITERS < 10 ? ITERS : 10 ))" ${RUNF[$i]} --json |
      python3 -c "import json, sys; print('%.4f' % (json.load(sys.stdin)['median_ms'] / $INFLIGHT))")
    echo "$r $n $ms" | tee -a "$A/rounds.txt"
  done
done
python3 - "$A/rounds.txt" "${NAMES[@]}" <<'PY'
import statistics, sys
rows = [line.split() for line in open(sys.argv[1]) if line.strip()]
names = sys.argv[2:]
by = {n: [float(ms) for _, m, ms in rows if m == n] for n in names}
ref = by[names[0]]
for n in names:
    ratios = " ".join(f"{a / b:.2f}" for a, b in zip(by[n], ref))
    print(f"{n:<16} median {statistics.median(by[n]):.4f} ms  rounds " + " ".join(f"{x:.4f}" for x in by[n])
          + ("" if n == names[0] else f"  (against {names[0]} per round: {ratios})"))
PY
rm -f "$A/rounds.txt"
for i in "${!NAMES[@]}"; do
  n="${NAMES[$i]}"
  echo "== per kernel: $n"
  # shellcheck disable=SC2086
  "$OPV" bench "$A/$n.opv" --backend cuda --iters "$(( ITERS < 30 ? ITERS : 30 ))" --warmup "$(( ITERS < 10 ? ITERS : 10 ))" ${RUNF[$i]} |
    sed -n '/^per kernel/,$p' | head -16
done
