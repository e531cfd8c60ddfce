"""Op-by-op tests: each supported ONNX op over several parameter sets (odd sizes, groups,
strides, padding, broadcasting, the opsets where the op changed) as a small ONNX model, its
onnxruntime outputs as the reference, checked with `opvision verify` on every backend.
Also the CLI's error paths (unsupported ops, bad npz inputs, truncated artifacts)."""
import zlib

import numpy as np
import onnx
import pytest
from onnx import TensorProto as TP
from onnx import helper

from opv_util import assert_error, assert_verify_ok, describe, make_model, save_case

BACKENDS = ("reference", "cpu", "opencl")  # opencl: skipped where no OpenCL device exists
CPU_BACKENDS = ("reference", "cpu")
F32 = np.float32
CASES = {}


def case(name):
    def register(fn):
        assert name not in CASES, name
        CASES[name] = fn
        return fn
    return register


def rng_for(name):
    return np.random.default_rng(zlib.crc32(name.encode()))


class Ctx:
    """Per-case random source plus model building shortcuts."""

    def __init__(self, name):
        self.rng = rng_for(name)

    def f(self, *shape, lo=-2.0, hi=2.0, dtype=F32):
        return self.rng.uniform(lo, hi, size=shape).astype(dtype)

    def away(self, *shape, lo=0.5, hi=2.0):
        """Values with |x| in [lo, hi] (safe denominators)."""
        v = self.rng.uniform(lo, hi, size=shape) * self.rng.choice([-1.0, 1.0], size=shape)
        return v.astype(F32)

    def ints(self, *shape, lo=-3, hi=4):
        """Small integers stored as float (exact comparisons happen)."""
        return self.rng.integers(lo, hi, size=shape).astype(F32)


def one(op, inputs, consts=None, opset=17, n_out=1, out_types=None, **attrs):
    """A single-node model: `inputs` runtime arrays (ordered dict), `consts` initializers; the
    node's input list is runtime names then constant names unless `order` is given."""
    consts = consts or {}
    order = attrs.pop("order", list(inputs) + list(consts))
    outs = [f"y{i}" for i in range(n_out)]
    node = helper.make_node(op, order, outs, **attrs)
    return make_model([node], inputs, outs, consts, opset=opset, out_types=out_types), inputs


def chain(nodes, inputs, outputs, consts=None, opset=17, out_types=None):
    return make_model(nodes, inputs, outputs, consts, opset=opset, out_types=out_types), inputs


# ---------------------------------------------------------------------------------------- Conv
CONV_SETS = [
    # name, N, C, H, W, M, k, attrs, bias
    ("3x3_pad1", 1, 3, 7, 9, 4, (3, 3), dict(pads=[1, 1, 1, 1]), True),
    ("3x3_s2_asym_nobias", 1, 5, 11, 13, 6, (3, 3), dict(strides=[2, 2], pads=[0, 1, 1, 0]), False),
    ("groups2", 2, 4, 6, 5, 6, (3, 3), dict(group=2, pads=[1, 1, 1, 1]), True),
    ("dw7x7_s2", 1, 8, 13, 15, 8, (7, 7), dict(group=8, strides=[2, 2], pads=[3, 3, 3, 3]), True),
    ("dw_mult2_7x7_s2", 1, 8, 12, 16, 16, (7, 7), dict(group=8, strides=[2, 2], pads=[3, 3, 3, 3]), True),
    ("dw3x3_mult2", 1, 6, 5, 7, 12, (3, 3), dict(group=6, pads=[1, 1, 1, 1]), True),
    ("dilation2", 1, 3, 10, 9, 5, (3, 3), dict(dilations=[2, 2], pads=[2, 2, 2, 2]), True),
    ("dilation_2x1_stride_1x2", 1, 2, 9, 11, 3, (3, 3), dict(dilations=[2, 1], strides=[1, 2]), True),
    ("same_upper_s2", 1, 4, 9, 10, 4, (3, 3), dict(auto_pad="SAME_UPPER", strides=[2, 2]), True),
    ("same_lower_s2", 1, 4, 9, 10, 4, (4, 4), dict(auto_pad="SAME_LOWER", strides=[2, 2]), True),
    ("valid", 1, 3, 8, 7, 2, (3, 2), dict(auto_pad="VALID"), False),
    ("1x1_batch2", 2, 16, 5, 3, 24, (1, 1), {}, True),
    ("1x5_stride_1x2", 1, 3, 6, 17, 4, (1, 5), dict(strides=[1, 2], pads=[0, 2, 0, 2]), True),
    ("no_pads_attr_5x5", 1, 2, 9, 9, 3, (5, 5), {}, True),
    ("1x1_s2_wide", 1, 32, 8, 8, 64, (1, 1), dict(strides=[2, 2]), True),
]


def _conv_case(name, n, c, h, w, m, k, attrs, bias, opset, dtype=F32):
    def build(ctx):
        g = attrs.get("group", 1)
        x = ctx.f(n, c, h, w).astype(dtype)
        consts = {"w": ctx.f(m, c // g, *k, lo=-0.5, hi=0.5).astype(dtype)}
        if bias:
            consts["b"] = ctx.f(m).astype(dtype)
        ot = {"y0": TP.FLOAT16} if dtype == np.float16 else None
        return one("Conv", {"x": x}, consts, opset=opset, out_types=ot,
                   kernel_shape=list(k), **attrs)
    return build


for _s in CONV_SETS:
    case(f"Conv_{_s[0]}")(_conv_case(*_s, opset=17))
case("Conv_3x3_pad1_opset11")(_conv_case(*CONV_SETS[0], opset=11))
case("Conv_groups2_opset21")(_conv_case(*CONV_SETS[2], opset=21))
case("Conv_dw7x7_s2_fp16")(_conv_case(*CONV_SETS[3], opset=17, dtype=np.float16))


@case("Conv_runtime_weights")
def _(ctx):
    return one("Conv", {"x": ctx.f(1, 3, 6, 6), "w": ctx.f(4, 3, 3, 3)}, pads=[1, 1, 1, 1])


# ------------------------------------------------------------------------ BatchNormalization
def _bn(shape, opset, eps=1e-5):
    def build(ctx):
        c = shape[1]
        consts = {"s": ctx.f(c, lo=0.5, hi=1.5), "b": ctx.f(c), "mean": ctx.f(c, lo=-0.3, hi=0.3),
                  "var": ctx.f(c, lo=0.5, hi=1.5)}
        return one("BatchNormalization", {"x": ctx.f(*shape)}, consts, opset=opset, epsilon=eps)
    return build


case("BatchNormalization_nchw_opset15")(_bn((2, 5, 4, 3), 15))
case("BatchNormalization_nchw_opset11_eps")(_bn((1, 7, 5, 9), 11, eps=1e-3))
case("BatchNormalization_nc_opset14")(_bn((3, 6), 14))
case("BatchNormalization_ncl_opset15")(_bn((2, 5, 7), 15))


# ------------------------------------------------------------------------------- Gemm/MatMul
def _gemm(m, k, n, ta=0, tb=0, cshape="n", alpha=1.0, beta=1.0, opset=13, const_b=True):
    def build(ctx):
        a = ctx.f(*((k, m) if ta else (m, k)))
        b = ctx.f(*((n, k) if tb else (k, n)))
        inputs = {"a": a} if const_b else {"a": a, "b": b}
        consts = {"b": b} if const_b else {}
        cshapes = {"n": (n,), "mn": (m, n), "m1": (m, 1), "1n": (1, n), "scalar": ()}
        if cshape is not None:
            consts["c"] = ctx.f(*cshapes[cshape])
        return one("Gemm", inputs, consts, opset=opset, transA=ta, transB=tb, alpha=alpha,
                   beta=beta)
    return build


case("Gemm_basic")(_gemm(3, 5, 7))
case("Gemm_transB_linear")(_gemm(1, 33, 17, tb=1))
case("Gemm_transA_transB_alpha_beta")(_gemm(4, 6, 5, ta=1, tb=1, cshape="mn", alpha=0.5, beta=2.0))
case("Gemm_c_m1")(_gemm(4, 3, 6, cshape="m1"))
case("Gemm_c_1n_opset11")(_gemm(2, 9, 3, cshape="1n", opset=11))
case("Gemm_c_scalar")(_gemm(3, 4, 5, cshape="scalar", beta=0.25))
case("Gemm_no_c")(_gemm(5, 8, 3, cshape=None))
case("Gemm_runtime_b")(_gemm(3, 4, 6, tb=1, const_b=False))


def _matmul(sa, sb, const_b=False):
    def build(ctx):
        if const_b:
            return one("MatMul", {"a": ctx.f(*sa)}, {"b": ctx.f(*sb)})
        return one("MatMul", {"a": ctx.f(*sa), "b": ctx.f(*sb)})
    return build


case("MatMul_2d")(_matmul((5, 7), (7, 3)))
case("MatMul_2d_const")(_matmul((1, 64), (64, 48), const_b=True))
case("MatMul_batched_3d_2d")(_matmul((2, 5, 4), (4, 6), const_b=True))
case("MatMul_broadcast_batch")(_matmul((2, 1, 3, 4), (5, 4, 6)))
case("MatMul_1d_2d")(_matmul((4,), (4, 3)))
case("MatMul_2d_1d")(_matmul((3, 4), (4,)))


# ------------------------------------------------------------------------------ element-wise
BIN_SHAPES = [("same", (2, 3, 4, 5), (2, 3, 4, 5)), ("bcast_last", (2, 3, 4, 5), (5,)),
              ("bcast_both", (2, 1, 4, 1), (3, 1, 5)), ("chan", (1, 6, 3, 5), (6, 1, 1))]
for _op in ("Add", "Sub", "Mul", "Div", "Min", "Max"):
    for _sn, _sa, _sb in BIN_SHAPES:
        def _build(ctx, op=_op, sa=_sa, sb=_sb):
            b = ctx.away(*sb) if op == "Div" else ctx.f(*sb)
            return one(op, {"a": ctx.f(*sa), "b": b})
        case(f"{_op}_{_sn}")(_build)

    def _build_const(ctx, op=_op):
        return one(op, {"a": ctx.f(3, 7)}, {"c": ctx.away(7)})
    case(f"{_op}_const_rhs")(_build_const)

    def _build_scalar_lhs(ctx, op=_op):
        return one(op, {"a": ctx.away(4, 5)}, {"c": np.array(1.5, F32)}, order=["c", "a"])
    case(f"{_op}_scalar_const_lhs")(_build_scalar_lhs)


@case("Add_opset13_bcast")
def _(ctx):
    return one("Add", {"a": ctx.f(3, 4), "b": ctx.f(4)}, opset=13)


@case("Min_three_inputs")
def _(ctx):
    return one("Min", {"a": ctx.f(3, 4), "b": ctx.f(4), "c": ctx.f(3, 1)})


@case("Max_three_inputs_opset12")
def _(ctx):
    return one("Max", {"a": ctx.f(2, 3, 4), "b": ctx.f(1, 4), "c": ctx.f(3, 1)}, opset=12)


@case("Add_fp16")
def _(ctx):
    return one("Add", {"a": ctx.f(2, 3, 5, dtype=np.float16)}, {"b": ctx.f(5, dtype=np.float16)},
               out_types={"y0": TP.FLOAT16})


@case("Pow_runtime_exponent")
def _(ctx):
    return one("Pow", {"a": ctx.f(3, 4, 5, lo=0.2, hi=3.0), "b": ctx.f(4, 5, lo=-2.0, hi=2.0)})


@case("Pow_const_square")
def _(ctx):
    return one("Pow", {"a": ctx.f(6, 7)}, {"p": np.array(2.0, F32)})


@case("Pow_const_sqrt")
def _(ctx):
    return one("Pow", {"a": ctx.f(6, 7, lo=0.0, hi=5.0)}, {"p": np.array(0.5, F32)})


@case("Pow_const_cube_opset12")
def _(ctx):
    return one("Pow", {"a": ctx.f(5, 3)}, {"p": np.array(3.0, F32)}, opset=12)


UNARY = {
    # op: (input range, attrs)
    "Sqrt": ((0.0, 4.0), {}),
    "Erf": ((-3.0, 3.0), {}),
    "Relu": ((-2.0, 2.0), {}),
    "Sigmoid": ((-6.0, 6.0), {}),
    "Tanh": ((-4.0, 4.0), {}),
    "Softplus": ((-5.0, 5.0), {}),
    "Exp": ((-4.0, 4.0), {}),
    "Log": ((0.05, 10.0), {}),
    "Neg": ((-2.0, 2.0), {}),
    "Abs": ((-2.0, 2.0), {}),
    "HardSwish": ((-5.0, 5.0), {}),
    "Identity": ((-2.0, 2.0), {}),
}
for _op, (_rg, _at) in UNARY.items():
    def _build(ctx, op=_op, rg=_rg, at=_at):
        return one(op, {"x": ctx.f(2, 3, 7, 5, lo=rg[0], hi=rg[1])}, **at)
    case(f"{_op}")(_build)


@case("Reciprocal")
def _(ctx):
    return one("Reciprocal", {"x": ctx.away(3, 11)})


@case("LeakyRelu_default")
def _(ctx):
    return one("LeakyRelu", {"x": ctx.f(4, 9)})


@case("LeakyRelu_alpha")
def _(ctx):
    return one("LeakyRelu", {"x": ctx.f(4, 9)}, alpha=0.3)


@case("Elu_default")
def _(ctx):
    return one("Elu", {"x": ctx.f(4, 9, lo=-4, hi=2)})


@case("Elu_alpha")
def _(ctx):
    return one("Elu", {"x": ctx.f(4, 9, lo=-4, hi=2)}, alpha=0.7)


@case("HardSigmoid_default")
def _(ctx):
    return one("HardSigmoid", {"x": ctx.f(5, 8, lo=-4, hi=4)})


@case("HardSigmoid_alpha_beta")
def _(ctx):
    return one("HardSigmoid", {"x": ctx.f(5, 8, lo=-4, hi=4)}, alpha=0.1666667, beta=0.4)


@case("Gelu_opset20")
def _(ctx):
    return one("Gelu", {"x": ctx.f(3, 5, 7, lo=-4, hi=4)}, opset=20)


@case("Gelu_tanh_opset20")
def _(ctx):
    return one("Gelu", {"x": ctx.f(3, 5, 7, lo=-4, hi=4)}, opset=20, approximate="tanh")


@case("Gelu_erf_pattern")
def _(ctx):
    # The pattern torch.onnx.export writes for nn.GELU(): x * 0.5 * (1 + erf(x / sqrt(2)))
    consts = {"s2": np.array(np.sqrt(2.0), F32), "one": np.array(1.0, F32),
              "half": np.array(0.5, F32)}
    nodes = [helper.make_node("Div", ["x", "s2"], ["d"]), helper.make_node("Erf", ["d"], ["e"]),
             helper.make_node("Add", ["e", "one"], ["a"]), helper.make_node("Mul", ["x", "a"], ["m"]),
             helper.make_node("Mul", ["m", "half"], ["y"])]
    return chain(nodes, {"x": ctx.f(2, 6, 5, 5, lo=-4, hi=4)}, ["y"], consts)


@case("Clip_min_max_opset13")
def _(ctx):
    return one("Clip", {"x": ctx.f(4, 6)}, {"lo": np.array(-0.5, F32), "hi": np.array(0.75, F32)},
               opset=13)


@case("Clip_min_only_opset11")
def _(ctx):
    return one("Clip", {"x": ctx.f(4, 6)}, {"lo": np.array(0.1, F32)}, opset=11)


@case("Clip_max_only")
def _(ctx):
    return one("Clip", {"x": ctx.f(4, 6)}, {"hi": np.array(0.2, F32)}, order=["x", "", "hi"])


@case("Clip_relu6_opset21")
def _(ctx):
    return one("Clip", {"x": ctx.f(4, 6, lo=-3, hi=9)}, {"lo": np.array(0.0, F32),
                                                         "hi": np.array(6.0, F32)}, opset=21)


@case("Dropout_opset13")
def _(ctx):
    return one("Dropout", {"x": ctx.f(3, 8)}, opset=13)


@case("Dropout_ratio_opset12")
def _(ctx):
    return one("Dropout", {"x": ctx.f(3, 8)}, {"r": np.array(0.3, F32)}, opset=12)


# ---------------------------------------------------------------- comparisons, logic, Where
for _op in ("Equal", "Less", "Greater"):
    for _sn, _sa, _sb in (("same", (3, 4, 5), (3, 4, 5)), ("bcast", (2, 3, 4), (3, 1))):
        def _build(ctx, op=_op, sa=_sa, sb=_sb):
            nodes = [helper.make_node(op, ["a", "b"], ["c"]),
                     helper.make_node("Cast", ["c"], ["y"], to=TP.FLOAT)]
            return chain(nodes, {"a": ctx.ints(*sa), "b": ctx.ints(*sb)}, ["y"])
        case(f"{_op}_{_sn}_cast")(_build)


@case("Equal_opset11")
def _(ctx):
    nodes = [helper.make_node("Equal", ["a", "b"], ["c"]),
             helper.make_node("Cast", ["c"], ["y"], to=TP.FLOAT)]
    return chain(nodes, {"a": ctx.ints(4, 5), "b": ctx.ints(5)}, ["y"], opset=11)


@case("Not_of_Greater")
def _(ctx):
    nodes = [helper.make_node("Greater", ["a", "b"], ["g"]), helper.make_node("Not", ["g"], ["n"]),
             helper.make_node("Cast", ["n"], ["y"], to=TP.FLOAT)]
    return chain(nodes, {"a": ctx.ints(3, 7), "b": ctx.ints(3, 7)}, ["y"])


@case("Where_bcast")
def _(ctx):
    nodes = [helper.make_node("Greater", ["a", "t"], ["c"]),
             helper.make_node("Where", ["c", "a", "b"], ["y"])]
    return chain(nodes, {"a": ctx.f(2, 3, 4), "b": ctx.f(3, 1)}, ["y"],
                 {"t": np.array(0.25, F32)})


@case("Where_const_branches")
def _(ctx):
    nodes = [helper.make_node("Less", ["a", "b"], ["c"]),
             helper.make_node("Where", ["c", "one", "a"], ["y"])]
    return chain(nodes, {"a": ctx.f(5, 6), "b": ctx.f(6)}, ["y"], {"one": np.array(1.0, F32)})


# ---------------------------------------------------------------------------------- pooling
@case("GlobalAveragePool")
def _(ctx):
    return one("GlobalAveragePool", {"x": ctx.f(2, 3, 5, 7)})


@case("GlobalAveragePool_1x1")
def _(ctx):
    return one("GlobalAveragePool", {"x": ctx.f(1, 16, 1, 1)})


POOLS = [
    ("k3_s2_p1", dict(kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])),
    ("k2_s2", dict(kernel_shape=[2, 2], strides=[2, 2])),
    ("k3_s1_asym_pad", dict(kernel_shape=[3, 2], pads=[0, 1, 1, 0])),
    ("k3_s2_ceil", dict(kernel_shape=[3, 3], strides=[2, 2], ceil_mode=1)),
    ("same_upper", dict(kernel_shape=[3, 3], strides=[2, 2], auto_pad="SAME_UPPER")),
]
for _pn, _pa in POOLS:
    def _build_max(ctx, pa=_pa):
        return one("MaxPool", {"x": ctx.f(1, 3, 9, 11)}, opset=12, **pa)
    case(f"MaxPool_{_pn}")(_build_max)

    def _build_avg(ctx, pa=_pa):
        return one("AveragePool", {"x": ctx.f(2, 3, 9, 11)}, opset=11, **pa)
    case(f"AveragePool_{_pn}")(_build_avg)


@case("AveragePool_count_include_pad")
def _(ctx):
    return one("AveragePool", {"x": ctx.f(1, 2, 7, 8)}, kernel_shape=[3, 3], pads=[1, 1, 1, 1],
               count_include_pad=1)


@case("MaxPool_dilations")
def _(ctx):
    return one("MaxPool", {"x": ctx.f(1, 2, 10, 9)}, kernel_shape=[2, 2], dilations=[2, 2],
               opset=12)


@case("AveragePool_opset19")
def _(ctx):
    return one("AveragePool", {"x": ctx.f(1, 2, 10, 9)}, kernel_shape=[2, 3], strides=[2, 1],
               opset=19)


# ------------------------------------------------------------------------------- reductions
def _reduce(op, shape, axes, keepdims, opset, axes_as_input):
    def build(ctx):
        attrs = {"keepdims": keepdims}
        consts = {}
        if axes is not None:
            if axes_as_input:
                consts["axes"] = np.array(axes, np.int64)
            else:
                attrs["axes"] = axes
        return one(op, {"x": ctx.f(*shape)}, consts, opset=opset, **attrs)
    return build


for _op, _attr_opsets, _input_opset in (("ReduceMean", (11, 13), 18), ("ReduceMax", (13,), 18),
                                        ("ReduceSum", (11,), 13)):
    for _o in _attr_opsets:
        case(f"{_op}_hw_keep_attr_opset{_o}")(_reduce(_op, (2, 3, 5, 7), [2, 3], 1, _o, False))
        case(f"{_op}_neg_axis_nokeep_attr_opset{_o}")(_reduce(_op, (4, 6, 5), [-1], 0, _o, False))
    case(f"{_op}_hw_keep_input_opset{_input_opset}")(
        _reduce(_op, (2, 3, 5, 7), [2, 3], 1, _input_opset, True))
    case(f"{_op}_axes01_nokeep_input_opset{_input_opset}")(
        _reduce(_op, (3, 4, 5), [0, -2], 0, _input_opset, True))
    case(f"{_op}_all_axes_opset{_input_opset}")(
        _reduce(_op, (3, 4, 5), None, 1, _input_opset, True))


# ----------------------------------------------------------------- Softmax, LayerNormalization
@case("Softmax_last_opset13")
def _(ctx):
    return one("Softmax", {"x": ctx.f(3, 4, 10, lo=-5, hi=5)}, opset=13)


@case("Softmax_axis1_opset13")
def _(ctx):
    return one("Softmax", {"x": ctx.f(2, 5, 3, lo=-5, hi=5)}, opset=13, axis=1)


@case("Softmax_axis1_opset11_coerced")
def _(ctx):
    # opset < 13: the input is flattened to 2-D at `axis` and normalised over the whole tail.
    return one("Softmax", {"x": ctx.f(2, 5, 3, lo=-5, hi=5)}, opset=11, axis=1)


@case("Softmax_large_values")
def _(ctx):
    return one("Softmax", {"x": ctx.f(2, 16, lo=50, hi=90)}, opset=13)


@case("LayerNormalization_last")
def _(ctx):
    return one("LayerNormalization", {"x": ctx.f(2, 5, 16)}, {"s": ctx.f(16), "b": ctx.f(16)},
               opset=17)


@case("LayerNormalization_axis1_nobias_eps")
def _(ctx):
    return one("LayerNormalization", {"x": ctx.f(3, 4, 5)}, {"s": ctx.f(4, 5)}, opset=17, axis=1,
               epsilon=1e-3)


@case("LayerNormalization_axis_neg2")
def _(ctx):
    return one("LayerNormalization", {"x": ctx.f(2, 3, 4, 6, lo=0, hi=4)},
               {"s": ctx.f(4, 6), "b": ctx.f(4, 6)}, opset=17, axis=-2)


# ------------------------------------------------------------------------- shape movement
@case("Flatten_axis1")
def _(ctx):
    return one("Flatten", {"x": ctx.f(2, 3, 4, 5)})


@case("Flatten_axis0")
def _(ctx):
    return one("Flatten", {"x": ctx.f(2, 3, 4)}, axis=0)


@case("Flatten_axis_neg1_opset11")
def _(ctx):
    return one("Flatten", {"x": ctx.f(2, 3, 4)}, axis=-1, opset=11)


@case("Reshape_zero_and_minus1")
def _(ctx):
    return one("Reshape", {"x": ctx.f(2, 3, 4, 5)}, {"s": np.array([0, -1, 5], np.int64)},
               opset=13)


@case("Reshape_flat_opset14")
def _(ctx):
    return one("Reshape", {"x": ctx.f(3, 4, 5)}, {"s": np.array([60], np.int64)}, opset=14)


@case("Reshape_then_add")
def _(ctx):
    nodes = [helper.make_node("Reshape", ["x", "s"], ["r"]), helper.make_node("Add", ["r", "b"], ["y"])]
    return chain(nodes, {"x": ctx.f(6, 4)}, ["y"], {"s": np.array([2, 3, 4], np.int64),
                                                    "b": ctx.f(3, 1)})


@case("Transpose_nhwc")
def _(ctx):
    return one("Transpose", {"x": ctx.f(2, 3, 4, 5)}, perm=[0, 2, 3, 1])


@case("Transpose_default_reverse")
def _(ctx):
    return one("Transpose", {"x": ctx.f(3, 4, 5)})


@case("Transpose_then_mul")
def _(ctx):
    nodes = [helper.make_node("Transpose", ["x"], ["t"], perm=[1, 0, 2]),
             helper.make_node("Mul", ["t", "x2"], ["y"])]
    return chain(nodes, {"x": ctx.f(3, 4, 5), "x2": ctx.f(4, 3, 5)}, ["y"])


@case("Concat_axis1_three")
def _(ctx):
    return one("Concat", {"a": ctx.f(2, 3, 4), "b": ctx.f(2, 1, 4), "c": ctx.f(2, 5, 4)}, axis=1)


@case("Concat_neg_axis_const")
def _(ctx):
    return one("Concat", {"a": ctx.f(2, 3)}, {"b": ctx.f(2, 4)}, axis=-1, opset=11)


@case("Concat_uint8_inputs_cast")
def _(ctx):
    nodes = [helper.make_node("Concat", ["a", "b"], ["c"], axis=1),
             helper.make_node("Cast", ["c"], ["y"], to=TP.FLOAT)]
    a = ctx.rng.integers(0, 256, (1, 3, 4, 5), dtype=np.uint8)
    b = ctx.rng.integers(0, 256, (1, 3, 4, 5), dtype=np.uint8)
    return chain(nodes, {"a": a, "b": b}, ["y"])


def _split(opset, shape, axis, sizes=None, n=None, as_input=False):
    def build(ctx):
        consts, attrs = {}, {"axis": axis}
        if sizes is not None and as_input:
            consts["split"] = np.array(sizes, np.int64)
        elif sizes is not None:
            attrs["split"] = sizes
        if n is not None and opset >= 18:
            attrs["num_outputs"] = n
        count = len(sizes) if sizes is not None else n
        return one("Split", {"x": ctx.f(*shape)}, consts, opset=opset, n_out=count, **attrs)
    return build


case("Split_equal_opset11")(_split(11, (2, 6, 3), 1, n=3))
case("Split_sizes_attr_opset11")(_split(11, (2, 7, 3), 1, sizes=[2, 4, 1]))
case("Split_sizes_input_opset13")(_split(13, (5, 4), 0, sizes=[3, 2], as_input=True))
case("Split_num_outputs_uneven_opset18")(_split(18, (3, 7), -1, n=3))


def _slice(shape, starts, ends, axes=None, steps=None, opset=13):
    def build(ctx):
        consts = {"st": np.array(starts, np.int64), "en": np.array(ends, np.int64)}
        order = ["x", "st", "en"]
        if axes is not None:
            consts["ax"] = np.array(axes, np.int64)
            order.append("ax")
        if steps is not None:
            consts["sp"] = np.array(steps, np.int64)
            order.append("sp")
        return one("Slice", {"x": ctx.f(*shape)}, consts, opset=opset, order=order)
    return build


case("Slice_basic")(_slice((5, 6, 7), [1, 0, 2], [4, 6, 7]))
case("Slice_axes_steps")(_slice((5, 6, 7), [0, 1], [7, 6], axes=[2, 1], steps=[2, 3]))
case("Slice_negative_steps")(_slice((6, 8), [-1, 6], [-100, 0], axes=[0, 1], steps=[-1, -2]))
case("Slice_neg_start_large_end")(_slice((4, 9), [-5], [2**62], axes=[-1], opset=11))
case("Slice_neg_axes")(_slice((3, 4, 5), [1], [-1], axes=[-2], opset=13))


@case("Gather_axis0")
def _(ctx):
    return one("Gather", {"x": ctx.f(5, 4)}, {"i": np.array([4, 0, 2, 2], np.int64)})


@case("Gather_axis1_neg_indices")
def _(ctx):
    return one("Gather", {"x": ctx.f(3, 6, 2)}, {"i": np.array([-1, 0, -6], np.int64)}, axis=1)


@case("Gather_2d_indices_int32")
def _(ctx):
    return one("Gather", {"x": ctx.f(4, 7)}, {"i": np.array([[1, 3], [6, 0]], np.int32)}, axis=-1)


@case("Gather_scalar_index_opset11")
def _(ctx):
    return one("Gather", {"x": ctx.f(4, 5, 3)}, {"i": np.array(2, np.int64)}, axis=1, opset=11)


@case("Squeeze_attr_opset11")
def _(ctx):
    return one("Squeeze", {"x": ctx.f(1, 3, 1, 5)}, opset=11, axes=[0, 2])


@case("Squeeze_input_opset13")
def _(ctx):
    return one("Squeeze", {"x": ctx.f(3, 1, 5, 1)}, {"a": np.array([-1, 1], np.int64)}, opset=13)


@case("Squeeze_all_opset13")
def _(ctx):
    return one("Squeeze", {"x": ctx.f(1, 4, 1, 2)}, opset=13)


@case("Unsqueeze_attr_opset11")
def _(ctx):
    return one("Unsqueeze", {"x": ctx.f(3, 5)}, opset=11, axes=[0, 3])


@case("Unsqueeze_input_opset13")
def _(ctx):
    return one("Unsqueeze", {"x": ctx.f(3, 5)}, {"a": np.array([-1, 1], np.int64)}, opset=13)


@case("Expand_bcast")
def _(ctx):
    return one("Expand", {"x": ctx.f(3, 1)}, {"s": np.array([2, 3, 4], np.int64)})


@case("Expand_shape_smaller_rank")
def _(ctx):
    return one("Expand", {"x": ctx.f(2, 1, 5)}, {"s": np.array([4, 1], np.int64)}, opset=13)


@case("Tile")
def _(ctx):
    return one("Tile", {"x": ctx.f(2, 3, 4)}, {"r": np.array([1, 3, 2], np.int64)})


def _pad(mode, pads, opset=13, value=None, axes=None, shape=(1, 2, 5, 6)):
    def build(ctx):
        consts = {"p": np.array(pads, np.int64)}
        order = ["x", "p"]
        if value is not None or axes is not None:
            order.append("v" if value is not None else "")
            if value is not None:
                consts["v"] = np.array(value, F32)
        if axes is not None:
            consts["ax"] = np.array(axes, np.int64)
            order.append("ax")
        return one("Pad", {"x": ctx.f(*shape)}, consts, opset=opset, mode=mode, order=order)
    return build


case("Pad_constant_zero_opset11")(_pad("constant", [0, 0, 1, 2, 0, 0, 2, 1], opset=11))
case("Pad_constant_value")(_pad("constant", [0, 1, 1, 0, 0, 0, 2, 3], value=-1.5))
case("Pad_reflect")(_pad("reflect", [0, 0, 2, 1, 0, 0, 1, 3]))
case("Pad_edge")(_pad("edge", [0, 0, 3, 0, 0, 0, 1, 2]))
case("Pad_negative")(_pad("constant", [0, 0, -1, 1, 0, 0, 2, -2]))
case("Pad_axes_opset18")(_pad("constant", [1, 2, 2, 0], opset=18, axes=[2, -1], value=0.5))


def _resize(opset, mode, shape, scales=None, sizes=None, **attrs):
    def build(ctx):
        consts = {}
        order = ["x"]
        if opset < 13:
            consts["roi"] = np.array([], F32)
            order.append("roi")
        else:
            order.append("")
        if scales is not None:
            consts["sc"] = np.array(scales, F32)
            order.append("sc")
        else:
            order.append("")
            consts["sz"] = np.array(sizes, np.int64)
            order.append("sz")
            if opset < 13:  # opset 11 requires an (empty) scales input with sizes
                consts["sc"] = np.array([], F32)
                order[2] = "sc"
        return one("Resize", {"x": ctx.f(*shape)}, consts, opset=opset, order=order, mode=mode,
                   **attrs)
    return build


case("Resize_nearest_x2_opset11")(
    _resize(11, "nearest", (1, 2, 3, 5), scales=[1, 1, 2, 2],
            coordinate_transformation_mode="asymmetric", nearest_mode="floor"))
case("Resize_nearest_x2_default_opset13")(_resize(13, "nearest", (1, 3, 4, 3), scales=[1, 1, 2, 2]))
case("Resize_nearest_down_half_pixel")(
    _resize(13, "nearest", (1, 2, 8, 6), scales=[1, 1, 0.5, 0.5],
            coordinate_transformation_mode="half_pixel"))
case("Resize_linear_half_pixel_x2")(
    _resize(13, "linear", (1, 2, 4, 5), scales=[1, 1, 2, 2],
            coordinate_transformation_mode="half_pixel"))
case("Resize_linear_align_corners_sizes")(
    _resize(13, "linear", (1, 2, 4, 5), sizes=[1, 2, 7, 9],
            coordinate_transformation_mode="align_corners"))
case("Resize_linear_asymmetric_x3_opset18")(
    _resize(18, "linear", (1, 1, 3, 4), scales=[1, 1, 3, 3],
            coordinate_transformation_mode="asymmetric"))
case("Resize_linear_pytorch_half_pixel_sizes_opset19")(
    _resize(19, "linear", (1, 3, 6, 4), sizes=[1, 3, 3, 7],
            coordinate_transformation_mode="pytorch_half_pixel"))
case("Resize_nearest_sizes_opset11")(
    _resize(11, "nearest", (1, 2, 5, 4), sizes=[1, 2, 10, 12],
            coordinate_transformation_mode="asymmetric", nearest_mode="floor"))


# ---------------------------------------------- shape-computing ops (folded at compile time)
@case("Shape_into_Reshape")
def _(ctx):
    nodes = [helper.make_node("Shape", ["like"], ["s"]), helper.make_node("Reshape", ["x", "s"], ["y"])]
    return chain(nodes, {"x": ctx.f(6, 5), "like": ctx.f(3, 2, 5)}, ["y"], opset=13)


@case("Shape_start_end_opset15")
def _(ctx):
    nodes = [helper.make_node("Shape", ["x"], ["s"], start=1, end=3),
             helper.make_node("Concat", ["s", "m1"], ["s2"], axis=0),
             helper.make_node("Reshape", ["x2", "s2"], ["y"])]
    return chain(nodes, {"x": ctx.f(2, 3, 4, 5), "x2": ctx.f(24, 5)}, ["y"],
                 {"m1": np.array([-1], np.int64)}, opset=15)


@case("Size_scales_input")
def _(ctx):
    nodes = [helper.make_node("Size", ["x"], ["n"]),
             helper.make_node("Cast", ["n"], ["nf"], to=TP.FLOAT),
             helper.make_node("Div", ["x", "nf"], ["y"])]
    return chain(nodes, {"x": ctx.f(3, 7)}, ["y"])


@case("Constant_tensor")
def _(ctx):
    c = helper.make_node("Constant", [], ["c"],
                         value=onnx.numpy_helper.from_array(ctx.f(3, 1), "c"))
    return chain([c, helper.make_node("Add", ["x", "c"], ["y"])], {"x": ctx.f(3, 4)}, ["y"])


@case("Constant_value_float_and_floats")
def _(ctx):
    nodes = [helper.make_node("Constant", [], ["a"], value_float=2.5),
             helper.make_node("Constant", [], ["b"], value_floats=[1.0, -2.0, 0.5, 3.0]),
             helper.make_node("Mul", ["x", "a"], ["m"]), helper.make_node("Add", ["m", "b"], ["y"])]
    return chain(nodes, {"x": ctx.f(2, 4)}, ["y"], opset=13)


@case("ConstantOfShape_from_Shape")
def _(ctx):
    val = onnx.numpy_helper.from_array(np.array([0.75], F32), "v")
    nodes = [helper.make_node("Shape", ["x"], ["s"]),
             helper.make_node("ConstantOfShape", ["s"], ["c"], value=val),
             helper.make_node("Add", ["x", "c"], ["y"])]
    return chain(nodes, {"x": ctx.f(2, 3, 4)}, ["y"])


@case("ConstantOfShape_default_zero_int")
def _(ctx):
    nodes = [helper.make_node("ConstantOfShape", ["s"], ["c"]),
             helper.make_node("Sub", ["x", "c"], ["y"])]
    return chain(nodes, {"x": ctx.f(4, 5)}, ["y"], {"s": np.array([4, 5], np.int64)})


@case("Range_int_cast_add")
def _(ctx):
    nodes = [helper.make_node("Range", ["a", "b", "d"], ["r"]),
             helper.make_node("Cast", ["r"], ["rf"], to=TP.FLOAT),
             helper.make_node("Add", ["x", "rf"], ["y"])]
    consts = {"a": np.array(0, np.int64), "b": np.array(5, np.int64), "d": np.array(1, np.int64)}
    return chain(nodes, {"x": ctx.f(3, 5)}, ["y"], consts)


@case("Range_float_negative_delta")
def _(ctx):
    nodes = [helper.make_node("Range", ["a", "b", "d"], ["r"]),
             helper.make_node("Mul", ["x", "r"], ["y"])]
    consts = {"a": np.array(3.0, F32), "b": np.array(0.5, F32), "d": np.array(-0.5, F32)}
    return chain(nodes, {"x": ctx.f(2, 5)}, ["y"], consts)


@case("Range_from_Shape_Gather")
def _(ctx):
    nodes = [helper.make_node("Shape", ["x"], ["s"]),
             helper.make_node("Gather", ["s", "i"], ["n"], axis=0),
             helper.make_node("Range", ["z", "n", "o"], ["r"]),
             helper.make_node("Cast", ["r"], ["rf"], to=TP.FLOAT),
             helper.make_node("Mul", ["x", "rf"], ["y"])]
    consts = {"i": np.array(1, np.int64), "z": np.array(0, np.int64), "o": np.array(1, np.int64)}
    return chain(nodes, {"x": ctx.f(3, 6)}, ["y"], consts)


# ------------------------------------------------------------------------------------ casts
@case("Cast_float_int32_float")
def _(ctx):
    nodes = [helper.make_node("Cast", ["x"], ["i"], to=TP.INT32),
             helper.make_node("Cast", ["i"], ["y"], to=TP.FLOAT)]
    return chain(nodes, {"x": ctx.f(4, 6, lo=-20, hi=20)}, ["y"])


@case("Cast_float_fp16_float")
def _(ctx):
    nodes = [helper.make_node("Cast", ["x"], ["h"], to=TP.FLOAT16),
             helper.make_node("Cast", ["h"], ["y"], to=TP.FLOAT)]
    return chain(nodes, {"x": ctx.f(4, 6, lo=-300, hi=300)}, ["y"])


@case("Cast_fp16_rounding_residual")
def _(ctx):
    # y = f32(f16(x)) - x is exactly the fp16 rounding error: a backend that skips the
    # rounding outputs zeros and fails even the loose fp16 tolerance.
    nodes = [helper.make_node("Cast", ["x"], ["h"], to=TP.FLOAT16),
             helper.make_node("Cast", ["h"], ["b"], to=TP.FLOAT),
             helper.make_node("Sub", ["b", "x"], ["y"])]
    return chain(nodes, {"x": ctx.f(8, 16, lo=-100, hi=100)}, ["y"])


@case("Cast_float_bool_float")
def _(ctx):
    nodes = [helper.make_node("Cast", ["x"], ["b"], to=TP.BOOL),
             helper.make_node("Cast", ["b"], ["y"], to=TP.FLOAT)]
    return chain(nodes, {"x": ctx.ints(5, 5, lo=-1, hi=2)}, ["y"])


@case("Cast_uint8_float_opset13")
def _(ctx):
    x = ctx.rng.integers(0, 256, (2, 3, 4), dtype=np.uint8)
    return one("Cast", {"x": x}, opset=13, to=TP.FLOAT)


@case("Cast_uint8_fp16_output")
def _(ctx):
    x = ctx.rng.integers(0, 256, (1, 3, 5, 4), dtype=np.uint8)
    return one("Cast", {"x": x}, opset=17, to=TP.FLOAT16, out_types={"y0": TP.FLOAT16})


@case("CastLike_fp16_opset15")
def _(ctx):
    nodes = [helper.make_node("CastLike", ["x", "like"], ["h"]),
             helper.make_node("Cast", ["h"], ["y"], to=TP.FLOAT)]
    return chain(nodes, {"x": ctx.f(3, 5, lo=-10, hi=10)}, ["y"],
                 {"like": np.array([1.0], np.float16)}, opset=15)


@case("CastLike_int64_opset15")
def _(ctx):
    nodes = [helper.make_node("CastLike", ["x", "like"], ["i"]),
             helper.make_node("Cast", ["i"], ["y"], to=TP.FLOAT)]
    return chain(nodes, {"x": ctx.f(3, 5, lo=-10, hi=10)}, ["y"],
                 {"like": np.array([1], np.int64)}, opset=15)


# ------------------------------------------------------------------ newest opset variants
@case("Reshape_opset21")
def _(ctx):
    return one("Reshape", {"x": ctx.f(2, 3, 4)}, {"s": np.array([4, -1], np.int64)}, opset=21)


@case("Squeeze_Unsqueeze_opset21")
def _(ctx):
    nodes = [helper.make_node("Squeeze", ["x", "a"], ["s"]),
             helper.make_node("Unsqueeze", ["s", "b"], ["y"])]
    return chain(nodes, {"x": ctx.f(1, 5, 1, 3)}, ["y"],
                 {"a": np.array([0, 2], np.int64), "b": np.array([-1], np.int64)}, opset=21)


@case("Pad_reflect_opset21")
def _(ctx):
    return one("Pad", {"x": ctx.f(2, 5, 6)}, {"p": np.array([0, 1, 2, 0, 2, 1], np.int64)},
               opset=21, mode="reflect")


@case("Transpose_Flatten_opset21")
def _(ctx):
    nodes = [helper.make_node("Transpose", ["x"], ["t"], perm=[0, 3, 1, 2]),
             helper.make_node("Flatten", ["t"], ["y"], axis=2)]
    return chain(nodes, {"x": ctx.f(2, 3, 4, 5)}, ["y"], opset=21)


@case("Cast_uint8_opset21")
def _(ctx):
    x = ctx.rng.integers(0, 256, (2, 3, 4), dtype=np.uint8)
    return one("Cast", {"x": x}, opset=21, to=TP.FLOAT)


# ------------------------------------------------------------------------ small subgraphs
@case("Chain_conv_bn_gelu_residual")
def _(ctx):
    c = 8
    consts = {"w": ctx.f(c, 1, 3, 3, lo=-0.5, hi=0.5), "b": ctx.f(c),
              "s": ctx.f(c, lo=0.5, hi=1.5), "bb": ctx.f(c), "m": ctx.f(c, lo=-0.2, hi=0.2),
              "v": ctx.f(c, lo=0.5, hi=1.5), "g": ctx.f(c, 1, 1, lo=0.05, hi=0.5)}
    nodes = [helper.make_node("Conv", ["x", "w", "b"], ["c"], group=c, kernel_shape=[3, 3],
                              pads=[1, 1, 1, 1]),
             helper.make_node("BatchNormalization", ["c", "s", "bb", "m", "v"], ["n"]),
             helper.make_node("Gelu", ["n"], ["a"]),
             helper.make_node("Mul", ["a", "g"], ["l"]),
             helper.make_node("Add", ["x", "l"], ["y"])]
    return chain(nodes, {"x": ctx.f(1, c, 9, 7)}, ["y"], consts, opset=20)


@case("Chain_squeeze_excite")
def _(ctx):
    c, r = 16, 4
    consts = {"w1": ctx.f(r, c, 1, 1), "b1": ctx.f(r), "w2": ctx.f(c, r, 1, 1), "b2": ctx.f(c)}
    nodes = [helper.make_node("GlobalAveragePool", ["x"], ["p"]),
             helper.make_node("Conv", ["p", "w1", "b1"], ["c1"], kernel_shape=[1, 1]),
             helper.make_node("Relu", ["c1"], ["r1"]),
             helper.make_node("Conv", ["r1", "w2", "b2"], ["c2"], kernel_shape=[1, 1]),
             helper.make_node("Sigmoid", ["c2"], ["s"]),
             helper.make_node("Mul", ["x", "s"], ["y"])]
    return chain(nodes, {"x": ctx.f(1, c, 5, 6)}, ["y"], consts)


@case("Chain_two_outputs")
def _(ctx):
    nodes = [helper.make_node("Relu", ["x"], ["a"]), helper.make_node("Exp", ["a"], ["b"]),
             helper.make_node("Neg", ["x"], ["c"])]
    return chain(nodes, {"x": ctx.f(3, 4)}, ["b", "c"])


# ------------------------------------------------------------------------------- the tests
@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """Builds each case's model and onnxruntime reference once, shared by the backends."""
    root = tmp_path_factory.mktemp("ops")
    cache = {}

    def get(name):
        if name not in cache:
            d = root / name
            d.mkdir()
            model, feeds = CASES[name](Ctx(name))
            cache[name] = save_case(d, model, feeds)
        return cache[name]
    return get


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("name", sorted(CASES))
def test_op(cli, built, name, backend):
    if backend == "opencl" and not cli.has_opencl():
        pytest.skip("no OpenCL device")
    mpath, rpath, outs = built(name)
    for k, v in outs.items():
        assert np.all(np.isfinite(v.astype(np.float64))), f"onnxruntime output {k} not finite"
    assert_verify_ok(cli, mpath, rpath, backend)


# Cases whose plans keep image-layout activations on opencl: run them again with the settings for
# desktop GPUs (image-layout activations in global buffers, wide-GPU conv tiles and splits).
IMAGE_CASES = sorted(n for n in CASES if n.startswith((
    "Conv_", "AveragePool_", "MaxPool_", "GlobalAveragePool", "Chain_", "ReduceMean_hw", "ReduceMax_hw",
    "BatchNormalization_nchw", "Cast_uint8")) or n.endswith("_chan"))


@pytest.mark.parametrize("name", IMAGE_CASES)
def test_op_opencl_buffer_images(cli, built, tmp_path, name):
    if not cli.has_opencl():
        pytest.skip("no OpenCL device")
    mpath, rpath, _ = built(name)
    opv = tmp_path / "m.opv"
    p = cli.run("compile", mpath, "-o", opv, "--target", "opencl", "--cl-images", "buffer",
                "--cl-busy-items", "65536", "--cl-batch", "16")
    assert p.returncode == 0, describe(p)
    assert_verify_ok(cli, opv, rpath, "opencl")


def test_op_coverage():
    """Every ONNX op the project claims is exercised by at least one case above."""
    claimed = """Conv BatchNormalization Gemm MatMul Add Sub Mul Div Pow Sqrt Erf Gelu Relu LeakyRelu
        Elu Sigmoid HardSigmoid HardSwish Tanh Softplus Clip Exp Log Neg Abs Reciprocal Min Max
        Where Equal Less Greater Not GlobalAveragePool AveragePool MaxPool ReduceMean ReduceSum
        ReduceMax Softmax LayerNormalization Flatten Reshape Transpose Concat Split Slice Gather
        Squeeze Unsqueeze Expand Tile Pad Resize Shape Size Constant ConstantOfShape Range Cast
        CastLike Identity Dropout""".split()
    used = set()
    for name, fn in CASES.items():
        model, _ = fn(Ctx(name))
        used |= {n.op_type for n in model.graph.node}
    missing = [op for op in claimed if op not in used]
    assert not missing, f"ops without a test case: {missing}"


# ------------------------------------------------------------------------------ error paths
def _tiny(tmp_path, ctx_name="tiny"):
    ctx = Ctx(ctx_name)
    model, feeds = one("Relu", {"x": ctx.f(2, 3)})
    return save_case(tmp_path, model, feeds)


def test_verify_detects_wrong_reference(cli, tmp_path):
    """A reference that is off by 10% must make verify exit 1 (not 0, not 2)."""
    ctx = Ctx("wrongref")
    model, feeds = one("Add", {"a": ctx.f(4, 5)}, {"b": ctx.f(5)})
    mpath, rpath, outs = save_case(tmp_path, model, feeds)
    bad = tmp_path / "bad.npz"
    np.savez(bad, **feeds, y0=outs["y0"] * 1.1 + 0.1)
    for backend in CPU_BACKENDS:
        p, rel, _ = cli.verify(mpath, bad, backend)
        assert p.returncode == 1, describe(p)
        assert rel is not None and rel > 1e-3, describe(p)


@pytest.mark.parametrize("op", ["LSTM", "FooBarNotAnOp"])
def test_unsupported_op(cli, tmp_path, op):
    ctx = Ctx("unsupported")
    nodes = [helper.make_node("Relu", ["x"], ["r"], name="first_relu"),
             helper.make_node(op, ["r"], ["y"], name="the_bad_node", **(
                 {"hidden_size": 2} if op == "LSTM" else {}))]
    model = make_model(nodes, {"x": ctx.f(2, 3)}, ["y"], check=False)
    path = tmp_path / "bad.onnx"
    onnx.save(model, str(path))
    for args in (["compile", path, "-o", tmp_path / "bad.opv"], ["run", path, "--seed", "1"]):
        p = cli.run(*args)
        assert_error(p, "the_bad_node", op)


def _save_unchecked(tmp_path, model):
    path = tmp_path / "m.onnx"
    onnx.save(model, str(path))
    return path


def test_unsupported_opset(cli, tmp_path):
    # opset 7-10 models are upgraded at import (issue 12); older ones are refused by opset
    ctx = Ctx("opset5")
    model = make_model([helper.make_node("Add", ["a", "b"], ["y"])], {"a": ctx.f(3, 4), "b": ctx.f(4)}, ["y"],
                       opset=5, check=False)
    assert_error(cli.run("compile", _save_unchecked(tmp_path, model), "-o", tmp_path / "m.opv"),
                 "opset 5")


def test_unsupported_attribute_names_node(cli, tmp_path):
    ctx = Ctx("avgdil")
    node = helper.make_node("AveragePool", ["x"], ["y"], name="pool_with_dilations",
                            kernel_shape=[2, 2], dilations=[2, 1])
    model = make_model([node], {"x": ctx.f(1, 2, 10, 9)}, ["y"], opset=19)
    assert_error(cli.run("compile", _save_unchecked(tmp_path, model), "-o", tmp_path / "m.opv"),
                 "pool_with_dilations", "AveragePool", "dilations")


def test_dropout_mask_is_all_true_in_inference(cli, tmp_path):
    # the mask output is supported since issue 12's conformance work: inference keeps everything
    ctx = Ctx("mask")
    x = ctx.f(3, 8)
    nodes = [helper.make_node("Dropout", ["x"], ["y", "mask"], name="drop_with_mask"),
             helper.make_node("Cast", ["mask"], ["m"], to=TP.FLOAT),
             helper.make_node("Add", ["y", "m"], ["z"])]
    model = make_model(nodes, {"x": x}, ["z"], opset=12)
    path = _save_unchecked(tmp_path, model)
    np.savez(tmp_path / "in.npz", x=x)
    p = cli.run("run", path, "--inputs", tmp_path / "in.npz", "-o", tmp_path / "out.npz", "--backend", "reference")
    assert p.returncode == 0, describe(p)
    np.testing.assert_allclose(np.load(tmp_path / "out.npz")["z"], x + 1, rtol=1e-6)


def test_missing_model_file(cli, tmp_path):
    p = cli.run("run", tmp_path / "does_not_exist.onnx", "--seed", "0")
    assert_error(p, "does_not_exist.onnx")


def test_garbage_onnx(cli, tmp_path):
    path = tmp_path / "garbage.onnx"
    path.write_bytes(b"\x08\x07this is not a protobuf model" * 7)
    assert_error(cli.run("compile", path, "-o", tmp_path / "g.opv"))


def test_npz_wrong_input_name(cli, tmp_path):
    mpath, _, outs = _tiny(tmp_path)
    bad = tmp_path / "bad.npz"
    np.savez(bad, not_x=np.zeros((2, 3), F32), y0=outs["y0"])
    assert_error(cli.run("verify", mpath, "--ref", bad), "x")
    assert_error(cli.run("run", mpath, "--inputs", bad), "x")


def test_npz_wrong_input_shape(cli, tmp_path):
    mpath, _, outs = _tiny(tmp_path)
    bad = tmp_path / "bad.npz"
    np.savez(bad, x=np.zeros((3, 2), F32), y0=outs["y0"])
    assert_error(cli.run("verify", mpath, "--ref", bad), "x", "shape")


def test_npz_wrong_input_dtype(cli, tmp_path):
    mpath, _, outs = _tiny(tmp_path)
    bad = tmp_path / "bad.npz"
    np.savez(bad, x=np.zeros((2, 3), np.int32), y0=outs["y0"])
    assert_error(cli.run("verify", mpath, "--ref", bad), "x", "dtype")


def test_npz_missing_output(cli, tmp_path):
    mpath, _, _ = _tiny(tmp_path)
    bad = tmp_path / "bad.npz"
    np.savez(bad, x=np.zeros((2, 3), F32))
    assert_error(cli.run("verify", mpath, "--ref", bad), "y0")


def test_npz_not_a_zip(cli, tmp_path):
    mpath, _, _ = _tiny(tmp_path)
    bad = tmp_path / "bad.npz"
    bad.write_bytes(b"PK\x03\x04 definitely not a complete zip archive")
    assert_error(cli.run("verify", mpath, "--ref", bad))


def test_truncated_and_corrupted_artifact(cli, tmp_path):
    ctx = Ctx("artifact")
    model, feeds = one("Conv", {"x": ctx.f(1, 3, 8, 8)}, {"w": ctx.f(4, 3, 3, 3)},
                       kernel_shape=[3, 3], pads=[1, 1, 1, 1])
    mpath, _, _ = save_case(tmp_path, model, feeds)
    opv = tmp_path / "m.opv"
    p = cli.run("compile", mpath, "-o", opv)
    assert p.returncode == 0, describe(p)
    good = opv.read_bytes()
    p = cli.run("run", opv, "--seed", "3")
    assert p.returncode == 0, describe(p)
    for cut in (len(good) // 2, len(good) - 1, 16, 0):
        t = tmp_path / f"trunc_{cut}.opv"
        t.write_bytes(good[:cut])
        assert_error(cli.run("run", t, "--seed", "3"))
    # a flipped byte in the middle (weights or plan) must be caught by the checksum
    c = bytearray(good)
    c[len(c) // 2] ^= 0x5A
    t = tmp_path / "flipped.opv"
    t.write_bytes(bytes(c))
    assert_error(cli.run("run", t, "--seed", "3"))


def test_unknown_backend(cli, tmp_path):
    mpath, rpath, _ = _tiny(tmp_path)
    assert_error(cli.run("verify", mpath, "--ref", rpath, "--backend", "no_such_backend"),
                 "no_such_backend")
