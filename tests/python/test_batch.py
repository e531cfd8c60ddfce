"""compile --batch N through the CLI: batch-N artifacts verified against onnxruntime (a batch-1
reference checked in every sample slot, and a batch-N reference computed by onnxruntime on N
different inputs where the ONNX model's batch is symbolic), inspect's batch line, --help, and
clear refusals (bad values, models that cannot be batched); and the same through the Python API,
opvision.compile(..., batch=N)."""
import numpy as np
import onnx
import pytest
from onnx import helper

from opv_util import assert_error, assert_verify_ok, describe, load_npz, ort_run, save_uint8_reference

SMALL = ["--height", "64", "--width", "128", "--widths", "16,32,48,64", "--depths", "1,1,2,1", "--hidden", "64"]


@pytest.fixture(scope="module")
def small(cli, tmp_path_factory):
    """A make-model variant, its onnxruntime batch-1 reference, and the same model with a symbolic
    batch with a batch-3 reference on three different inputs."""
    root = tmp_path_factory.mktemp("batch")
    path = root / "m.onnx"
    p = cli.run("make-model", path, *SMALL, "--fp16", "--seed", "3")
    assert p.returncode == 0, describe(p)
    ref1 = root / "ref1.npz"
    feeds = save_uint8_reference(path, ref1, 5)
    m = onnx.load(str(path))
    rng = np.random.default_rng(6)
    for v in list(m.graph.input) + list(m.graph.output):  # symbolic leading dimension
        v.type.tensor_type.shape.dim[0].dim_param = "N"
    sym = root / "sym.onnx"
    onnx.save(m, str(sym))
    feeds3 = {k: rng.integers(0, 256, (3,) + v.shape[1:], dtype=np.uint8) for k, v in feeds.items()}
    ref3 = root / "ref3.npz"
    np.savez(ref3, **feeds3, **ort_run(str(sym), feeds3))
    return path, ref1, sym, ref3, root


@pytest.mark.parametrize("backend", ["reference", "cpu"])
def test_batch_artifact_verifies_against_batch1_reference(cli, small, backend):
    path, ref1, _, _, root = small
    art = root / f"b3_{backend}.opv"
    p = cli.run("compile", path, "-o", art, "--target", backend, "--batch", "3")
    assert p.returncode == 0, describe(p)
    p, rel, _ = cli.verify(art, ref1, backend)
    assert p.returncode == 0 and rel is not None and rel < 1e-2, describe(p)
    assert "all 3 slots compared" in p.stderr, describe(p)
    p = cli.run("inspect", art)
    assert p.returncode == 0 and "batch 3 (compile --batch; inputs img[3,12,64,128]" in p.stdout, describe(p)


def test_symbolic_batch_model_against_onnxruntime_at_batch3(cli, small):
    _, _, sym, ref3, root = small
    art = root / "sym_b3.opv"
    p = cli.run("compile", sym, "-o", art, "--target", "cpu", "--batch", "3")
    assert p.returncode == 0, describe(p)
    assert_verify_ok(cli, art, ref3, "cpu")  # three different samples, onnxruntime's outputs
    # Without --batch the symbolic dim imports as 1: a batch-3 reference is refused by shape.
    p = cli.run("verify", sym, "--ref", ref3, "--backend", "cpu")
    assert_error(p, "has shape")


def test_batch_help_and_bad_values(cli, small, tmp_path):
    path = small[0]
    p = cli.run("compile", "--help")
    assert p.returncode == 0 and "--batch" in p.stdout and "model's own batch" in p.stdout, describe(p)
    for bad in ("0", "-2", "x", "100000"):
        assert_error(cli.run("compile", path, "-o", tmp_path / "x.opv", "--batch", bad), "--batch")
    assert not (tmp_path / "x.opv").exists()


def _unbatchable_model(tmp_path):
    """A model whose Softmax works along axis 0 (the batch): no batch-N form exists."""
    x = helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [1, 8])
    y = helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, [1, 8])
    node = helper.make_node("Softmax", ["x"], ["y"], name="over_batch", axis=0)
    m = helper.make_model(helper.make_graph([node], "g", [x], [y]), opset_imports=[helper.make_opsetid("", 17)])
    path = tmp_path / "sm.onnx"
    onnx.save(m, str(path))
    return path


def test_unbatchable_model_is_refused_naming_the_node(cli, tmp_path):
    path = _unbatchable_model(tmp_path)
    p = cli.run("compile", path, "-o", tmp_path / "sm.opv", "--batch", "4")
    assert_error(p, "cannot batch the model to 4", "over_batch", "axis 0, the batch")
    assert not (tmp_path / "sm.opv").exists()


@pytest.mark.parametrize("backend", ["reference", "cpu"])
def test_python_compile_batch_matches_batch1_reference_in_every_slot(opvision, small, backend):
    """opvision.compile(batch=3): inputs and outputs [3, ...]; three different samples run at once
    give, slot by slot, onnxruntime's batch-1 outputs on each (and the slots differ)."""
    path, ref1, _, _, root = small
    art = root / f"py_b3_{backend}.opv"
    opvision.compile(path, art, target=backend, batch=3)
    s = opvision.InferenceSession(art, backend=backend)
    ref = load_npz(ref1)
    names = [o.name for o in s.get_outputs()]
    assert [i.shape[0] for i in s.get_inputs()] == [3] * len(s.get_inputs())
    assert [o.shape[0] for o in s.get_outputs()] == [3] * len(names)
    rng = np.random.default_rng(11)
    others = {i.name: rng.integers(0, 256, (1,) + tuple(i.shape[1:]), dtype=np.uint8) for i in s.get_inputs()}
    for slot in range(3):  # the reference sample in `slot`, other samples around it
        feed = {k: np.concatenate([ref[k] if j == slot else others[k] for j in range(3)]) for k in others}
        outs = s.run(None, feed)
        for name, out in zip(names, outs):
            want = ref[name].astype(np.float64)
            got = out[slot:slot + 1].astype(np.float64)
            rel = np.linalg.norm(got - want) / max(np.linalg.norm(want), 1e-30)
            assert rel < 1e-2, f"{backend} {name} slot {slot}: rel_l2 {rel}"
            other = (slot + 1) % 3
            assert not np.array_equal(out[other], out[slot]), f"{name}: slots {other} and {slot} are equal"


def test_python_compile_batch_matches_cli(opvision, cli, small):
    """batch=3 is the CLI's --batch 3: the two artifacts give bit-identical outputs and both report
    InferenceSession.batch 3; batch=None keeps the model's batch of 1 and reports None."""
    path, _, _, _, root = small
    py_art, cli_art, b1 = root / "py_cmp.opv", root / "cli_cmp.opv", root / "py_b1.opv"
    opvision.compile(path, py_art, target="cpu", batch=3)
    p = cli.run("compile", path, "-o", cli_art, "--target", "cpu", "--batch", "3")
    assert p.returncode == 0, describe(p)
    a, b = opvision.InferenceSession(py_art), opvision.InferenceSession(cli_art)
    assert a.batch == 3 and b.batch == 3   # plan meta batch, as `inspect` prints it
    rng = np.random.default_rng(2)
    feed = {i.name: rng.integers(0, 256, i.shape, dtype=np.uint8) for i in a.get_inputs()}
    for x, y in zip(a.run(None, feed), b.run(None, feed)):
        assert np.array_equal(x, y)
    opvision.compile(path, b1, target="cpu", batch=None)
    assert [i.shape[0] for i in opvision.InferenceSession(b1).get_inputs()] == [1, 1]
    assert opvision.InferenceSession(b1).batch is None   # the model's own batch: nothing recorded
    assert opvision.InferenceSession(path).batch is None  # an .onnx compiled in memory


def test_python_compile_batch_bad_values(opvision, small, tmp_path):
    path = small[0]
    out = tmp_path / "x.opv"
    assert opvision.MAX_COMPILE_BATCH == 4096
    for bad, needle in ((0, "batch must be in 1..4096"), (-2, "got -2"), (4097, "got 4097"),
                        (10**30, "batch must be in"), ("3", "batch must be an int"), (3.0, "got float"),
                        (True, "got bool")):
        with pytest.raises(opvision.InvalidArgument, match=needle):
            opvision.compile(path, out, target="cpu", batch=bad)
    assert not out.exists()
    opvision.compile(path, out, target="reference", batch=np.int64(2))  # numpy integers are ints
    assert opvision.InferenceSession(out, backend="reference").get_inputs()[0].shape[0] == 2


def test_python_compile_unbatchable_model_names_the_node(opvision, tmp_path):
    path = _unbatchable_model(tmp_path)
    with pytest.raises(opvision.InvalidGraph, match="cannot batch the model to 4.*over_batch.*axis 0, the batch"):
        opvision.compile(path, tmp_path / "sm.opv", batch=4)
    assert not (tmp_path / "sm.opv").exists()
