"""The cpu backend's fused steps (src/backend/cpu/cpu_fused.cpp) against onnxruntime, at 1 and 2
threads: GEMV runs (consecutive single-row Gemm calls run in one OpenMP region by levels, with
transB 0/1, with and without bias and Relu, K and N off the vector width, heads that share one
input and chains whose intermediates the memory planner lets share bytes) and the uint8 ->
normalised NHWC input pass (Cast + per-channel Sub/Div + the layout reorder). inspect must report
the calls as fused, the results must stay within the fp32 cpu tolerance (1e-4)."""
import numpy as np
import onnx
import pytest
from onnx import helper

from opv_util import assert_verify_ok, describe, make_model, ort_run


def _save(tmp_path, model, feeds):
    outs = ort_run(model, feeds)
    mpath, rpath = tmp_path / "model.onnx", tmp_path / "model_ref.npz"
    onnx.save(model, str(mpath))
    np.savez(rpath, **feeds, **outs)
    return mpath, rpath


def _heads_model(rng, k_in=37, hidden=70, heads=5, trans_b_mix=True):
    x = rng.standard_normal((1, k_in)).astype(np.float32)
    inits, nodes, outs = {}, [], []
    w0 = (rng.standard_normal((hidden, k_in)) / np.sqrt(k_in)).astype(np.float32)
    inits["w0"], inits["b0"] = w0, rng.standard_normal(hidden).astype(np.float32)
    nodes += [helper.make_node("Gemm", ["x", "w0", "b0"], ["h0"], transB=1),
              helper.make_node("Relu", ["h0"], ["h"])]
    for i in range(heads):
        n1, n2 = 33 + 7 * i, 3 + 5 * i
        tb = 1 if (i % 2 == 0 or not trans_b_mix) else 0
        w1 = (rng.standard_normal((n1, hidden)) / np.sqrt(hidden)).astype(np.float32)
        inits[f"w1_{i}"] = w1 if tb else np.ascontiguousarray(w1.T)
        inits[f"b1_{i}"] = rng.standard_normal((1, n1)).astype(np.float32)
        w2 = (rng.standard_normal((n2, n1)) / np.sqrt(n1)).astype(np.float32)
        inits[f"w2_{i}"] = w2
        gemm1 = helper.make_node("Gemm", ["h", f"w1_{i}", f"b1_{i}"], [f"a{i}"], transB=tb)
        nodes += [gemm1, helper.make_node("Relu", [f"a{i}"], [f"r{i}"])]
        if i == 3:  # no bias
            nodes.append(helper.make_node("Gemm", [f"r{i}", f"w2_{i}"], [f"o{i}"], transB=1))
        else:
            inits[f"b2_{i}"] = rng.standard_normal(n2).astype(np.float32)
            nodes.append(helper.make_node("Gemm", [f"r{i}", f"w2_{i}", f"b2_{i}"], [f"o{i}"], transB=1))
        outs.append(f"o{i}")
    nodes.append(helper.make_node("Concat", outs, ["y"], axis=1))
    return make_model(nodes, {"x": x}, ["y"], inits), {"x": x}


@pytest.mark.parametrize("threads", ["1", "2"])
@pytest.mark.parametrize("trans_b_mix", [True, False])
def test_gemv_run(cli, tmp_path, threads, trans_b_mix):
    model, feeds = _heads_model(np.random.default_rng(3), trans_b_mix=trans_b_mix)
    mpath, rpath = _save(tmp_path, model, feeds)
    rel, mx = assert_verify_ok(cli, mpath, rpath, "cpu", "--threads", threads)
    assert rel <= 1e-4 and mx <= 1e-4, (rel, mx)
    p = cli.run("inspect", mpath, "--target", "cpu", "--calls")
    assert p.returncode == 0, describe(p)
    fused = [s for s in p.stdout.splitlines() if "GEMVs in" in s]
    assert len(fused) == 11, describe(p)  # 1 + 2 per head


@pytest.mark.parametrize("threads", ["1", "2"])
@pytest.mark.parametrize("per_channel", [True, False])
def test_input_normalisation(cli, tmp_path, threads, per_channel):
    rng = np.random.default_rng(4)
    c = 6  # two 3-channel uint8 images concatenated, as openpilot's img/big_img
    img = rng.integers(0, 256, size=(1, c // 2, 20, 300), dtype=np.uint8)
    big = rng.integers(0, 256, size=(1, c // 2, 20, 300), dtype=np.uint8)
    shape = (1, c, 1, 1) if per_channel else (1,)
    mean = rng.uniform(50, 200, size=shape).astype(np.float32)
    std = rng.uniform(20, 80, size=shape).astype(np.float32)
    w = rng.standard_normal((8, c, 3, 3)).astype(np.float32) * 0.2
    nodes = [helper.make_node("Concat", ["img", "big"], ["u"], axis=1),
             helper.make_node("Cast", ["u"], ["f"], to=onnx.TensorProto.FLOAT),
             helper.make_node("Sub", ["f", "mean"], ["s"]),
             helper.make_node("Div", ["s", "std"], ["d"]),
             helper.make_node("Conv", ["d", "w"], ["c1"], pads=[1, 1, 1, 1], strides=[2, 2]),
             helper.make_node("Relu", ["c1"], ["r1"]),
             helper.make_node("Conv", ["r1", "w2"], ["c2"], pads=[1, 1, 1, 1], group=8),
             helper.make_node("Conv", ["c2", "w3"], ["y"])]
    inits = {"mean": mean, "std": std, "w": w,
             "w2": rng.standard_normal((8, 1, 3, 3)).astype(np.float32),
             "w3": rng.standard_normal((16, 8, 1, 1)).astype(np.float32)}
    feeds = {"img": img, "big": big}
    model = make_model(nodes, feeds, ["y"], inits)
    mpath, rpath = _save(tmp_path, model, feeds)
    rel, mx = assert_verify_ok(cli, mpath, rpath, "cpu", "--threads", threads)
    assert rel <= 1e-4 and mx <= 1e-4, (rel, mx)
    p = cli.run("inspect", mpath, "--target", "cpu", "--calls")
    assert p.returncode == 0, describe(p)
    assert sum("normalised f32 NHWC" in s for s in p.stdout.splitlines()) == 2, describe(p)


def _f16_heads_model(rng, perturb):
    """x [1, 37] -> three single-layer heads (transB 1, 0, 1; N = 33, 29, 18: K and N off the
    vector widths) -> Concat. Every weight is an fp16 value, except, with `perturb`, one element
    of head 0 (row 32) and one of head 1 (column 28), which then keep their matrices in fp32."""
    x = rng.standard_normal((1, 37)).astype(np.float32)
    inits, nodes, outs = {}, [], []
    for i, (n, tb) in enumerate([(33, 1), (29, 0), (18, 1)]):
        w = (rng.standard_normal((n, 37) if tb else (37, n)) / 6).astype(np.float16).astype(np.float32)
        if perturb and i == 0:
            w[32, 5] = 0.1  # not an fp16 value
        if perturb and i == 1:
            w[3, 28] = 0.1
        inits[f"w{i}"], inits[f"b{i}"] = w, rng.standard_normal(n).astype(np.float32)
        nodes.append(helper.make_node("Gemm", ["x", f"w{i}", f"b{i}"], [f"o{i}"], transB=tb))
        outs.append(f"o{i}")
    nodes.append(helper.make_node("Concat", outs, ["y"], axis=1))
    return make_model(nodes, {"x": x}, ["y"], inits), {"x": x}


@pytest.mark.parametrize("threads", ["1", "2"])
def test_gemv_fp16_weights_are_bit_identical(cli, tmp_path, threads):
    """A GEMV run reads a matrix of fp16 values from its fp16 copy: the same products and sums
    as from the fp32 matrix, so every output equals the fp32 path's bit for bit. The perturbed
    model keeps two matrices in fp32; every output the perturbation does not touch must match."""
    ys, said = [], []
    for perturb in (False, True):
        model, feeds = _f16_heads_model(np.random.default_rng(11), perturb)
        d = tmp_path / ("p" if perturb else "a")
        d.mkdir()
        mpath, rpath = _save(d, model, feeds)
        rel, mx = assert_verify_ok(cli, mpath, rpath, "cpu", "--threads", threads)
        assert rel <= 1e-4 and mx <= 1e-4, (rel, mx)
        p = cli.run("run", mpath, "--backend", "cpu", "--threads", threads, "--inputs", rpath, "-o", d / "y.npz")
        assert p.returncode == 0, describe(p)
        ys.append(np.load(d / "y.npz")["y"])
        p = cli.run("inspect", mpath, "--target", "cpu", "--calls")
        assert p.returncode == 0, describe(p)
        said.append(p.stdout)
    assert "3 GEMVs in 1 levels, one OpenMP region, 3 of the matrices read as fp16 (exact)" in said[0], said[0]
    assert "3 GEMVs in 1 levels, one OpenMP region, 1 of the matrices read as fp16 (exact)" in said[1], said[1]
    touched = [32, 33 + 28]  # head 0's row 32, head 1's column 28
    keep = np.setdiff1d(np.arange(ys[0].shape[1]), touched)
    assert np.array_equal(ys[0][:, keep].view(np.uint32), ys[1][:, keep].view(np.uint32)), \
        np.abs(ys[0][:, keep] - ys[1][:, keep]).max()
    assert not np.array_equal(ys[0][:, touched], ys[1][:, touched])
