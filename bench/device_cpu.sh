#!/usr/bin/env bash
# Runs the cpu benchmark (bench/bench_cpu.py, opvision vs onnxruntime, alternating rounds) on the
# lent GPU machine's host CPU, which nothing else uses while it runs (the development VM's two
# cores are shared), from the bundle that `bash bench/device_opencl.sh --bundle` makes in .devrun/.
#   bash bench/device_cpu.sh [--rounds N] [--iters N]   (on the GPU machine; results also in $OUT)
# Verifies the fp16 fixture at both --cpu-precision values, builds the fp32 twin
# (bench/fp32_twin.py), then benches both models at 2 threads, bf16 first, then fp32.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
D="$ROOT/.devrun"
# shellcheck source=bench/device_env.sh
source "$ROOT/bench/device_env.sh"
R="${OUT:-/tmp/opv_cpu_bench}"
mkdir -p "$R"
lscpu | grep -E "^(Model name|CPU\(s\)|Thread|L2|L3)" | tee "$R/cpu.txt"
grep -o -w -E "avx512_bf16|amx_bf16|amx_tile" /proc/cpuinfo | sort -u | tr '\n' ' ' | tee -a "$R/cpu.txt"
echo
for p in fp32 bf16; do
  "$OPV" verify "$M.onnx" --ref "${M}_ref.npz" --threads 2 --cpu-precision "$p" 2>&1 | tail -1 | sed "s/^/$p: /" |
    tee -a "$R/verify.txt"
done
python3 "$ROOT/bench/fp32_twin.py" "$M.onnx" /tmp/opv_t12_twin32.onnx
for p in bf16 fp32; do
  python3 "$ROOT/bench/bench_cpu.py" --opvision "$OPV" --threads 2 --precision "$p" "$@" \
    --json "$R/cpu_$p.json" "$M.onnx" /tmp/opv_t12_twin32.onnx 2>&1 | tee "$R/cpu_$p.txt"
done
