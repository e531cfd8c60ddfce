"""opvision: an ahead-of-time compiler and lean runtime for openpilot's vision model.

The API follows onnxruntime's, so code can switch with one line::

    import opvision
    opvision.compile("model.onnx", "model.opv", target="cpu")        # optional: ahead of time
    s = opvision.InferenceSession("model.opv", backend="cpu", threads=2)
    outputs = s.run(None, {"img": img, "big_img": big_img})          # list of numpy arrays

For a per-frame loop, ``s.run_into(feed, outputs)`` writes into arrays the caller keeps (see
InferenceSession.run_into). Errors are opvision.Error subclasses (opvision.errors).
"""
from __future__ import annotations

import json
import operator
import os
from typing import Any, Dict, List, Mapping, Optional, Sequence, Union

import numpy as np

from .errors import BackendError, Error, InvalidArgument, InvalidGraph, LoadError
from . import _opvision

__version__: str = _opvision.__version__
# The largest batch compile() accepts (``opvision compile --batch``'s limit).
MAX_COMPILE_BATCH: int = _opvision.MAX_COMPILE_BATCH

__all__ = [
    "__version__", "MAX_COMPILE_BATCH", "compile", "available_backends", "InferenceSession", "NodeArg", "DeviceInput",
    "Error", "InvalidArgument", "InvalidGraph", "LoadError", "BackendError",
]

PathLike = Union[str, "os.PathLike[str]"]

# numpy dtype name -> the ONNX type string onnxruntime's NodeArg.type reports.
_ONNX_TYPES = {
    "float32": "tensor(float)", "float16": "tensor(float16)", "float64": "tensor(double)",
    "int64": "tensor(int64)", "int32": "tensor(int32)", "int8": "tensor(int8)",
    "uint8": "tensor(uint8)", "bool": "tensor(bool)",
}


def _path(value: Any, what: str) -> str:
    try:
        return os.fsdecode(os.fspath(value))
    except TypeError:
        raise InvalidArgument(f"{what} must be a path (str or os.PathLike), got "
                              f"{type(value).__name__}") from None


def _names(value: Any, what: str) -> Optional[List[str]]:
    if value is None:
        return None
    if isinstance(value, str) or not isinstance(value, (list, tuple)) or \
            not all(isinstance(v, str) for v in value):
        raise InvalidArgument(f"{what} must be a list of str or None, got {value!r}")
    return list(value)


def available_backends() -> List[str]:
    """The backend names this build can run ("reference", "cpu", "opencl", ...)."""
    return _opvision.available_backends()


def compile(onnx_path: PathLike, opv_path: PathLike, target: str = "cpu",
            passes: Optional[Sequence[str]] = None,
            disable_passes: Optional[Sequence[str]] = None, batch: Optional[int] = None) -> None:
    """Compiles an ONNX model for a backend and writes the .opv artifact (``opvision compile``).

    Args:
        onnx_path: the ONNX model.
        opv_path: the artifact to write.
        target: the backend the plan is compiled for (see available_backends()).
        passes: the plan passes of the target to run, in the target's order; None runs the
            target's default passes, [] none but the mandatory ones (``opvision compile --help``
            lists them per target).
        disable_passes: graph or plan passes to skip (``--no-pass``).
        batch: samples per inference (``--batch N``): None keeps the model's own batch; N
            (1..MAX_COMPILE_BATCH) rewrites a batch-1 model so that every input and output has
            leading dimension N, sample k's outputs computed from sample k's inputs alone.

    Raises:
        InvalidArgument: unknown target or pass name; batch not an int in 1..MAX_COMPILE_BATCH.
        LoadError: the model file is missing or not a regular file.
        InvalidGraph: the model cannot be imported or compiled (the message names node and op),
            or cannot be batched to ``batch`` (the message names the node and why).
        Error: the artifact cannot be written.
    """
    if not isinstance(target, str):
        raise InvalidArgument(f"target must be a str, got {type(target).__name__}")
    if batch is not None:
        if isinstance(batch, bool) or not hasattr(batch, "__index__"):
            raise InvalidArgument(f"batch must be an int or None, got {type(batch).__name__}")
        batch = operator.index(batch)
        if not 1 <= batch <= MAX_COMPILE_BATCH:
            raise InvalidArgument(f"batch must be in 1..{MAX_COMPILE_BATCH} (None: the model's own batch), "
                                  f"got {batch}")
    _opvision.compile(_path(onnx_path, "onnx_path"), _path(opv_path, "opv_path"), target,
                      _names(passes, "passes"), _names(disable_passes, "disable_passes") or [], batch)


class NodeArg:
    """An input or output of a model, like onnxruntime.NodeArg.

    Attributes:
        name: its name in the model.
        shape: its dimensions (a list of int; opvision models have static shapes).
        dtype: its numpy dtype.
        type: its ONNX type string, as onnxruntime reports it ("tensor(float)", "tensor(uint8)").
    """
    __slots__ = ("name", "shape", "dtype", "type")

    def __init__(self, name: str, dtype: str, shape: Sequence[int]) -> None:
        self.name = name
        self.shape: List[int] = list(shape)
        self.dtype = np.dtype(dtype)
        self.type = _ONNX_TYPES[dtype]

    def __repr__(self) -> str:
        return f"NodeArg(name={self.name!r}, type={self.type!r}, shape={self.shape})"


class DeviceInput:
    """One model input kept in GPU memory between runs (InferenceSession(cuda_inputs="device")):
    its device address, shape and dtype, and ``__cuda_array_interface__`` (version 3), so CUDA
    array libraries view it without a copy, e.g. ``torch.as_tensor(d, device="cuda")`` or
    ``cupy.asarray(d)``: write the frame there on the GPU (same device; the writes finished, e.g.
    ``torch.cuda.synchronize()``, before the run) and call run_device_inputs()."""

    def __init__(self, name: str, ptr: int, shape: Sequence[int], dtype: str) -> None:
        self.name = name
        self.ptr = ptr
        self.shape = tuple(shape)
        self.dtype = np.dtype(dtype)

    @property
    def __cuda_array_interface__(self) -> Dict[str, Any]:
        return {"shape": self.shape, "typestr": self.dtype.str, "data": (self.ptr, False), "version": 3,
                "strides": None, "stream": None}

    def __repr__(self) -> str:
        return f"DeviceInput(name={self.name!r}, ptr=0x{self.ptr:x}, shape={self.shape}, dtype={self.dtype.name!r})"


class InferenceSession:
    """A model loaded on one backend, ready to run (onnxruntime.InferenceSession's counterpart).

    Args:
        path: a .opv artifact (its target must be `backend`), or an .onnx model, compiled in
            memory for `backend` with the default passes.
        backend: "cpu" (oneDNN), "reference" (the slow, exact oracle), "opencl", ...
            (available_backends()).
        threads: CPU threads of the cpu backend (0: the backend's default).
        device: OpenCL device selector (index N, P:D or a name substring; "" = the first GPU).
        cpu_precision: "fp32" (default) or "bf16": the cpu backend runs its dense convolutions
            with bf16 inputs and weights and fp32 accumulation where the CPU has a native bf16
            kernel (AMX, AVX512-BF16); faster there, with more error (CLI --cpu-precision).
        cuda_inputs: how the cuda backend gets the inputs onto the GPU (CLI --cuda-inputs):
            "auto" (default), "copy", "mapped", or "device": they stay in GPU memory between
            runs, run() uploads them before the graph, and run_device_inputs() runs on what is
            there (device_inputs(): where a caller writes its frames on the GPU). Other backends
            ignore it.
        cuda_code: "auto" (default): the cuda backend loads each kernel's stored machine code
            (SASS) where the artifact holds a cubin this GPU runs (compile --cuda-sass), else
            JIT-compiles its PTX; "ptx": always the PTX (CLI --cuda-code). Other backends ignore it.

    Raises:
        InvalidArgument: unknown backend, threads out of range, unknown cpu_precision,
            cuda_inputs or cuda_code.
        LoadError: the file is missing or not a regular file; the artifact is truncated,
            corrupted or for another backend.
        InvalidGraph: the .onnx model cannot be compiled.
        BackendError: the backend cannot run the model or has no device.

    Runs release the GIL; one session may be shared by threads (its runs take turns), and
    sessions in different threads run in parallel.
    """

    def __init__(self, path: PathLike, backend: str = "cpu", threads: int = 0,
                 device: str = "", cpu_precision: str = "fp32", cuda_inputs: str = "auto",
                 cuda_code: str = "auto") -> None:
        if not isinstance(backend, str):
            raise InvalidArgument(f"backend must be a str, got {type(backend).__name__}")
        if isinstance(threads, bool) or not isinstance(threads, int):
            raise InvalidArgument(f"threads must be an int, got {type(threads).__name__}")
        if not isinstance(device, str):
            raise InvalidArgument(f"device must be a str, got {type(device).__name__}")
        if not isinstance(cpu_precision, str):
            raise InvalidArgument(f"cpu_precision must be a str, got {type(cpu_precision).__name__}")
        if not isinstance(cuda_inputs, str):
            raise InvalidArgument(f"cuda_inputs must be a str, got {type(cuda_inputs).__name__}")
        if not isinstance(cuda_code, str):
            raise InvalidArgument(f"cuda_code must be a str, got {type(cuda_code).__name__}")
        self._path = _path(path, "path")
        self._s = _opvision._Session(self._path, backend, threads, device, cpu_precision, cuda_inputs, cuda_code)
        self._inputs = [NodeArg(*spec) for spec in self._s.inputs()]
        self._outputs = [NodeArg(*spec) for spec in self._s.outputs()]

    @property
    def backend(self) -> str:
        """The backend the session runs on (the plan's target)."""
        return self._s.backend

    @property
    def batch(self) -> Optional[int]:
        """Samples per inference of an artifact compiled with ``batch=N`` (``compile --batch N``,
        plan meta ``batch``, as ``opvision inspect`` shows it): every input and output then has
        leading dimension N, sample k's outputs computed from sample k's inputs alone. None when
        the model keeps its own batch (compiled without it)."""
        return self._s.batch

    def get_inputs(self) -> List[NodeArg]:
        """The model's inputs, in model order."""
        return list(self._inputs)

    def get_outputs(self) -> List[NodeArg]:
        """The model's outputs, in model order."""
        return list(self._outputs)

    def get_providers(self) -> List[str]:
        """[backend], for code written against onnxruntime's get_providers()."""
        return [self.backend]

    def run(self, output_names: Optional[Sequence[str]], input_feed: Mapping[str, np.ndarray],
            run_options: Any = None) -> List[np.ndarray]:
        """Runs the model once.

        Args:
            output_names: the outputs to return, in this order; None returns all, in model order.
            input_feed: {input name: numpy array} for every input, each with the input's dtype and
                shape, C-contiguous. The arrays are read in place, not copied.
            run_options: accepted for onnxruntime compatibility and ignored.

        Returns:
            New numpy arrays (the caller owns them; the next run does not touch them).

        Raises:
            InvalidArgument: a missing, unknown, wrong-dtype, wrong-shape or non-contiguous input,
                or an unknown output name; the message names it and what was expected.
            BackendError: the backend failed while running.
        """
        return self._s.run(_feed(input_feed), _names(output_names, "output_names"))

    def run_into(self, input_feed: Mapping[str, np.ndarray],
                 outputs: Union[Mapping[str, np.ndarray], Sequence[np.ndarray]]) -> None:
        """Runs the model once, writing the outputs into arrays the caller provides: the
        zero-copy call for a per-frame loop (nothing is allocated per call).

        Args:
            input_feed: as for run(); read in place.
            outputs: {output name: array} for any subset of the outputs, or a list of arrays for
                all outputs in model order. Each must be a writeable, C-contiguous array of the
                output's dtype and shape (allocate_outputs() makes them).

        Raises:
            InvalidArgument, BackendError: as for run().
        """
        self._s.run_into(_feed(input_feed), outputs)

    def profile(self, input_feed: Mapping[str, np.ndarray], runs: int = 1,
                path: Optional[PathLike] = None) -> Dict[str, Any]:
        """Runs the model `runs` times with per-call timing and returns the timeline as a Chrome
        trace (the dict of ``opvision bench --trace``): per run an "inference" span and inside it
        one span per plan call, named by its kernel, with the op ("cat"), the graph node, bytes
        moved and FLOPs ("args"). Written to `path` as JSON when given; open it in
        ui.perfetto.dev or chrome://tracing.

        Raises:
            InvalidArgument: as for run(), or runs out of 1..1000.
            BackendError: the backend reports no per-call times, or failed.
        """
        if isinstance(runs, bool) or not isinstance(runs, int):
            raise InvalidArgument(f"runs must be an int, got {type(runs).__name__}")
        text = self._s.profile(_feed(input_feed), runs)
        if path is not None:
            with open(_path(path, "path"), "w") as f:
                f.write(text)
        return json.loads(text)

    def staged_inputs(self) -> Dict[str, np.ndarray]:
        """{input name: writeable array} in model order, for a caller that writes its inputs in
        place: views of the memory the backend reads each input from (the cuda backend's pinned,
        GPU-mapped staging; other backends: arrays the session owns). Write a frame into them
        (``np.copyto(staged["input_imgs"], frame)``, or decode straight into them) and pass the
        dict, or those arrays, to run() or run_into(): the run then copies nothing on the host
        (``opvision run|bench --staged-inputs``; on an H100 `opvision bench` ran the fixture's default
        cuda artifact in 0.172 ms from its own arrays and in 0.162 ms from these, BENCHMARKS.md
        session 35).

        The same arrays are returned on every call; they stay valid while they or the session
        live (each keeps the session alive). Do not write them while a run of this session is in
        progress in another thread.
        """
        return self._s.staged_inputs()

    def device_inputs(self) -> Dict[str, DeviceInput]:
        """{input name: DeviceInput} in model order: where each input lives in GPU memory between
        runs (cuda backend, ``cuda_inputs="device"``), for a caller that makes its frames on the GPU
        (openpilot warps the camera frames into the model's input there) and then calls
        run_device_inputs(). Empty when the session keeps no input there."""
        specs = {n.name: n for n in self._inputs}
        return {name: DeviceInput(name, ptr, specs[name].shape, specs[name].dtype)
                for name, ptr in self._s.device_inputs() if ptr}

    def run_device_inputs(self, output_names: Optional[Sequence[str]] = None) -> List[np.ndarray]:
        """Runs the model once on the inputs as they are in GPU memory (``cuda_inputs="device"``):
        the last run()'s, or what the caller wrote at device_inputs(). Returns as run().

        Raises:
            InvalidArgument: an unknown output name.
            BackendError: the session keeps its inputs elsewhere, or the backend failed.
        """
        return self._s.run(None, _names(output_names, "output_names"))

    def allocate_outputs(self) -> Dict[str, np.ndarray]:
        """{output name: new uninitialised array} for run_into, in model order."""
        return {o.name: np.empty(o.shape, o.dtype) for o in self._outputs}

    def __repr__(self) -> str:
        return (f"InferenceSession({self._path!r}, backend={self.backend!r}, "
                f"inputs={self._inputs}, outputs={self._outputs})")


def _feed(input_feed: Any) -> Dict[str, Any]:
    if isinstance(input_feed, dict):
        return input_feed
    if isinstance(input_feed, Mapping):
        return dict(input_feed)
    raise InvalidArgument("the input feed must be a dict {name: numpy array}, got "
                          f"{type(input_feed).__name__}")
