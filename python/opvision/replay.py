"""opvision.replay: run a model over a dataset of recorded drive segments, on Ray Data.

    python3 -m opvision.replay MODEL DATASET_DIR OUT_DIR [--workers N] [--address ADDR]
                               [--backend cpu] [--threads T] [--format npz|parquet]
                               [--cpu-precision fp32|bf16]

or, from Python, ``opvision.replay.replay(model, dataset_dir, out_dir, workers=2)``.

Dataset layout (DATASET_DIR):
  * One shard per drive segment: ``<segment>.npz`` or ``<segment>.npy`` directly in DATASET_DIR
    (not in subdirectories; other files are ignored). The segment's name is the file name without
    its suffix; two shards with the same name (``a.npz`` and ``a.npy``) are an error.
  * A ``.npz`` shard holds one member per model input, named as the input
    (``InferenceSession.get_inputs()[i].name``), each of shape ``(F, *input.shape)`` and the
    input's dtype: the segment's F frames stacked on a new first axis (for the fixture model
    ``img`` and ``big_img``, both ``(F, 1, 12, 128, 256)`` uint8). Every member has the same F >= 1.
    Members that are not model inputs are ignored.
  * A ``.npy`` shard is the one input of a single-input model, shape ``(F, *input.shape)``.
  * A batch-N artifact (``opvision compile --batch N``, ``InferenceSession.batch``: inputs and
    outputs ``[N, ...]``) replays the same dataset: a frame is one sample, ``(1, *input.shape[1:])``
    (the batch-1 model's input shape), and the segment's frames run N at a time, one inference per
    group of N consecutive frames; the last group of a segment whose F is not a multiple of N is
    padded with zero frames, whose outputs are discarded. The outputs have the batch-1 layout
    below, frame f's being sample f % N of inference f // N.

Outputs (OUT_DIR, created if missing), one file per segment, named after it:
  * ``--format npz`` (default): ``<segment>.npz`` with one member per model output, named as the
    output, of shape ``(F, *output.shape)`` and the output's dtype; frame f of it is
    ``InferenceSession.run`` on frame f of the shard, bit for bit (same backend and threads);
    with a batch-N artifact ``(F, 1, *output.shape[1:])``, frame f's row equal to the batch-1
    artifact's within the backend's tolerance, not necessarily bit for bit (the cpu backend's
    batch-N kernels round differently: max_abs_rel ~5e-7 on a make-model variant).
  * ``--format parquet``: ``<segment>.parquet``, one row per frame: column ``frame`` (int32) and
    per model output a column of that name holding the frame's output flattened (a fixed-size
    list of the output's dtype); the schema metadata ``opvision.shapes`` (JSON) gives each
    output's per-frame shape. read_segment() reads either format back to arrays.

How it runs: the driver lists the shards and checks every shard's member names, shapes and dtypes
against the model from the file headers (no data read), so a bad dataset fails before Ray starts
work, with the shard named. Segments whose output is already present and complete are skipped
(outputs are only ever created whole, so an interrupted run can be re-run to finish the rest).
The rest become a Ray Dataset of one row per segment (``ray.data.from_items``), mapped with
``map_batches`` over a pool of N actors (SegmentReplayer): each actor opens one
opvision.InferenceSession in its constructor and runs every segment it is given through it, one
frame at a time (N frames at a time with a batch-N artifact; run_into, no copies but the padded
last group's), then writes the segment's output to a temporary file in
OUT_DIR and renames it into place (atomic on POSIX), so a killed or retried task never leaves a
partial or a second copy of a segment. A worker process that dies is restarted by Ray and its
segment retried (``max_restarts=-1``, ``max_task_retries`` = --retries). Ray Data draws the
progress bar.

Ray: a new Ray instance on this machine (``ray.init(address="local")``) with
``num_cpus = workers * threads`` unless Ray is already initialised in this process (then that
cluster is used as is), or ``ray.init(address=ADDR)`` with --address (``auto``: the cluster that
``ray start`` started here, or RAY_ADDRESS). On a
cluster, opvision (and Ray) must be installed on every node and DATASET_DIR, OUT_DIR and the model
must be at the same path on every node (a shared file system). Ray is imported only here, so
``import opvision`` works without it; ``pip install "ray[data]"`` adds it (scripts/setup.sh does).
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import os
import pathlib
import sys
import tempfile
import time
import warnings
import zipfile
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

import numpy as np

from . import InferenceSession, NodeArg
from .errors import Error

__all__ = ["DatasetError", "SegmentsFailed", "Segment", "SegmentReplayer", "ReplayResult", "replay", "list_segments",
           "check_shard", "load_shard", "read_segment", "output_path", "write_atomic", "frame_specs", "main"]

SHARD_SUFFIXES = (".npz", ".npy")
FORMATS = ("npz", "parquet")
SHAPES_KEY = b"opvision.shapes"  # parquet schema metadata: {output name: per-frame shape}


class DatasetError(Error):
    """The dataset does not fit the model (missing directory, no shards, a shard without a model
    input, a wrong shape or dtype, an unreadable file): the message names the shard."""


class SegmentsFailed(Error):
    """Some segments failed in the workers (e.g. a shard unreadable past its headers); the others
    were written. `failures` maps each failed segment to its message, `result` is the run's
    ReplayResult (failed rows included); a re-run retries only what is missing."""

    def __init__(self, failures: Dict[str, str], result: "ReplayResult") -> None:
        n = len(failures)
        lines = "; ".join(f"{msg}" for msg in list(failures.values())[:5]) + ("; ..." if n > 5 else "")
        super().__init__(f"{n} of {len(result.segments)} segments failed (the others are written; "
                         f"a re-run retries the rest): {lines}")
        self.failures, self.result = failures, result


@dataclasses.dataclass(frozen=True)
class Segment:
    name: str     # the shard's file name without its suffix; names the output file
    shard: str    # path of the .npz / .npy shard
    frames: int   # F, from the shard's headers


def _import_ray():
    try:
        import ray
        import ray.data  # noqa: F401  (Ray Data ships with `ray[data]`, not with bare `ray`)
    except ImportError as e:
        raise Error(f"opvision.replay needs Ray Data ({e}): pip install 'ray[data]' "
                    "(scripts/setup.sh installs it)") from None
    return ray


# ------------------------------------------------------------------------------------ shards
def _npy_header(f) -> Tuple[Tuple[int, ...], np.dtype]:
    version = np.lib.format.read_magic(f)
    if version == (1, 0):
        shape, fortran, dtype = np.lib.format.read_array_header_1_0(f)
    elif version == (2, 0):
        shape, fortran, dtype = np.lib.format.read_array_header_2_0(f)
    else:  # (3, 0): utf-8 field names, read like 2.0 by numpy's private reader
        shape, fortran, dtype = np.lib.format._read_array_header(f, version)
    if fortran and len(shape) > 1:
        raise ValueError("stored in Fortran order (C order expected)")
    return tuple(shape), dtype


def _array_headers(path: str) -> Dict[Optional[str], Tuple[Tuple[int, ...], np.dtype]]:
    """{member name: (shape, dtype)} of an .npz ({None: ...} for an .npy) from the headers only."""
    try:
        if path.endswith(".npy"):
            with open(path, "rb") as f:
                return {None: _npy_header(f)}
        out = {}
        with zipfile.ZipFile(path) as z:
            for info in z.infolist():
                if info.filename.endswith(".npy"):
                    with z.open(info) as f:
                        out[info.filename[:-4]] = _npy_header(f)
        return out
    except (OSError, ValueError, zipfile.BadZipFile, EOFError) as e:
        raise DatasetError(f"shard {path}: cannot read it as {pathlib.Path(path).suffix}: {e}") from None


def _framed(shape: Sequence[int]) -> str:
    return "(F, " + ", ".join(str(d) for d in shape) + ")"


def frame_specs(session: InferenceSession) -> Tuple[int, List[NodeArg], List[NodeArg]]:
    """(N, inputs, outputs) of one frame of `session`'s model: N frames per inference; a frame's
    inputs and outputs as NodeArgs. N = 1 and the model's own inputs and outputs, unless the model
    is a batch-N artifact with N > 1 (session.batch, compile --batch N): then a frame is one sample,
    each input and output ``[1, *shape[1:]]``.

    Raises:
        Error: the artifact records batch N but an input or output has no leading dimension N."""
    batch = session.batch
    inputs, outputs = session.get_inputs(), session.get_outputs()
    if batch is None or batch == 1:
        return 1, inputs, outputs
    for what, specs in (("input", inputs), ("output", outputs)):
        for a in specs:
            if not a.shape or a.shape[0] != batch:
                raise Error(f"the model is a batch-{batch} artifact (compile --batch {batch}), but its {what} "
                            f"'{a.name}' has shape {a.shape}, not [{batch}, ...]: it cannot be replayed frame by frame")
    per_frame = [[NodeArg(a.name, a.dtype.name, [1] + a.shape[1:]) for a in specs] for specs in (inputs, outputs)]
    return batch, per_frame[0], per_frame[1]


def _batch_note(batch: int) -> str:
    return (f" (the model is a batch-{batch} artifact, compile --batch {batch}: a frame is one sample of its "
            f"[{batch}, ...] inputs, {batch} frames run per inference)" if batch > 1 else "")


def _check_arrays(path: str, arrays: Mapping[Optional[str], Tuple[Tuple[int, ...], np.dtype]],
                  inputs: Sequence[NodeArg], batch: int = 1) -> int:
    """The one check of a shard against one frame's inputs (frame_specs; headers or loaded
    arrays alike); returns its frame count F. `batch` (frames per inference) is named in the
    messages."""
    if None in arrays:  # an .npy: the single input
        if len(inputs) != 1:
            raise DatasetError(f"shard {path}: an .npy shard holds one array, but the model has "
                               f"{len(inputs)} inputs ({', '.join(i.name for i in inputs)}): "
                               "use an .npz with one member per input")
        arrays = {inputs[0].name: arrays[None]}
    frames = None
    for i in inputs:
        if i.name not in arrays:
            raise DatasetError(f"shard {path}: no member '{i.name}' (model input, {i.dtype}, "
                               f"stored as shape {_framed(i.shape)}); it has "
                               f"{sorted(k for k in arrays if k is not None) or 'no arrays'}")
        shape, dtype = arrays[i.name]
        want = _framed(i.shape)
        if np.dtype(dtype) != i.dtype:
            raise DatasetError(f"shard {path}: member '{i.name}' is {np.dtype(dtype)}, the model "
                               f"input is {i.dtype} (shape {want})")
        if len(shape) != len(i.shape) + 1 or list(shape[1:]) != i.shape or shape[0] < 1:
            raise DatasetError(f"shard {path}: member '{i.name}' has shape {tuple(shape)}, expected "
                               f"{want}: the input's shape with the frames stacked on a first axis"
                               + _batch_note(batch))
        if frames is not None and shape[0] != frames:
            raise DatasetError(f"shard {path}: member '{i.name}' has {shape[0]} frames, "
                               f"'{inputs[0].name}' has {frames}")
        frames = shape[0]
    return int(frames)


def check_shard(path: str, inputs: Sequence[NodeArg], batch: int = 1) -> int:
    """Checks a shard's members against one frame's inputs (frame_specs) from its headers;
    returns F."""
    return _check_arrays(path, _array_headers(path), inputs, batch)


def load_shard(path: str, inputs: Sequence[NodeArg], batch: int = 1) -> Tuple[Dict[str, np.ndarray], int]:
    """{input name: (F, *shape) C-contiguous array} of a shard, checked; and F."""
    try:
        if path.endswith(".npy"):
            loaded = {inputs[0].name if len(inputs) == 1 else None: np.load(path, allow_pickle=False)}
        else:
            with np.load(path, allow_pickle=False) as z:
                names = set(z.files)
                loaded = {i.name: z[i.name] for i in inputs if i.name in names}
    except (OSError, ValueError, zipfile.BadZipFile, EOFError) as e:
        raise DatasetError(f"shard {path}: cannot read it: {e}") from None
    frames = _check_arrays(path, {k: (v.shape, v.dtype) for k, v in loaded.items()}, inputs, batch)
    return {k: np.ascontiguousarray(v) for k, v in loaded.items()}, frames


def list_segments(dataset_dir: str, inputs: Sequence[NodeArg], batch: int = 1) -> List[Segment]:
    """The shards of a dataset directory, sorted by name, each checked against one frame's
    inputs (frame_specs)."""
    d = pathlib.Path(dataset_dir)
    if not d.is_dir():
        raise DatasetError(f"dataset directory {d} " + ("is not a directory" if d.exists() else "does not exist"))
    seen: Dict[str, str] = {}
    for p in sorted(d.iterdir()):
        if p.suffix in SHARD_SUFFIXES and p.is_file():
            if p.stem in seen:
                raise DatasetError(f"shards {seen[p.stem]} and {p} are the same segment '{p.stem}': keep one")
            seen[p.stem] = str(p)
    if not seen:
        raise DatasetError(f"dataset directory {d} holds no .npz or .npy shards")
    return [Segment(name, path, check_shard(path, inputs, batch)) for name, path in sorted(seen.items())]


# ------------------------------------------------------------------------------------ outputs
def output_path(out_dir: str, segment: str, fmt: str) -> str:
    return os.path.join(out_dir, f"{segment}.{fmt}")


def _temp_prefix(segment: str, fmt: str) -> str:
    return f".{segment}.{fmt}.tmp-"


def _write_npz(f, outputs: Mapping[str, np.ndarray]) -> None:
    # as np.savez (uncompressed members NAME.npy), without its keyword names that an output
    # name could collide with
    with zipfile.ZipFile(f, "w", zipfile.ZIP_STORED, allowZip64=True) as z:
        for name, a in outputs.items():
            with z.open(name + ".npy", "w", force_zip64=True) as m:
                np.lib.format.write_array(m, np.ascontiguousarray(a), allow_pickle=False)


def _write_parquet(f, outputs: Mapping[str, np.ndarray]) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq
    frames = next(iter(outputs.values())).shape[0]
    cols = {"frame": pa.array(np.arange(frames, dtype=np.int32))}
    shapes = {}
    for name, a in outputs.items():
        per_frame = int(np.prod(a.shape[1:], dtype=np.int64))
        cols[name] = pa.FixedSizeListArray.from_arrays(pa.array(a.reshape(-1)), per_frame)
        shapes[name] = list(a.shape[1:])
    table = pa.table(cols).replace_schema_metadata({SHAPES_KEY: json.dumps(shapes).encode()})
    pq.write_table(table, f)


def write_atomic(path: str, outputs: Mapping[str, np.ndarray], fmt: str,
                 before_rename=None) -> None:
    """Writes outputs to a temporary file next to `path`, flushes it to disk and renames it to
    `path`: readers see either no file or the whole one. `before_rename` (tests) is called with
    the temporary path just before the rename."""
    d, base = os.path.split(path)
    fd, tmp = tempfile.mkstemp(prefix=_temp_prefix(base.rsplit(".", 1)[0], fmt), dir=d)
    try:
        os.fchmod(fd, 0o644)  # mkstemp makes it 0600; the output is an ordinary file
        with os.fdopen(fd, "wb") as f:
            (_write_npz if fmt == "npz" else _write_parquet)(f, outputs)
            f.flush()
            os.fsync(f.fileno())
        if before_rename is not None:
            before_rename(tmp)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def read_segment(path: str) -> Dict[str, np.ndarray]:
    """{output name: (F, *shape) array} of a segment output written by replay (.npz or .parquet)."""
    if path.endswith(".parquet"):
        import pyarrow.parquet as pq
        table = pq.read_table(path)
        shapes = json.loads(table.schema.metadata[SHAPES_KEY])
        return {name: table.column(name).combine_chunks().flatten().to_numpy()
                .reshape([table.num_rows] + shape) for name, shape in shapes.items()}
    with np.load(path, allow_pickle=False) as z:
        return {k: z[k] for k in z.files}


def output_complete(path: str, outputs: Sequence[NodeArg], frames: int) -> bool:
    """Whether a segment's output file exists with every model output over `frames` frames
    (checked from its headers; outputs are only ever created whole, by rename)."""
    if not os.path.isfile(path):
        return False
    try:
        if path.endswith(".parquet"):
            import pyarrow.parquet as pq
            meta = pq.read_metadata(path)
            names = set(meta.schema.to_arrow_schema().names)  # top-level columns (schema.names: leaves)
            return meta.num_rows == frames and all(o.name in names for o in outputs)
        heads = _array_headers(path)
    except Exception:  # unreadable: not complete, it is written again
        return False
    return all(o.name in heads and heads[o.name][0] == (frames, *o.shape) and
               np.dtype(heads[o.name][1]) == o.dtype for o in outputs)


# ------------------------------------------------------------------------------------ the actor
class SegmentReplayer:
    """The stateful callable of map_batches: one per Ray actor. The constructor opens one
    InferenceSession; each call replays a batch of segments (rows "segment", "shard") through it
    and writes each segment's output atomically; it returns one row per segment: segment, frames,
    status ("written"; "present" when a complete output was already there, e.g. written by an
    earlier attempt of this task that died after its rename; "failed" when the segment raised an
    opvision.Error or OSError, whose message is then in "error"), seconds (model time) and pid.

    A batch-N artifact runs N frames per inference (frame_specs): full groups straight from the
    shard's arrays into the output arrays (views, no copies), the last partial group through
    buffers allocated once, padded with zeros.

    crash_once: test-only fault injection, never set in production: (segment, marker path). The
    first time this segment is replayed (while the marker file does not exist) the actor creates
    the marker and kills its own process (os._exit) after writing the temporary output and
    before renaming it, the worst moment; Ray then restarts the actor and retries the task.
    """

    def __init__(self, model: str, out_dir: str, fmt: str = "npz", backend: str = "cpu",
                 threads: int = 1, device: str = "", skip_existing: bool = True,
                 crash_once: Optional[Tuple[str, str]] = None, cpu_precision: str = "fp32") -> None:
        self.session = InferenceSession(model, backend=backend, threads=threads, device=device,
                                        cpu_precision=cpu_precision)
        self.batch, self.inputs, self.outputs = frame_specs(self.session)
        if self.batch > 1:  # the padded last group of a segment: staged here, allocated once
            self.pad_in = {i.name: np.zeros(i.shape, i.dtype) for i in self.session.get_inputs()}
            self.pad_out = self.session.allocate_outputs()
        self.out_dir, self.fmt, self.crash_once = out_dir, fmt, crash_once
        self.skip_existing = skip_existing

    def __call__(self, batch: Mapping[str, Any]) -> Dict[str, np.ndarray]:
        rows: Dict[str, list] = {k: [] for k in ("segment", "frames", "status", "seconds", "pid", "error")}
        for name, shard in zip(batch["segment"], batch["shard"]):
            name, shard = str(name), str(shard)
            error = ""
            try:
                frames, status, seconds = self.replay_segment(name, shard)
            except (Error, OSError) as e:
                # the segment's failure is a result row, not a task failure: the other segments
                # go on, and the driver reports this message without Ray's stack traces
                frames, status, seconds = 0, "failed", 0.0
                error = str(e) if isinstance(e, Error) else f"segment {name}: {e}"
            for k, v in (("segment", name), ("frames", frames), ("status", status),
                         ("seconds", seconds), ("pid", os.getpid()), ("error", error)):
                rows[k].append(v)
        return {"segment": np.array(rows["segment"]), "frames": np.array(rows["frames"], np.int64),
                "status": np.array(rows["status"]), "seconds": np.array(rows["seconds"], np.float64),
                "pid": np.array(rows["pid"], np.int64), "error": np.array(rows["error"])}

    def replay_segment(self, name: str, shard: str) -> Tuple[int, str, float]:
        feeds, frames = load_shard(shard, self.inputs, self.batch)
        path = output_path(self.out_dir, name, self.fmt)
        if self.skip_existing and output_complete(path, self.outputs, frames):
            return frames, "present", 0.0
        self._remove_stale_temps(name)
        outs = {o.name: np.empty([frames] + o.shape, o.dtype) for o in self.outputs}
        t0 = time.perf_counter()
        if self.batch == 1:
            for f in range(frames):
                self.session.run_into({k: v[f] for k, v in feeds.items()}, {k: v[f] for k, v in outs.items()})
        else:
            self._run_groups(feeds, outs, frames)
        seconds = time.perf_counter() - t0
        write_atomic(path, outs, self.fmt, before_rename=self._maybe_crash(name))
        return frames, "written", seconds

    def _run_groups(self, feeds: Mapping[str, np.ndarray], outs: Mapping[str, np.ndarray], frames: int) -> None:
        """Frames [g, g + N) as inference g // N, sample k = frame g + k (batch-N artifacts)."""
        n = self.batch

        def samples(a: np.ndarray, lo: int, hi: int) -> np.ndarray:
            # frames lo..hi-1 of (F, 1, *rest) as (hi - lo, *rest): a view of the contiguous array
            return a[lo:hi].reshape((hi - lo,) + a.shape[2:])

        full = frames - frames % n
        for g in range(0, full, n):
            self.session.run_into({k: samples(v, g, g + n) for k, v in feeds.items()},
                                  {k: samples(v, g, g + n) for k, v in outs.items()})
        if full < frames:
            rest = frames - full
            for k, v in feeds.items():
                self.pad_in[k][:rest] = samples(v, full, frames)
                self.pad_in[k][rest:] = 0
            self.session.run_into(self.pad_in, self.pad_out)
            for k, v in outs.items():
                samples(v, full, frames)[...] = self.pad_out[k][:rest]

    def _remove_stale_temps(self, name: str) -> None:
        """Temporary files of this segment left by an attempt whose process died (its task is
        being retried here, so no live writer owns them)."""
        prefix = _temp_prefix(name, self.fmt)
        for p in os.listdir(self.out_dir):
            if p.startswith(prefix):
                try:
                    os.unlink(os.path.join(self.out_dir, p))
                except OSError:
                    pass

    def _maybe_crash(self, name: str):
        if self.crash_once is None or self.crash_once[0] != name:
            return None
        marker = self.crash_once[1]

        def crash(_tmp: str) -> None:
            try:
                fd = os.open(marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
            except FileExistsError:
                return  # crashed once already
            os.write(fd, f"{os.getpid()}\n".encode())
            os.close(fd)
            os._exit(17)
        return crash


# ------------------------------------------------------------------------------------ driver
@dataclasses.dataclass
class ReplayResult:
    segments: List[Dict[str, Any]]   # one row per segment: segment, frames, status, seconds, pid, error
    skipped: List[str]               # segments complete before this run (not given to Ray)
    frames: int                      # frames replayed by this run
    wall_seconds: float              # Ray Data execution, actor start included, ray.init not
    batch: int = 1                   # frames per inference (a batch-N artifact's N, frame_specs)

    @property
    def frames_per_second(self) -> float:
        return self.frames / self.wall_seconds if self.wall_seconds > 0 else 0.0


def _package_path_env() -> Dict[str, str]:
    """PYTHONPATH for local workers: the directory this opvision package was imported from first,
    so workers import the same package as the driver (e.g. a build tree)."""
    root = str(pathlib.Path(__file__).resolve().parents[1])
    rest = os.environ.get("PYTHONPATH", "")
    return {"PYTHONPATH": root + (os.pathsep + rest if rest else "")}


def _last_line(e: BaseException) -> str:
    """The last line of a Ray task failure's text: the worker's own `Type: message` line (Ray
    carries the worker's traceback as text, not the exception object)."""
    lines = [ln.strip() for ln in str(e).splitlines() if ln.strip()]
    return lines[-1] if lines else type(e).__name__


def replay(model: str, dataset_dir: str, out_dir: str, workers: int = 1, backend: str = "cpu",
           threads: int = 1, fmt: str = "npz", address: Optional[str] = None, device: str = "",
           retries: int = 3, skip_existing: bool = True, progress: bool = True,
           crash_once: Optional[Tuple[str, str]] = None, cpu_precision: str = "fp32") -> ReplayResult:
    """Replays `model` over every segment of `dataset_dir` into `out_dir` with a pool of
    `workers` Ray actors (see the module docstring for the layout and the guarantees).

    Args:
        model: a .opv artifact for `backend`, or an .onnx model (compiled by each worker). A
            batch-N artifact (compile --batch N) replays the same dataset N frames per inference
            (module docstring); its outputs have the batch-1 layout.
        workers: actors in the pool, each with one session of `threads` threads.
        fmt: "npz" or "parquet".
        address: a Ray cluster to join; None starts Ray here unless it is already initialised.
        retries: times a segment whose worker died is retried (the worker is restarted).
        skip_existing: leave segments whose output is complete (False replays them all again,
            replacing each output when its new one is written).
        progress: Ray Data's progress bars.
        crash_once: test-only fault injection, see SegmentReplayer.
        cpu_precision: the cpu backend's "fp32" (default) or opt-in "bf16" convolutions
            (InferenceSession's argument of that name).

    Raises:
        DatasetError: the dataset does not fit the model (names the shard; and the batch of a
            batch-N artifact), found before Ray starts.
        SegmentsFailed: segments failed in the workers (the others are written).
        InvalidArgument, LoadError, ...: the model or the options (opvision.Error subclasses).
        Error: Ray is missing, or a worker failed other than by a segment's error (a bug, or a
            segment that killed its worker more than `retries` times).
    """
    from .errors import InvalidArgument
    if fmt not in FORMATS:
        raise InvalidArgument(f"format must be one of {', '.join(FORMATS)}, got {fmt!r}")
    for what, v, lo in (("workers", workers, 1), ("threads", threads, 1), ("retries", retries, 0)):
        if isinstance(v, bool) or not isinstance(v, int) or v < lo:
            raise InvalidArgument(f"{what} must be an int >= {lo}, got {v!r}")
    if fmt == "parquet":
        try:
            import pyarrow  # noqa: F401
        except ImportError:
            raise Error("--format parquet needs pyarrow (it comes with 'ray[data]')") from None
    model = os.fspath(model)
    probe = InferenceSession(model, backend=backend, threads=1, device=device,
                             cpu_precision=cpu_precision)  # fail early, read specs
    batch, inputs, outputs = frame_specs(probe)
    del probe
    segments = list_segments(os.fspath(dataset_dir), inputs, batch)
    out_dir = os.fspath(out_dir)
    try:
        os.makedirs(out_dir, exist_ok=True)
    except OSError as e:
        raise Error(f"cannot create the output directory {out_dir}: {e}") from None
    skipped = [s.name for s in segments
               if skip_existing and output_complete(output_path(out_dir, s.name, fmt), outputs, s.frames)]
    todo = [s for s in segments if s.name not in set(skipped)]
    if not todo:
        return ReplayResult([], skipped, 0, 0.0, batch)

    ray = _import_ray()
    if not ray.is_initialized():
        if address:
            ray.init(address=address, logging_level="WARNING")
        else:
            # "local": a new instance even where RAY_ADDRESS or a `ray start` cluster is found
            ray.init(address="local", num_cpus=workers * threads, include_dashboard=False, logging_level="WARNING",
                     runtime_env={"env_vars": _package_path_env()})
    ctx = ray.data.DataContext.get_current()
    ctx.enable_progress_bars = progress
    ctx.execution_options.verbose_progress = False
    items = [{"segment": s.name, "shard": os.path.abspath(s.shard)} for s in todo]
    ds = ray.data.from_items(items, override_num_blocks=len(items))  # one block per segment
    with warnings.catch_warnings():
        # Ray 2.60 deprecates passing actor options (max_restarts, max_task_retries) through
        # map_batches' **ray_remote_args, to be removed in 2.64, and has no other way to bound the
        # retries: its default retries a task whose actor died without end, which would loop on
        # a segment that kills its worker every time. scripts/setup.sh pins Ray 2.60.
        warnings.filterwarnings("ignore", message=".*ray_remote_args.*deprecated", category=DeprecationWarning)
        ds = ds.map_batches(
            SegmentReplayer, batch_size=1, batch_format="numpy",
            compute=ray.data.ActorPoolStrategy(size=workers), num_cpus=threads,
            fn_constructor_kwargs=dict(model=os.path.abspath(model), out_dir=os.path.abspath(out_dir),
                                       fmt=fmt, backend=backend, threads=threads, device=device,
                                       skip_existing=skip_existing, crash_once=crash_once,
                                       cpu_precision=cpu_precision),
            max_restarts=-1, max_task_retries=retries)
    t0 = time.perf_counter()
    try:
        rows = ds.take_all()
    except Exception as e:  # not a segment's opvision.Error/OSError (those are rows): a bug
        raise Error(f"replay failed in a worker: {_last_line(e)} (Ray's log above has the "
                    "traceback)") from e
    wall = time.perf_counter() - t0
    rows = sorted(({k: (v.item() if hasattr(v, "item") else v) for k, v in r.items()} for r in rows),
                  key=lambda r: r["segment"])
    result = ReplayResult(rows, skipped, sum(r["frames"] for r in rows), wall, batch)
    failures = {r["segment"]: r["error"] for r in rows if r["status"] == "failed"}
    if failures:
        raise SegmentsFailed(failures, result)
    return result


# ------------------------------------------------------------------------------------ CLI
def main(argv: Optional[Sequence[str]] = None) -> int:
    ap = argparse.ArgumentParser(
        prog="python3 -m opvision.replay",
        description="Runs MODEL over every drive segment of DATASET_DIR on Ray Data (a pool of "
                    "worker actors, one opvision session each) and writes one output file per "
                    "segment to OUT_DIR.",
        epilog="DATASET_DIR: one shard per segment, <segment>.npz with one member per model input "
               "(named as the input, shape (F, *input shape), the input's dtype: F frames stacked "
               "on a first axis) or <segment>.npy for a single-input model. A batch-N MODEL "
               "(opvision compile --batch N) replays the same dataset N frames per inference: a "
               "frame is one sample, the last group of a segment is padded with zero frames whose "
               "outputs are discarded, and the outputs have the batch-1 layout. OUT_DIR/<segment>.npz "
               "holds one member per model output, shape (F, *output shape); "
               "OUT_DIR/<segment>.parquet one row per frame (see `pydoc opvision.replay`). "
               "Outputs are written to a temporary file and renamed, so they are whole or absent: "
               "segments whose output is already present and complete are skipped on a re-run "
               "(--no-skip replays them again). A worker that dies is restarted and its segment "
               "retried. On a cluster (--address), opvision must be installed on every node and "
               "the paths must be the same on all of them.")
    ap.add_argument("model", help="the model: a .opv artifact for --backend (a batch-N one, compile --batch N, "
                                  "runs N frames per inference), or an .onnx")
    ap.add_argument("dataset_dir", help="the directory of .npz/.npy shards, one per segment")
    ap.add_argument("out_dir", help="where the per-segment outputs go (created if missing)")
    ap.add_argument("--workers", type=int, default=1, help="worker actors, one session each (default 1)")
    ap.add_argument("--address", default=None,
                    help="Ray cluster address (e.g. ray://head:10001 or auto); default: start Ray "
                         "on this machine with num_cpus = workers * threads")
    ap.add_argument("--backend", default="cpu", help="the session backend (default cpu)")
    ap.add_argument("--threads", type=int, default=1, help="threads per worker session (default 1)")
    ap.add_argument("--device", default="", help="OpenCL device selector (opencl backend)")
    ap.add_argument("--cpu-precision", dest="cpu_precision", choices=["fp32", "bf16"], default="fp32",
                    help="cpu backend: bf16 runs the dense convolutions in bf16 with fp32 accumulation "
                         "where the CPU has native bf16 (opt-in; more error), default fp32")
    ap.add_argument("--format", dest="fmt", choices=FORMATS, default="npz", help="output format (default npz)")
    ap.add_argument("--retries", type=int, default=3,
                    help="retries of a segment whose worker died (default 3)")
    ap.add_argument("--no-skip", dest="skip", action="store_false",
                    help="replay segments whose output is already complete, too")
    ap.add_argument("--no-progress", dest="progress", action="store_false", help="no progress bar")
    a = ap.parse_args(argv)
    try:
        r = replay(a.model, a.dataset_dir, a.out_dir, workers=a.workers, backend=a.backend,
                   threads=a.threads, fmt=a.fmt, address=a.address, device=a.device,
                   retries=a.retries, skip_existing=a.skip, progress=a.progress,
                   cpu_precision=a.cpu_precision)
    except Error as e:
        print(f"opvision.replay: error: {e}", file=sys.stderr)
        return 2
    finally:
        if "ray" in sys.modules and sys.modules["ray"] is not None and sys.modules["ray"].is_initialized():
            sys.modules["ray"].shutdown()  # stop the local instance (or leave the cluster) before exit
    if not r.segments:
        print(f"nothing to replay: all {len(r.skipped)} segments are complete in {a.out_dir} "
              "(--no-skip replays them again)")
        return 0
    present = sum(1 for s in r.segments if s["status"] == "present")
    print(f"replayed {len(r.segments)} segments ({r.frames} frames) in {r.wall_seconds:.2f} s: "
          f"{r.frames_per_second:.1f} frames/s with {a.workers} worker(s)"
          + (f", {r.batch} frames per inference" if r.batch > 1 else "") + f" into {a.out_dir}"
          + (f"; {len(r.skipped)} complete before this run, skipped" if r.skipped else "")
          + (f"; {present} found complete on a retry" if present else ""))
    return 0


if __name__ == "__main__":
    # Run through the package's module (not this file as __main__), so Ray pickles the actor
    # class by reference to opvision.replay.
    from opvision.replay import main as _main
    sys.exit(_main())
