#!/usr/bin/env bash
# ctest "runtime_link_check": the runtime library carries no compile-time code.
#   usage: check_runtime_link.sh NM libopv_runtime.a libopv_compiler.a RUNTIME_ONLY OPVISION WORKDIR
#   1. Symbols: no symbol of libopv_runtime.a (defined or referenced) may be ONNX's or protobuf's,
#      or compile-time code by name (the target code generators' namespace, plan passes, import,
#      IR, lowering), and none may be a strong symbol that libopv_compiler.a defines. Weak
#      symbols (inline functions and template instances both libraries emit) are not compared.
#   2. Link and run: runtime_only (tests/runtime/runtime_only_main.cpp) is linked from every
#      object of libopv_runtime.a plus opv_core only; the build made it, so it links. It loads a
#      model compiled here by the CLI for the cpu and reference targets and runs it twice.
# Exits non-zero with the offending symbols or the failing run.
set -euo pipefail
NM=$1 RUNTIME_LIB=$2 COMPILER_LIB=$3 RUNTIME_ONLY=$4 OPVISION=$5 WORK=$6
mkdir -p "$WORK"

# Strong definitions (text, data, bss, read-only) of an archive, demangled, one per line.
strong_defs() { "$NM" -C --defined-only "$1" 2>/dev/null | awk '$2 ~ /^[TDBR]$/ { $1 = ""; $2 = ""; sub(/^  /, ""); print }' | sort -u; }
# Every symbol an archive defines or references (type letter dropped), demangled.
all_syms() { "$NM" -C "$1" 2>/dev/null | awk 'NF >= 2 { if (NF == 2) { $1 = "" } else { $1 = ""; $2 = "" }; sub(/^ +/, ""); print }' | sort -u; }

strong_defs "$COMPILER_LIB" > "$WORK/compiler_defs.txt"
all_syms "$RUNTIME_LIB" > "$WORK/runtime_syms.txt"
[ -s "$WORK/compiler_defs.txt" ] || { echo "FAIL: no symbols read from $COMPILER_LIB"; exit 1; }
[ -s "$WORK/runtime_syms.txt" ] || { echo "FAIL: no symbols read from $RUNTIME_LIB"; exit 1; }

fail=0
if grep -E '(^|[^A-Za-z_])(onnx::|google::protobuf)' "$WORK/runtime_syms.txt" > "$WORK/onnx_syms.txt"; then
  echo "FAIL: libopv_runtime.a defines or references ONNX/protobuf symbols:"
  head -20 "$WORK/onnx_syms.txt"
  fail=1
fi
# Compile-time code by name, whichever library it sits in: the target code generators, the plan
# passes and their table, ONNX import, the IR and its passes, lowering.
compile_time='opv::plan::cl::|opv::target::|opv::ir::|opv::import_onnx|opv::lower|opv::compile_onnx|'\
'opv::plan::(assign_image_layout|assign_nhwc_layout|cl_codegen|input_pack|weight_pack|fp16_math|batch_calls|replay|'\
'dedupe|level_schedule|compact|plan_memory|plan_passes_for)\('
if grep -E "$compile_time" "$WORK/runtime_syms.txt" > "$WORK/compile_time_syms.txt"; then
  echo "FAIL: libopv_runtime.a defines or references compile-time code:"
  head -20 "$WORK/compile_time_syms.txt"
  fail=1
fi
comm -12 "$WORK/compiler_defs.txt" "$WORK/runtime_syms.txt" > "$WORK/shared_syms.txt"
if [ -s "$WORK/shared_syms.txt" ]; then
  echo "FAIL: libopv_runtime.a defines or references symbols that libopv_compiler.a defines:"
  head -20 "$WORK/shared_syms.txt"
  fail=1
fi
[ $fail -eq 0 ] || exit 1
echo "symbols: $(wc -l < "$WORK/runtime_syms.txt") in the runtime, none from the compiler ($(wc -l < "$WORK/compiler_defs.txt") strong definitions) or ONNX/protobuf"

# A small model of the project's architecture, compiled by the CLI, run by the runtime alone.
"$OPVISION" make-model "$WORK/tiny.onnx" --height 32 --width 64 --widths 8,16 --depths 1,1 \
  --hidden 16 --heads 8,4 > /dev/null
for target in cpu reference; do
  "$OPVISION" compile "$WORK/tiny.onnx" --target $target -o "$WORK/tiny_$target.opv" > /dev/null
  "$RUNTIME_ONLY" "$WORK/tiny_$target.opv" 7
done
