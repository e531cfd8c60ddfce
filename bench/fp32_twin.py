#!/usr/bin/env python3
"""Writes an fp32 twin of an fp16 ONNX model: every float16 initializer, Constant value, Cast
target, value_info, graph input and output becomes float32 (weights widened exactly), so the
graph and its shapes stay the same and only the precision changes. For benchmarking where the
PyTorch/timm generator of the real fp32 twin (../shared/models/make_fixtures.py) is not available.

Usage: bench/fp32_twin.py IN_fp16.onnx OUT_fp32.onnx
"""
import sys

import numpy as np
import onnx
from onnx import TensorProto, numpy_helper

F16, F32 = TensorProto.FLOAT16, TensorProto.FLOAT


def widen(t):
    if t.data_type != F16:
        return t
    w = numpy_helper.from_array(numpy_helper.to_array(t).astype(np.float32), t.name)
    return w


def fix_type(vi):
    tt = vi.type.tensor_type
    if tt.elem_type == F16:
        tt.elem_type = F32


def main(src, dst):
    m = onnx.load(src)
    g = m.graph
    for i, t in enumerate(g.initializer):
        g.initializer[i].CopyFrom(widen(t))
    for n in g.node:
        for a in n.attribute:
            if a.type == onnx.AttributeProto.TENSOR:
                a.t.CopyFrom(widen(a.t))
            if n.op_type == "Cast" and a.name == "to" and a.i == F16:
                a.i = F32
    for vi in list(g.input) + list(g.output) + list(g.value_info):
        fix_type(vi)
    onnx.checker.check_model(m)
    onnx.save(m, dst)


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    main(sys.argv[1], sys.argv[2])
