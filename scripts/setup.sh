#!/usr/bin/env bash
# One-command setup on a fresh Debian 12 machine: system packages, Python test packages, build.
#   scripts/setup.sh            install + configure + build into ./build
#   scripts/setup.sh --no-build install only
set -euo pipefail
cd "$(dirname "$0")/.."

APT_PACKAGES=(
  build-essential cmake pkg-config git
  ccache                                          # a second build with the same flags (the wheel's) reuses ./build's objects
  libprotobuf-dev protobuf-compiler libonnx-dev   # ONNX import (compiler only)
  libdnnl-dev                                     # oneDNN: the cpu backend
  libzip-dev zlib1g-dev                           # .npz I/O, artifact checksums
  libgtest-dev                                    # unit tests
  nlohmann-json3-dev libssl-dev                   # IR3 capture files (JSON, SHA-256)
  ocl-icd-opencl-dev opencl-headers pocl-opencl-icd clinfo  # OpenCL backend (next)
  clang libclang-rt-14-dev libomp-dev             # clang build, libFuzzer + sanitizer runtimes (scripts/fuzz.sh)
  python3-dev python3-pip                         # Python.h for the Python package's module
  libllvm19                                       # bench/bench_tinygrad.py: tinygrad's CPU:LLVM device (openpilot's PC setting) needs LLVM >= 16
)
# nanobind + scikit-build-core: the Python package (python/opvision, src/python): the CMake build
# compiles its module when nanobind is importable; `pip install .` builds it with both.
# matplotlib: bench/bench_cpu.py --plot.
# ray[data]: opvision.replay only (pinned: it passes actor retry options through map_batches'
# **ray_remote_args, which Ray deprecates in 2.60 for removal in 2.64); with pyarrow and pandas it
# adds ~150 MB of wheels, ~500 MB installed.
PIP_PACKAGES=(numpy onnx onnxruntime pytest nanobind scikit-build-core matplotlib "ray[data]==2.60.0")

missing=()
for p in "${APT_PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${missing[*]}"
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
fi

if ! python3 -c "import numpy, onnx, onnxruntime, pytest, nanobind, scikit_build_core, matplotlib, ray.data" 2>/dev/null; then
  echo "setup: installing Python packages ${PIP_PACKAGES[*]}"
  python3 -m pip install -q "${PIP_PACKAGES[@]}"
fi

if [ "${1:-}" != "--no-build" ]; then
  cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null
  cmake --build build -j"$(nproc)"
  echo "setup: built ./build/opvision"
fi
