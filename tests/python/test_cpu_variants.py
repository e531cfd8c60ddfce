"""The `cpu` backend runs every plan the compiler makes for it (issue 12): every op case of
test_ops.py again on `cpu`, as variants the plain fp32 run does not reach:

- fp16: the case's model with every float tensor in fp16 (inputs, outputs, initializers,
  Constant values, Cast targets), so the cpu plan has fp16 boundaries and widened constants;
  the reference is onnxruntime on the fp32 model with the same fp16-rounded inputs and
  constants, checked at the fp16 bound (1e-2, DESIGN.md).
- nhwc: every 4-D float input (C > 1, H*W > 1) passes through a 1x1 MaxPool first, an exact
  identity that the layout pass treats as a spatial op, so the calls after it run on NHWC
  buffers (or behind a Reorder when they need Linear); in fp32 and in fp16. The test checks
  that the compiled plan does hold NHWC buffers.

The cases whose model cannot be expressed in fp16 (an op without an fp16 type in ONNX) are
skipped with the reason; test_variant_counts prints how many cases each variant runs.
Plus the regression of issue 12: a BatchNormalization after a token mixer (not foldable into a
conv) in an fp16 model, which the cpu backend used to refuse."""
import copy

import numpy as np
import onnx
import pytest
from onnx import TensorProto as TP
from onnx import helper, numpy_helper

from opv_util import assert_verify_ok, describe, make_model, ort_run
from test_ops import CASES, Ctx

F16 = np.float16
F32 = np.float32
# Inputs that ONNX requires in fp32 whatever the data type (Resize: roi, scales).
KEEP_F32_SLOTS = {"Resize": (1, 2)}


class NotConvertible(Exception):
    pass


def _float_inputs(model):
    return [i for i in model.graph.input if i.type.tensor_type.elem_type == TP.FLOAT]


def to_fp16(model, feeds):
    """(fp16 model, fp16 feeds, fp32 reference model, fp32 feeds) for a case; the reference
    model is the original with the converted constants rounded through fp16."""
    keep = set()
    for n in model.graph.node:
        for i in KEEP_F32_SLOTS.get(n.op_type, ()):
            if i < len(n.input):
                keep.add(n.input[i])
    m16 = copy.deepcopy(model)
    ref = copy.deepcopy(model)
    g = m16.graph
    changed = False
    for init, rinit in zip(g.initializer, ref.graph.initializer):
        if init.data_type == TP.FLOAT and init.name not in keep:
            a = numpy_helper.to_array(init).astype(F16)
            init.CopyFrom(numpy_helper.from_array(a, init.name))
            rinit.CopyFrom(numpy_helper.from_array(a.astype(F32), init.name))
            changed = True
    for vi in list(g.input) + list(g.output):
        if vi.type.tensor_type.elem_type == TP.FLOAT:
            vi.type.tensor_type.elem_type = TP.FLOAT16
            changed = True
    for n in g.node:
        for a in n.attribute:
            if n.op_type == "Cast" and a.name == "to" and a.i == TP.FLOAT:
                a.i = TP.FLOAT16
                changed = True
            elif a.name == "value" and a.type == onnx.AttributeProto.TENSOR and a.t.data_type == TP.FLOAT:
                a.t.CopyFrom(numpy_helper.from_array(numpy_helper.to_array(a.t).astype(F16), a.t.name))
                changed = True
        if n.op_type == "ConstantOfShape" and not any(a.name == "value" for a in n.attribute):
            # the default value is a float32 zero
            n.attribute.extend([helper.make_attribute(
                "value", numpy_helper.from_array(np.zeros(1, F16), "v"))])
            changed = True
        if n.op_type == "Constant" and any(a.name in ("value_float", "value_floats") for a in n.attribute):
            a = n.attribute[0]
            v = np.array(a.f if a.name == "value_float" else list(a.floats), F16)
            del n.attribute[:]
            n.attribute.extend([helper.make_attribute("value", numpy_helper.from_array(v, "v"))])
            changed = True
    if not changed:
        raise NotConvertible("no float tensor to convert")
    del g.value_info[:]
    try:
        m16 = onnx.shape_inference.infer_shapes(m16, strict_mode=True, data_prop=True)
        onnx.checker.check_model(m16)
    except Exception as e:  # an op without an fp16 type constraint
        raise NotConvertible(f"not valid in fp16: {str(e).splitlines()[0][:200]}")
    f16 = {k: (v.astype(F16) if v.dtype == F32 else v) for k, v in feeds.items()}
    f32 = {k: (v.astype(F32) if v.dtype == F16 else v) for k, v in f16.items()}
    return m16, f16, ref, f32


def wrap_nhwc(model, feeds):
    """The model with each 4-D float input (C > 1, H*W > 1) read through a 1x1 MaxPool;
    None when it has no such input."""
    m = copy.deepcopy(model)
    g = m.graph
    pools = []
    for vi in _float_inputs(m):
        x = feeds[vi.name]
        if x.ndim != 4 or x.shape[1] == 1 or x.shape[2] * x.shape[3] == 1:
            continue
        t = vi.name + "__pool"
        for n in g.node:
            for i, name in enumerate(n.input):
                if name == vi.name:
                    n.input[i] = t
        pools.append(helper.make_node("MaxPool", [vi.name], [t], kernel_shape=[1, 1],
                                      name=t))
    if not pools:
        return None
    nodes = pools + list(g.node)
    del g.node[:]
    g.node.extend(nodes)
    del g.value_info[:]
    m = onnx.shape_inference.infer_shapes(m, strict_mode=True, data_prop=True)
    onnx.checker.check_model(m)
    return m


def save(tmp_path, model, feeds, ref_model, ref_feeds):
    """Model + npz (the model's inputs, onnxruntime outputs of ref_model on ref_feeds)."""
    outs = ort_run(ref_model, ref_feeds)
    for k, v in outs.items():
        assert np.all(np.isfinite(v.astype(np.float64))), f"onnxruntime output {k} not finite"
    mpath, rpath = tmp_path / "model.onnx", tmp_path / "model_ref.npz"
    onnx.save(model, str(mpath))
    np.savez(rpath, **feeds, **outs)
    return mpath, rpath


def variant(name, kind):
    """(model, feeds, ref_model, ref_feeds) of a case variant; raises NotConvertible or
    returns None when the variant does not exist for the case."""
    model, feeds = CASES[name](Ctx(name))
    if "nhwc" in kind:
        model = wrap_nhwc(model, feeds)
        if model is None:
            return None
    if "fp16" in kind:
        return to_fp16(model, feeds)
    return model, feeds, model, feeds


KINDS = ("fp16", "nhwc_fp32", "nhwc_fp16")
# Case variants whose op leaves nothing after the 1x1 MaxPool to read its NHWC output (Identity
# is dropped and the pool writes the fp32 output itself; Shape reads only the shape), so their
# plans hold no NHWC buffer.
NO_NHWC_CALLS = {("Identity", "nhwc_fp32"), ("Shape_start_end_opset15", "nhwc_fp32"),
                 ("Shape_start_end_opset15", "nhwc_fp16")}


def _plan_has_nhwc(cli, mpath, tmp_path):
    opv = tmp_path / "m.opv"
    p = cli.run("compile", mpath, "-o", opv, "--target", "cpu", "--dump-plan")
    assert p.returncode == 0, describe(p)
    return " nhwc " in p.stdout + p.stderr, opv


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("name", sorted(CASES))
def test_op_cpu_variant(cli, tmp_path, name, kind):
    try:
        v = variant(name, kind)
    except NotConvertible as e:
        pytest.skip(str(e))
    if v is None:
        pytest.skip("no 4-D float input to give an NHWC layout")
    mpath, rpath = save(tmp_path, *v)
    target = mpath
    if "nhwc" in kind:
        has, target = _plan_has_nhwc(cli, mpath, tmp_path)
        if (name, kind) in NO_NHWC_CALLS:
            assert not has, f"{name} now has NHWC buffers: drop it from NO_NHWC_CALLS"
        else:
            assert has, f"the layout pass gave no buffer an NHWC layout in {name}"
    assert_verify_ok(cli, target, rpath, "cpu")


def test_variant_counts(capsys):
    """How many op cases each variant runs (and why the others do not); the fp16 variant must
    cover nearly every case."""
    counts = {}
    for kind in KINDS:
        run, skipped = 0, {}
        for name in sorted(CASES):
            try:
                v = variant(name, kind)
            except NotConvertible as e:
                skipped[name] = str(e)
                continue
            if v is None:
                skipped[name] = "no 4-D float input"
                continue
            run += 1
        counts[kind] = (run, skipped)
    with capsys.disabled():
        for kind, (run, skipped) in counts.items():
            print(f"\n[cpu variants] {kind}: {run} of {len(CASES)} op cases run")
            if kind == "fp16":
                for n, why in skipped.items():
                    print(f"  skipped {n}: {why}")
    run16, skipped16 = counts["fp16"]
    assert run16 >= len(CASES) - 20, skipped16
    assert counts["nhwc_fp32"][0] >= 40


# ------------------------------------------------------------------ issue 12 regression
def _token_mixer_bn(dtype):
    """conv -> token mixer (reshape, transpose, MatMul, transpose, reshape) + residual ->
    BatchNormalization -> Relu -> residual Add: the BN cannot fold into a conv, and its
    input has two readers, so it becomes a standalone Mul with post-ops on NHWC data."""
    rng = np.random.default_rng(12)
    c, h, w = 8, 4, 6
    consts = {"cw": rng.uniform(-.5, .5, (c, c, 3, 3)).astype(dtype),
              "shp1": np.array([1, c, h * w], np.int64),
              "wq": rng.uniform(-.5, .5, (c, c)).astype(dtype),
              "shp2": np.array([1, c, h, w], np.int64),
              "s": rng.uniform(.5, 1.5, c).astype(dtype), "b": rng.uniform(-1, 1, c).astype(dtype),
              "m": rng.uniform(-.3, .3, c).astype(dtype), "v": rng.uniform(.5, 1.5, c).astype(dtype)}
    nodes = [helper.make_node("Conv", ["x", "cw"], ["c"], pads=[1, 1, 1, 1]),
             helper.make_node("Reshape", ["c", "shp1"], ["r"]),
             helper.make_node("Transpose", ["r"], ["t"], perm=[0, 2, 1]),
             helper.make_node("MatMul", ["t", "wq"], ["q"]),
             helper.make_node("Softmax", ["q"], ["sm"], axis=-1),
             helper.make_node("Transpose", ["sm"], ["t2"], perm=[0, 2, 1]),
             helper.make_node("Reshape", ["t2", "shp2"], ["r2"]),
             helper.make_node("Add", ["r2", "c"], ["a"]),
             helper.make_node("BatchNormalization", ["a", "s", "b", "m", "v"], ["n"]),
             helper.make_node("Relu", ["n"], ["rl"]),
             helper.make_node("Add", ["rl", "a"], ["y"])]
    x = rng.uniform(-2, 2, (1, c, h, w)).astype(dtype)
    ot = TP.FLOAT16 if dtype == F16 else TP.FLOAT
    return make_model(nodes, {"x": x}, ["y"], consts, out_types={"y": ot}), {"x": x}


@pytest.mark.parametrize("dtype", [F16, F32], ids=["fp16", "fp32"])
def test_batchnorm_after_token_mixer(cli, tmp_path, dtype):
    model, feeds = _token_mixer_bn(dtype)
    if dtype == F16:
        ref = copy.deepcopy(model)
        for init in ref.graph.initializer:
            if init.data_type == TP.FLOAT16:
                init.CopyFrom(numpy_helper.from_array(numpy_helper.to_array(init).astype(F32),
                                                      init.name))
        del ref.graph.value_info[:]
        ref.graph.input[0].type.tensor_type.elem_type = TP.FLOAT
        ref.graph.output[0].type.tensor_type.elem_type = TP.FLOAT
        ref_feeds = {"x": feeds["x"].astype(F32)}
    else:
        ref, ref_feeds = model, feeds
    mpath, rpath = save(tmp_path, model, feeds, ref, ref_feeds)
    has, opv = _plan_has_nhwc(cli, mpath, tmp_path)
    assert has, "the cpu plan should keep the conv output NHWC"
    for backend in ("cpu", "reference"):
        rel, mx = assert_verify_ok(cli, mpath, rpath, backend)
        assert rel <= (1e-2 if dtype == F16 else 1e-4), (backend, rel, mx)
    # inspect says how every call runs; here all of them run natively.
    p = cli.run("inspect", opv, "--calls")
    assert p.returncode == 0, describe(p)
    assert "via the reference kernel" in p.stdout, describe(p)
    line = next(s for s in p.stdout.splitlines() if s.startswith("cpu execution:"))
    assert line.endswith(" 0 via the reference kernel"), line
    assert any("BatchNormalization" in s or "_mul" in s for s in p.stdout.splitlines()
               if " native-loop " in s), describe(p)


def test_reference_fallback_on_nhwc_buffers(cli, tmp_path):
    """Pow with an integer exponent after a spatial op: the layout pass keeps it in the NHWC
    domain, no native loop takes mixed operand dtypes, so the reference kernel runs it on the
    NHWC buffers (converted around the call); inspect reports it."""
    rng = np.random.default_rng(5)
    x = rng.uniform(0.5, 2, (1, 4, 5, 6)).astype(F32)
    nodes = [helper.make_node("MaxPool", ["x"], ["p"], kernel_shape=[1, 1]),
             helper.make_node("Pow", ["p", "e"], ["y"])]
    model = make_model(nodes, {"x": x}, ["y"], {"e": np.array(3, np.int64)})
    mpath, rpath = save(tmp_path, model, {"x": x}, model, {"x": x})
    has, opv = _plan_has_nhwc(cli, mpath, tmp_path)
    assert has
    assert_verify_ok(cli, opv, rpath, "cpu")
    p = cli.run("inspect", opv)
    assert p.returncode == 0, describe(p)
    assert "1 via the reference kernel" in p.stdout, describe(p)
    assert any(s.split()[1:3] == ["reference", "Pow"] for s in p.stdout.splitlines()
               if s.startswith("  c")), describe(p)
