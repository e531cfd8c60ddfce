# Sourced by the bench/device_*.sh scripts on the GPU machine: registers NVIDIA's OpenCL ICD,
# unpacks the bundle's libraries (bench/device_opencl.sh --bundle) and sets OPV, M (the fixture
# path without extension), OPV_SHARED and LD_LIBRARY_PATH, and installs the bundle's wheels
# (tinygrad) into /tmp/opv/site on PYTHONPATH. Expects D = the .devrun bundle.
mkdir -p /etc/OpenCL/vendors
echo libnvidia-opencl.so.1 > /etc/OpenCL/vendors/nvidia.icd
mkdir -p /tmp/opv && tar xJf "$D/lib.tar.xz" -C /tmp/opv
export LD_LIBRARY_PATH=/tmp/opv/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export OPV_SHARED="$D/shared"
OPV="$D/opvision"
M="$OPV_SHARED/models/opvision_t12_fp16"
# tinygrad (bench_cuda.py --tinygrad: openpilot's engine with DEV=CUDA), from the bundle's wheel
if compgen -G "$D/wheels/*.whl" >/dev/null; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/opv/site "$D"/wheels/*.whl &&
    export PYTHONPATH=/tmp/opv/site${PYTHONPATH:+:$PYTHONPATH}
fi
