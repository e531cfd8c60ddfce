"""compile --batch N through the CLI: batch-N artifacts verified against onnxruntime (a batch-1
reference checked in every sample slot, and a batch-N reference computed by onnxruntime on N
different inputs where the ONNX model's batch is symbolic), inspect's batch line, --help, and
clear refusals (bad values, models that cannot be batched)."""
import numpy as np
import onnx
import pytest
from onnx import helper

from opv_util import assert_error, assert_verify_ok, describe, ort_run

SMALL = ["--height", "64", "--width", "128", "--widths", "16,32,48,64", "--depths", "1,1,2,1", "--hidden", "64"]


@pytest.fixture(scope="module")
def small(cli, tmp_path_factory):
    """A make-model variant, its onnxruntime batch-1 reference, and the same model with a symbolic
    batch with a batch-3 reference on three different inputs."""
    root = tmp_path_factory.mktemp("batch")
    path = root / "m.onnx"
    p = cli.run("make-model", path, *SMALL, "--fp16", "--seed", "3")
    assert p.returncode == 0, describe(p)
    m = onnx.load(str(path))
    rng = np.random.default_rng(5)
    feeds = {i.name: rng.integers(0, 256, [d.dim_value for d in i.type.tensor_type.shape.dim], dtype=np.uint8)
             for i in m.graph.input}
    ref1 = root / "ref1.npz"
    np.savez(ref1, **feeds, **ort_run(str(path), feeds))
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


def test_unbatchable_model_is_refused_naming_the_node(cli, tmp_path):
    x = helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [1, 8])
    y = helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, [1, 8])
    node = helper.make_node("Softmax", ["x"], ["y"], name="over_batch", axis=0)
    m = helper.make_model(helper.make_graph([node], "g", [x], [y]), opset_imports=[helper.make_opsetid("", 17)])
    path = tmp_path / "sm.onnx"
    onnx.save(m, str(path))
    p = cli.run("compile", path, "-o", tmp_path / "sm.opv", "--batch", "4")
    assert_error(p, "cannot batch the model to 4", "over_batch", "axis 0, the batch")
    assert not (tmp_path / "sm.opv").exists()
