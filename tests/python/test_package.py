"""The Python package `opvision` (python/opvision + src/python), imported from the build directory
(conftest.py's `opvision` fixture): results against onnxruntime on generated models and the shared
fixture, compile options, the zero-copy per-frame loop (run_into), every input check with the
exception class and message it raises, threads (GIL released, sessions in parallel), the README's
Python quick start run as written, and the timelines of `opvision bench --trace` and
InferenceSession.profile()."""
import json
import os
import pathlib
import re
import subprocess
import sys
import threading
import time

import numpy as np
import onnx
import pytest
from onnx import helper

from opv_util import describe, load_npz, make_model, ort_run, readme_python_block

SMALL = ["--height", "64", "--width", "128", "--widths", "16,32,48,64", "--depths", "1,1,2,1",
         "--hidden", "64"]
# DESIGN.md's bounds on rel_l2 and max_abs_rel against onnxruntime (as tests/python/conformance.py).
BOUNDS = {"reference": 1e-5, "cpu": 1e-4}
F16_BOUND = 1e-2


def errors(out, ref):
    """DESIGN.md's metrics: (||out - ref|| / ||ref||, max|out - ref| / max|ref|)."""
    out, ref = out.astype(np.float64), ref.astype(np.float64)
    d = np.abs(out - ref)
    return float(np.linalg.norm(d) / (np.linalg.norm(ref) or 1.0)), float(d.max() / (np.abs(ref).max() or 1.0))


def assert_close(out, ref, bound):
    assert out.dtype == ref.dtype and out.shape == ref.shape, (out.dtype, out.shape, ref.dtype, ref.shape)
    rel, mx = errors(out, ref)
    assert rel <= bound and mx <= bound, (rel, mx, bound)


def uint8_feed(session, seed):
    rng = np.random.default_rng(seed)
    return {i.name: rng.integers(0, 256, i.shape, dtype=np.uint8) for i in session.get_inputs()}


@pytest.fixture(scope="module")
def models(cli, tmp_path_factory):
    """make-model variants: small fp32, small fp16, and the default size (for the GIL test)."""
    root = tmp_path_factory.mktemp("pkg_models")
    made = {}
    for tag, args in (("fp32", SMALL), ("fp16", SMALL + ["--fp16", "--seed", "5"]), ("default", [])):
        path = root / f"{tag}.onnx"
        p = cli.run("make-model", path, *args)
        assert p.returncode == 0, describe(p)
        made[tag] = path
    return made


# ------------------------------------------------------------------------------ the API itself
def test_version_backends_and_error_classes(opvision):
    assert re.fullmatch(r"\d+\.\d+\.\d+", opvision.__version__)
    assert {"reference", "cpu"} <= set(opvision.available_backends())
    for cls in (opvision.InvalidArgument, opvision.InvalidGraph, opvision.LoadError, opvision.BackendError):
        assert issubclass(cls, opvision.Error)
    assert issubclass(opvision.Error, RuntimeError) and issubclass(opvision.InvalidArgument, ValueError)


def test_node_args_match_onnxruntime(opvision, models):
    import onnxruntime as ort
    s = opvision.InferenceSession(models["fp32"])
    ref = ort.InferenceSession(str(models["fp32"]), providers=["CPUExecutionProvider"])
    for mine, theirs in ((s.get_inputs(), ref.get_inputs()), (s.get_outputs(), ref.get_outputs())):
        assert [(a.name, a.shape, a.type) for a in mine] == [(b.name, b.shape, b.type) for b in theirs]
    assert s.get_inputs()[0].dtype == np.uint8 and s.get_outputs()[0].dtype == np.float32
    assert s.backend == "cpu" and s.get_providers() == ["cpu"]
    assert "img" in repr(s) and "NodeArg" in repr(s.get_inputs()[0])


@pytest.mark.parametrize("tag,backend", [("fp32", "cpu"), ("fp32", "reference"), ("fp16", "cpu")])
def test_generated_model_matches_onnxruntime(opvision, models, tmp_path, tag, backend):
    """compile -> .opv -> session, and the .onnx compiled in memory: both equal onnxruntime within
    DESIGN.md's bound, and bit-identical to each other (the artifact reload changes nothing)."""
    onnx_path = models[tag]
    opv_path = tmp_path / "m.opv"
    opvision.compile(onnx_path, opv_path, target=backend)
    from_artifact = opvision.InferenceSession(opv_path, backend=backend, threads=2)
    from_onnx = opvision.InferenceSession(str(onnx_path), backend=backend, threads=2)
    for seed in (1, 2):
        feed = uint8_feed(from_artifact, seed)
        want = ort_run(str(onnx_path), feed)
        got = from_artifact.run(None, feed)
        assert len(got) == len(want)
        for o, arr in zip(from_artifact.get_outputs(), got):
            assert_close(arr, want[o.name], F16_BOUND if tag == "fp16" else BOUNDS[backend])
        again = from_onnx.run(None, feed)
        assert all(np.array_equal(a, b) for a, b in zip(got, again))


def test_fixture_matches_onnxruntime(opvision, fixture_paths):
    model, ref_path = fixture_paths
    ref = load_npz(ref_path)
    s = opvision.InferenceSession(model, backend="cpu", threads=2)
    feed = {i.name: ref[i.name] for i in s.get_inputs()}
    (out,) = s.run(["outputs"], feed)
    assert_close(out, ref["outputs"], F16_BOUND)  # fp16 model
    # The opt-in bf16 convolutions stay within the same reduced-precision bound.
    b = opvision.InferenceSession(model, backend="cpu", threads=2, cpu_precision="bf16")
    (out_b,) = b.run(["outputs"], feed)
    assert_close(out_b, ref["outputs"], F16_BOUND)


def test_compile_passes_option(opvision, cli, models, tmp_path):
    """passes=None runs the target's default plan passes, a list only those, [] none of them (the
    artifact's meta records which ran: `opvision inspect`); results agree. Bad names are the
    caller's mistake."""
    def plan_passes(path):
        p = cli.run("inspect", path)
        assert p.returncode == 0, describe(p)
        m = re.search(r"^meta .*?plan_passes=(\S*)", p.stdout, re.M)
        return m.group(1).split(",") if m and m.group(1) else []

    runs = {}
    for tag, passes in (("default", None), ("dedupe", ["dedupe"]), ("none", [])):
        path = tmp_path / f"{tag}.opv"
        opvision.compile(models["fp32"], path, target="cpu", passes=passes)
        runs[tag] = plan_passes(path)
        s = opvision.InferenceSession(path)
        feed = uint8_feed(s, 3)
        assert_close(s.run(None, feed)[0], ort_run(str(models["fp32"]), feed)["outputs"], BOUNDS["cpu"])
    assert len(runs["default"]) > 1 and "dedupe" in runs["default"], runs
    assert runs["dedupe"] == ["dedupe"] and runs["none"] == [], runs
    with pytest.raises(opvision.InvalidArgument, match="unknown plan pass 'nope' for target cpu"):
        opvision.compile(models["fp32"], tmp_path / "x.opv", passes=["nope"])
    with pytest.raises(opvision.InvalidArgument, match="unknown pass 'nope'"):
        opvision.compile(models["fp32"], tmp_path / "x.opv", disable_passes=["nope"])
    with pytest.raises(opvision.InvalidArgument, match="unknown target 'tpu'"):
        opvision.compile(models["fp32"], tmp_path / "x.opv", target="tpu")
    with pytest.raises(opvision.InvalidArgument, match="passes must be a list of str"):
        opvision.compile(models["fp32"], tmp_path / "x.opv", passes="dedupe")
    assert not (tmp_path / "x.opv").exists()


def test_run_output_names_and_copies(opvision, models):
    s = opvision.InferenceSession(models["fp32"])
    f1, f2 = uint8_feed(s, 1), uint8_feed(s, 2)
    (first,) = s.run(["outputs"], f1)
    kept = first.copy()
    both = s.run(["outputs", "outputs"], f2)
    assert len(both) == 2 and np.array_equal(both[0], both[1])
    assert np.array_equal(first, kept), "a later run changed an earlier run's result"
    assert not np.array_equal(first, both[0]), "outputs do not follow inputs"
    assert first.flags.c_contiguous and first.flags.writeable and first.flags.owndata is not None
    with pytest.raises(opvision.InvalidArgument, match=r"unknown output 'nope' \(model outputs: outputs:f32\[1,"):
        s.run(["nope"], f1)


STAGED_SCRIPT = r"""
import sys, numpy as np
sys.path.insert(0, sys.argv[1])
import opvision
s = opvision.InferenceSession(sys.argv[2], backend=sys.argv[3])
st = s.staged_inputs()
assert list(st) == [i.name for i in s.get_inputs()], list(st)
for i in s.get_inputs():
    a = st[i.name]
    assert a.dtype == np.uint8 and list(a.shape) == list(i.shape) and a.flags.writeable, (a.dtype, a.shape)
again = s.staged_inputs()
assert all(np.shares_memory(st[k], again[k]) for k in st), "the same arrays every call"
rng = np.random.default_rng(7)
feed = {i.name: rng.integers(0, 256, size=i.shape, dtype=np.uint8) for i in s.get_inputs()}
other = {k: rng.integers(0, 256, size=v.shape, dtype=np.uint8) for k, v in feed.items()}
for k in st:
    np.copyto(st[k], feed[k])
(plain,) = s.run(None, feed)
(in_place,) = s.run(None, st)
assert np.array_equal(plain, in_place), "runs from the staged arrays compute what runs from copies do"
(from_other,) = s.run(None, other)
# The cuda backend reads its inputs from the staging these arrays view: a run from other arrays
# copies them there. Other backends' staged arrays are the session's own and stay as written.
viewed = all(np.array_equal(st[k], other[k]) for k in st)
kept = all(np.array_equal(st[k], feed[k]) for k in st)
print("viewed" if viewed else "kept" if kept else "neither")
del s, again
assert st[next(iter(st))].sum() >= 0  # the arrays keep the session (and its memory) alive
"""


@pytest.mark.parametrize("backend", ["cpu", "cuda"])
def test_staged_inputs(opvision, package_dir, cli, models, tmp_path, backend):
    """InferenceSession.staged_inputs(): arrays of the memory the backend reads the inputs from;
    on cuda (run on cudasim here) the pinned staging itself, so runs from them copy nothing."""
    env = dict(os.environ)
    model = models["fp16"]
    if backend == "cuda":
        lib = pathlib.Path(cli.path).resolve().parent / "libopv_cudasim.so"
        if not lib.is_file():
            pytest.skip("this build has no cuda target")
        env["OPV_CUDA_DRIVER"] = str(lib)
        art = tmp_path / "m.opv"
        p = cli.run("compile", models["fp16"], "--target", "cuda", "--cuda-arch", "compute_90", "-o", art)
        assert p.returncode == 0, describe(p)
        model = art
    p = subprocess.run([sys.executable, "-c", STAGED_SCRIPT, str(package_dir), str(model), backend],
                       capture_output=True, text=True, env=env, timeout=600)
    assert p.returncode == 0, p.stdout + p.stderr
    assert p.stdout.split()[-1] == ("viewed" if backend == "cuda" else "kept"), p.stdout + p.stderr


DEVICE_SCRIPT = r"""
import ctypes, sys, numpy as np
sys.path.insert(0, sys.argv[1])
import opvision
s = opvision.InferenceSession(sys.argv[2], backend="cuda", cuda_inputs="device")
dev = s.device_inputs()
assert list(dev) == [i.name for i in s.get_inputs()], list(dev)
for i in s.get_inputs():
    d = dev[i.name]
    cai = d.__cuda_array_interface__
    assert d.ptr and cai["data"] == (d.ptr, False) and cai["version"] == 3, cai
    assert list(cai["shape"]) == list(i.shape) and np.dtype(cai["typestr"]) == np.uint8, cai
rng = np.random.default_rng(11)
feed = {i.name: rng.integers(0, 256, size=i.shape, dtype=np.uint8) for i in s.get_inputs()}
other = {k: rng.integers(0, 256, size=v.shape, dtype=np.uint8) for k, v in feed.items()}
(first,) = s.run(None, feed)
(again,) = s.run_device_inputs()
assert np.array_equal(first, again), "run_device_inputs runs on what the last run uploaded"
# cudasim's device memory is host memory: write the other frames at the device addresses, as a
# caller's own GPU code would.
for k, d in dev.items():
    ctypes.memmove(d.ptr, other[k].ctypes.data, other[k].nbytes)
(written,) = s.run_device_inputs([s.get_outputs()[0].name])
c = opvision.InferenceSession(sys.argv[2], backend="cuda", cuda_inputs="copy", cuda_code="ptx")
assert c.device_inputs() == {}
(want,) = c.run(None, other)
assert np.array_equal(written, want) and not np.array_equal(written, first), "outputs follow the written inputs"
try:
    c.run_device_inputs()
    raise SystemExit("run_device_inputs ran on a session without device inputs")
except opvision.BackendError as e:
    assert "is not kept on the device" in str(e), e
try:
    opvision.InferenceSession(sys.argv[2], backend="cuda", cuda_inputs="devices")
    raise SystemExit("cuda_inputs='devices' accepted")
except opvision.InvalidArgument as e:
    assert "cuda_inputs must be 'auto', 'copy', 'mapped' or 'device'" in str(e), e
try:
    opvision.InferenceSession(sys.argv[2], backend="cuda", cuda_code="sass")
    raise SystemExit("cuda_code='sass' accepted")
except opvision.InvalidArgument as e:
    assert "cuda_code must be 'auto' or 'ptx', got 'sass'" in str(e), e
print("device inputs ok")
"""


def test_device_inputs(opvision, package_dir, cli, models, tmp_path):
    """InferenceSession(cuda_inputs="device"): device_inputs() gives each input's GPU address with
    __cuda_array_interface__; run_device_inputs() runs on the last run's inputs, or on what the
    caller wrote there (on cudasim, whose device memory is host memory, written with ctypes), the
    same as a copying session's run that JIT-compiles the PTX (cuda_code="ptx"); a session without
    device inputs refuses it; the cpu backend has none."""
    lib = pathlib.Path(cli.path).resolve().parent / "libopv_cudasim.so"
    if not lib.is_file():
        pytest.skip("this build has no cuda target")
    art = tmp_path / "m.opv"
    p = cli.run("compile", models["fp16"], "--target", "cuda", "--cuda-arch", "compute_90", "-o", art)
    assert p.returncode == 0, describe(p)
    p = subprocess.run([sys.executable, "-c", DEVICE_SCRIPT, str(package_dir), str(art)], capture_output=True,
                       text=True, env=dict(os.environ, OPV_CUDA_DRIVER=str(lib)), timeout=600)
    assert p.returncode == 0 and "device inputs ok" in p.stdout, p.stdout + p.stderr
    s = opvision.InferenceSession(models["fp16"], backend="cpu", cuda_inputs="device")
    assert s.device_inputs() == {}
    with pytest.raises(opvision.BackendError, match="keeps no inputs in device memory"):
        s.run_device_inputs()


def test_modeld_loop_run_into(opvision, models):
    """openpilot modeld's pattern: two uint8 frame buffers allocated once and refilled in place
    every frame, one output buffer written in place, 100 frames. Every frame equals a plain run()
    (which equals onnxruntime, checked on a sample), the arrays are never replaced, and a frame
    that repeats gives bit-identical outputs."""
    path = models["fp32"]
    s = opvision.InferenceSession(path, backend="cpu", threads=2)
    img, big_img = (np.zeros(i.shape, np.uint8) for i in s.get_inputs())
    out = s.allocate_outputs()
    buf = out["outputs"]
    addresses = (img.ctypes.data, big_img.ctypes.data, buf.ctypes.data)
    feed = {"img": img, "big_img": big_img}
    rng = np.random.default_rng(7)
    first = None
    for frame in range(100):
        if frame == 50:
            img[...], big_img[...] = first_inputs  # a repeated frame
        else:
            img[...] = rng.integers(0, 256, img.shape, dtype=np.uint8)
            big_img[...] = rng.integers(0, 256, big_img.shape, dtype=np.uint8)
        s.run_into(feed, out)
        assert out["outputs"] is buf
        if frame == 0:
            first, first_inputs = buf.copy(), (img.copy(), big_img.copy())
        if frame == 50:
            assert np.array_equal(buf, first), "a repeated frame is not bit-identical"
        if frame % 10 == 0:
            assert np.array_equal(buf, s.run(None, feed)[0])
        if frame % 33 == 0:
            assert_close(buf, ort_run(str(path), {"img": img, "big_img": big_img})["outputs"], BOUNDS["cpu"])
    assert (img.ctypes.data, big_img.ctypes.data, buf.ctypes.data) == addresses


def test_run_into_list_and_subset(opvision, tmp_path):
    """Two outputs: run_into with a list (model order) and with a dict naming one of them."""
    x = np.linspace(-2, 2, 24, dtype=np.float32).reshape(2, 3, 4)
    model = make_model([helper.make_node("Relu", ["x"], ["r"]), helper.make_node("Neg", ["x"], ["n"])],
                       {"x": x}, ["r", "n"])
    path = tmp_path / "two.onnx"
    onnx.save(model, str(path))
    s = opvision.InferenceSession(path, backend="reference")
    assert [o.name for o in s.get_outputs()] == ["r", "n"]
    r, n = np.full((2, 3, 4), 9, np.float32), np.full((2, 3, 4), 9, np.float32)
    s.run_into({"x": x}, [r, n])
    assert np.array_equal(r, np.maximum(x, 0)) and np.array_equal(n, -x)
    only = np.zeros((2, 3, 4), np.float32)
    s.run_into({"x": x * 2}, {"n": only})
    assert np.array_equal(only, -2 * x)
    with pytest.raises(opvision.InvalidArgument, match="1 output arrays given, the model has 2 outputs"):
        s.run_into({"x": x}, [r])


# ---------------------------------------------------------------------------- bad input, named
@pytest.fixture(scope="module")
def small_session(opvision, models):
    return opvision.InferenceSession(models["fp32"], backend="cpu")


def _feed_with(session, **changes):
    feed = uint8_feed(session, 0)
    for k, v in changes.items():
        if v is None:
            del feed[k]
        else:
            feed[k] = v
    return feed


SHAPE = (1, 12, 64, 128)


@pytest.mark.parametrize("case,feed_changes,needle", [
    ("unknown name", {"image": np.zeros(SHAPE, np.uint8)}, "unknown input 'image' (model inputs: img:u8[1,12,64,128]"),
    ("missing", {"big_img": None}, "missing input 'big_img'"),
    ("shape", {"img": np.zeros((1, 12, 64, 64), np.uint8)},
     "input 'img' must be u8[1,12,64,128], got u8[1,12,64,64] (the shape differs)"),
    ("dtype", {"img": np.zeros(SHAPE, np.float32)},
     "input 'img' must be u8[1,12,64,128], got f32[1,12,64,128] (the dtype differs)"),
    ("non-contiguous", {"img": np.zeros((1, 12, 128, 64), np.uint8).transpose(0, 1, 3, 2)},
     "input 'img' (uint8[1,12,64,128]) is not C-contiguous"),
    ("strided", {"img": np.zeros((1, 12, 64, 256), np.uint8)[..., ::2]}, "input 'img' (uint8[1,12,64,128]) is not C-contiguous"),
    ("not an array", {"img": [[1, 2]]}, "input 'img' must be a numpy array, got list"),
    ("unsupported dtype", {"img": np.zeros(SHAPE, np.complex64)}, "input 'img' has dtype"),
    ("misaligned", {"img": np.zeros(4 * int(np.prod(SHAPE)) + 4, np.uint8)[1:-3].view(np.float32).reshape(SHAPE)},
     "input 'img' is not aligned to its 4-byte elements"),
    ("name type", {3: np.zeros(SHAPE, np.uint8)}, "input names must be str, got int"),
])
def test_input_errors(opvision, small_session, case, feed_changes, needle):
    feed = _feed_with(small_session, **{k: v for k, v in feed_changes.items() if isinstance(k, str)})
    feed.update({k: v for k, v in feed_changes.items() if not isinstance(k, str)})
    for call in (lambda: small_session.run(None, feed),
                 lambda: small_session.run_into(feed, small_session.allocate_outputs())):
        with pytest.raises(opvision.InvalidArgument) as e:
            call()
        assert needle in str(e.value), (case, str(e.value))
    small_session.run(None, uint8_feed(small_session, 0))  # the session still works


@pytest.mark.parametrize("case,outputs,needle", [
    ("shape", {"outputs": np.zeros((1, 5), np.float32)}, "output 'outputs' must be f32[1,184], got f32[1,5]"),
    ("dtype", {"outputs": np.zeros((1, 184), np.float64)}, "output 'outputs' must be f32[1,184], got f64[1,184]"),
    ("unknown", {"out": np.zeros((1, 184), np.float32)}, "unknown output 'out' (model outputs: outputs:f32[1,184])"),
    ("read-only", {"outputs": np.broadcast_to(np.zeros(1, np.float32), (1, 184))}, "must be a writeable numpy array"),
    ("non-contiguous", {"outputs": np.zeros((1, 368), np.float32)[:, ::2]}, "output 'outputs' (float32[1,184]) is not C-contiguous"),
    ("not a container", np.zeros((1, 184), np.float32), "outputs must be a dict {name: array} or a list of arrays"),
])
def test_output_errors(opvision, small_session, case, outputs, needle):
    with pytest.raises(opvision.InvalidArgument) as e:
        small_session.run_into(uint8_feed(small_session, 0), outputs)
    assert needle in str(e.value), (case, str(e.value))


def test_feed_and_argument_errors(opvision, small_session, models):
    with pytest.raises(opvision.InvalidArgument, match="the input feed must be a dict"):
        small_session.run(None, [np.zeros(SHAPE, np.uint8)])
    with pytest.raises(opvision.InvalidArgument, match="output_names must be a list of str or None"):
        small_session.run("outputs", uint8_feed(small_session, 0))
    with pytest.raises(opvision.InvalidArgument, match=r"unknown backend 'tpu' \(available: reference, cpu"):
        opvision.InferenceSession(models["fp32"], backend="tpu")
    with pytest.raises(opvision.InvalidArgument, match="threads must be in 0..1024"):
        opvision.InferenceSession(models["fp32"], threads=-1)
    with pytest.raises(opvision.InvalidArgument, match="threads must be an int"):
        opvision.InferenceSession(models["fp32"], threads="2")
    with pytest.raises(opvision.InvalidArgument, match="path must be a path"):
        opvision.InferenceSession(None)
    with pytest.raises(opvision.InvalidArgument, match="cpu_precision must be 'fp32' or 'bf16', got 'fp8'"):
        opvision.InferenceSession(models["fp32"], cpu_precision="fp8")


def test_load_and_compile_errors(opvision, models, tmp_path):
    for missing in ("nothing.opv", "nothing.onnx"):
        with pytest.raises(opvision.LoadError, match=missing):
            opvision.InferenceSession(tmp_path / missing)
    with pytest.raises(opvision.LoadError, match="nothing.onnx"):
        opvision.compile(tmp_path / "nothing.onnx", tmp_path / "x.opv")
    with pytest.raises(opvision.LoadError):
        opvision.InferenceSession(tmp_path)  # a directory
    good = tmp_path / "good.opv"
    opvision.compile(models["fp32"], good, target="cpu")
    data = bytearray(good.read_bytes())
    truncated, corrupted = tmp_path / "truncated.opv", tmp_path / "corrupted.opv"
    truncated.write_bytes(bytes(data[: len(data) // 2]))
    data[len(data) // 2] ^= 0xFF
    corrupted.write_bytes(bytes(data))
    for bad in (truncated, corrupted):
        with pytest.raises(opvision.LoadError):
            opvision.InferenceSession(bad)
    with pytest.raises(opvision.LoadError, match="compiled for backend 'cpu', not 'reference'"):
        opvision.InferenceSession(good, backend="reference")
    garbage = tmp_path / "garbage.onnx"
    garbage.write_bytes(b"not a protobuf at all \xff\xff")
    for call in (lambda: opvision.InferenceSession(garbage), lambda: opvision.compile(garbage, tmp_path / "g.opv")):
        with pytest.raises(opvision.InvalidGraph, match="garbage.onnx"):
            call()
    # an op opvision does not support: named, with its node
    unsupported = make_model([helper.make_node("Det", ["x"], ["y"], name="the_det")], {"x": np.zeros((3, 3), np.float32)}, ["y"])
    path = tmp_path / "det.onnx"
    onnx.save(unsupported, str(path))
    with pytest.raises(opvision.InvalidGraph, match="Det"):
        opvision.InferenceSession(path)


# ------------------------------------------------------------------------------------- threads
def test_gil_released_while_running(opvision, models):
    """While a run (the default-size model on the reference backend, ~0.4 s here) is in C++, the
    main thread keeps running Python: its longest pause is far below one run."""
    s = opvision.InferenceSession(models["default"], backend="reference")
    feed = uint8_feed(s, 0)
    t0 = time.perf_counter()
    s.run(None, feed)
    one_run = time.perf_counter() - t0
    worker = threading.Thread(target=lambda: [s.run(None, feed) for _ in range(2)])
    worker.start()
    last, longest = time.perf_counter(), 0.0
    while worker.is_alive():
        now = time.perf_counter()
        longest, last = max(longest, now - last), now
    worker.join()
    assert longest < one_run / 2, f"the main thread stalled {longest:.3f} s during runs of {one_run:.3f} s"


def test_two_sessions_in_two_threads(opvision, models):
    """Two sessions (one per model) run in two threads at once, 20 runs each with changing inputs:
    every result equals the single-threaded one; a third thread sharing a session takes turns."""
    sessions = {tag: opvision.InferenceSession(models[tag], backend="cpu", threads=1) for tag in ("fp32", "fp16")}
    feeds = {tag: [uint8_feed(s, seed) for seed in range(20)] for tag, s in sessions.items()}
    expected = {tag: [sessions[tag].run(None, f)[0] for f in feeds[tag]] for tag in sessions}
    got, failures = {tag: [None] * 20 for tag in sessions}, []

    def work(tag, indices):
        try:
            for i in indices:
                got[tag][i] = sessions[tag].run(None, feeds[tag][i])[0]
        except Exception as e:  # noqa: BLE001 (reported below)
            failures.append(repr(e))

    threads = [threading.Thread(target=work, args=("fp32", range(0, 20))),
               threading.Thread(target=work, args=("fp16", range(0, 10))),
               threading.Thread(target=work, args=("fp16", range(10, 20)))]  # shares the fp16 session
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not failures, failures
    for tag in sessions:
        for i in range(20):
            assert np.array_equal(got[tag][i], expected[tag][i]), (tag, i)


# --------------------------------------------------------------------------------------- README
def test_readme_python_quick_start(opvision, package_dir, cli, tmp_path):
    """The README's Python block, run as written in a fresh interpreter, in a directory where the
    README's `opvision make-model model.onnx` step has been done (at the small test size)."""
    p = cli.run("make-model", tmp_path / "model.onnx", *SMALL)
    assert p.returncode == 0, describe(p)
    script = tmp_path / "quick_start.py"
    script.write_text(readme_python_block("Python quick start"))
    env = dict(os.environ, PYTHONPATH=str(package_dir) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    r = subprocess.run([sys.executable, str(script)], cwd=tmp_path, capture_output=True, text=True, timeout=300,
                       env=env)
    assert r.returncode == 0, f"stdout:\n{r.stdout}\nstderr:\n{r.stderr}"
    assert (tmp_path / "model.opv").exists()


# --------------------------------------------------------------------------------------- traces
def check_trace(trace, runs):
    """A Chrome trace of `runs` inferences: per inference one "run" span holding one span per plan
    call, in order and not overlapping (the cpu and reference backends run calls one after
    another), each with its kernel name, op, node, bytes and FLOPs."""
    events = trace["traceEvents"]
    assert {e["name"] for e in events if e["ph"] == "M"} == {"process_name", "thread_name"}
    spans = [e for e in events if e["ph"] == "X"]
    inferences = [e for e in spans if e["cat"] == "run"]
    assert len(inferences) == runs
    calls = [e for e in spans if e["cat"] != "run"]
    n = len(calls) // runs
    assert n > 10 and len(calls) == n * runs
    for r, inf in enumerate(inferences):
        mine = calls[r * n:(r + 1) * n]
        assert [c["args"]["call"] for c in mine] == list(range(n))
        end = inf["ts"]
        for c in mine:
            assert c["dur"] >= 0 and c["ts"] >= end - 1.0, c  # in order, no overlap (1 us rounding)
            end = c["ts"] + c["dur"]
        assert end <= inf["ts"] + inf["dur"] + 1.0, (end, inf)
    convs = [c for c in calls if c["cat"] == "Conv"]
    assert convs and all(c["name"].startswith("conv2d") and c["args"]["flops"] > 0 and c["args"]["bytes"] > 0
                         for c in convs)
    assert all(c["args"]["node"] for c in calls)
    return n


@pytest.mark.parametrize("backend", ["cpu", "reference"])
def test_bench_trace(cli, models, tmp_path, backend):
    out = tmp_path / "trace.json"
    p = cli.run("bench", models["fp32"], "--backend", backend, "--iters", "3", "--warmup", "0", "--trace", out)
    assert p.returncode == 0, describe(p)
    check_trace(json.loads(out.read_text()), 3)
    assert f"wrote {out}" in p.stderr


def test_session_profile(opvision, models, tmp_path):
    s = opvision.InferenceSession(models["fp32"], backend="cpu", threads=1)
    feed = uint8_feed(s, 0)
    path = tmp_path / "profile.json"
    trace = s.profile(feed, runs=2, path=path)
    n = check_trace(trace, 2)
    assert json.loads(path.read_text()) == trace
    assert str(models["fp32"]) in trace["traceEvents"][0]["args"]["name"]
    # the session still runs normally afterwards (profiling is off again)
    assert np.array_equal(s.run(None, feed)[0], s.run(None, feed)[0])
    with pytest.raises(opvision.InvalidArgument, match="runs must be in 1..1000"):
        s.profile(feed, runs=0)
    with pytest.raises(opvision.InvalidArgument, match="missing input 'big_img'"):
        s.profile({"img": feed["img"]})
    assert n > 10


def test_opencl_backend(opvision, cli, models, tmp_path):
    """The same API on the opencl backend (PoCL here; skipped without an OpenCL device): .onnx
    compiled for it in memory and a compiled artifact agree with onnxruntime at the fp16 bound
    (half-precision images), and profile() gives a trace (calls laid back to back from the
    queue's per-call times)."""
    if not cli.has_opencl():
        pytest.skip("no OpenCL device")
    opv = tmp_path / "m_cl.opv"
    opvision.compile(models["fp32"], opv, target="opencl")
    for path in (models["fp32"], opv):
        s = opvision.InferenceSession(path, backend="opencl")
        feed = uint8_feed(s, 4)
        assert_close(s.run(None, feed)[0], ort_run(str(models["fp32"]), feed)["outputs"], F16_BOUND)
    trace = s.profile(feed, runs=2)
    spans = [e for e in trace["traceEvents"] if e["ph"] == "X"]
    assert sum(e["cat"] == "run" for e in spans) == 2 and len(spans) > 2
