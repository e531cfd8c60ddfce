#!/usr/bin/env python3
"""Writes the committed seed corpora under tests/fuzz/corpus/ (small, deterministic).

  python3 tests/fuzz/make_seeds.py [--opvision build/opvision]

onnx: tiny one-to-few-op models (numpy + onnx.helper; even the smallest make-model network is
~500 KB, too large for a seed);
opv: those compiled for reference and cpu; npy: every supported dtype, header versions 1-3,
.npz stored and deflated; ir3: raw code of committed a630 kernels and short assembler programs
(first byte = harness mode, see targets.cpp); container: program binaries in the layout of
src/ir3/container.cpp make(); capture: tests/data/ir3/small_fp16/capture.json; pm4: short
streams of type-4 and type-7 packets; cubin: NVRTC's cubins of two small kernels (sm_80, sm_90),
written only where NVRTC loads (ctypes), else the committed ones stay.
"""
import argparse, io, os, shutil, struct, subprocess, sys, tempfile, zipfile
import numpy as np
import onnx
from onnx import TensorProto as TP, helper as H, numpy_helper as NH

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CORPUS = os.path.join(ROOT, "tests", "fuzz", "corpus")


def out(target, name, data):
    d = os.path.join(CORPUS, target)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)


def model(name, nodes, inputs, outputs, inits=(), opset=17):
    g = H.make_graph(nodes, name, inputs, outputs, initializer=list(inits))
    m = H.make_model(g, opset_imports=[H.make_opsetid("", opset)], producer_name="opv-fuzz-seed")
    m.ir_version = 8
    return m.SerializeToString()


def vi(name, dt, shape):
    return H.make_tensor_value_info(name, dt, shape)


def w(name, shape, seed=0, dtype=np.float32):
    rng = np.random.default_rng(seed)
    return NH.from_array(rng.standard_normal(shape).astype(dtype), name)


def onnx_seeds():
    F = TP.FLOAT
    s = {}
    s["conv_relu"] = model("conv_relu", [
        H.make_node("Conv", ["x", "w", "b"], ["c"], kernel_shape=[3, 3], pads=[1, 1, 1, 1], strides=[1, 1]),
        H.make_node("Relu", ["c"], ["y"])],
        [vi("x", F, [1, 2, 6, 6])], [vi("y", F, [1, 3, 6, 6])], [w("w", [3, 2, 3, 3]), w("b", [3], 1)])
    s["dwconv_stride"] = model("dwconv", [
        H.make_node("Conv", ["x", "w"], ["y"], kernel_shape=[3, 3], pads=[1, 1, 1, 1], strides=[2, 2], group=4)],
        [vi("x", F, [1, 4, 8, 8])], [vi("y", F, [1, 4, 4, 4])], [w("w", [4, 1, 3, 3])])
    s["pools"] = model("pools", [
        H.make_node("MaxPool", ["x"], ["a"], kernel_shape=[2, 2], strides=[2, 2]),
        H.make_node("AveragePool", ["a"], ["b"], kernel_shape=[3, 3], pads=[1, 1, 1, 1], strides=[1, 1]),
        H.make_node("GlobalAveragePool", ["b"], ["y"])],
        [vi("x", F, [1, 2, 8, 8])], [vi("y", F, [1, 2, 1, 1])])
    s["gemm"] = model("gemm", [
        H.make_node("Gemm", ["x", "w", "b"], ["g"], transB=1),
        H.make_node("Sigmoid", ["g"], ["s"]), H.make_node("Mul", ["g", "s"], ["y"])],
        [vi("x", F, [2, 8])], [vi("y", F, [2, 4])], [w("w", [4, 8]), w("b", [4], 2)])
    s["matmul_softmax"] = model("mm", [
        H.make_node("MatMul", ["x", "w"], ["m"]), H.make_node("Softmax", ["m"], ["y"], axis=-1)],
        [vi("x", F, [1, 3, 4])], [vi("y", F, [1, 3, 5])], [w("w", [4, 5])])
    s["shape_ops"] = model("shape_ops", [
        H.make_node("Transpose", ["x"], ["t"], perm=[0, 2, 3, 1]),
        H.make_node("Reshape", ["t", "shp"], ["r"]),
        H.make_node("Slice", ["r", "st", "en", "ax"], ["sl"]),
        H.make_node("Concat", ["sl", "sl"], ["y"], axis=1)],
        [vi("x", F, [1, 2, 3, 4])], [vi("y", F, [1, 8])],
        [NH.from_array(np.array([1, -1], np.int64), "shp"), NH.from_array(np.array([2], np.int64), "st"),
         NH.from_array(np.array([6], np.int64), "en"), NH.from_array(np.array([1], np.int64), "ax")])
    s["resize_pad"] = model("resize_pad", [
        H.make_node("Resize", ["x", "", "sc"], ["r"], mode="nearest"),
        H.make_node("Pad", ["r", "pads"], ["y"], mode="constant")],
        [vi("x", F, [1, 1, 2, 3])], [vi("y", F, [1, 1, 6, 8])],
        [NH.from_array(np.array([1, 1, 2, 2], np.float32), "sc"),
         NH.from_array(np.array([0, 0, 1, 1, 0, 0, 1, 1], np.int64), "pads")])
    s["reduce_norm"] = model("reduce_norm", [
        H.make_node("ReduceMean", ["x"], ["m"], axes=[2], keepdims=1),
        H.make_node("Sub", ["x", "m"], ["d"]),
        H.make_node("LayerNormalization", ["d", "g", "b"], ["y"], axis=-1, epsilon=1e-5)],
        [vi("x", F, [1, 3, 4])], [vi("y", F, [1, 3, 4])], [w("g", [4]), w("b", [4], 3)], opset=17)
    s["cast_uint8_split"] = model("cast_split", [
        H.make_node("Cast", ["x"], ["c"], to=F),
        H.make_node("Split", ["c", "sp"], ["a", "b"], axis=1),
        H.make_node("Add", ["a", "b"], ["y"])],
        [vi("x", TP.UINT8, [1, 4, 2, 2])], [vi("y", F, [1, 2, 2, 2])],
        [NH.from_array(np.array([2, 2], np.int64), "sp")])
    s["gather_where_range"] = model("gather_where", [
        H.make_node("Range", ["r0", "r1", "r2"], ["idx"]),
        H.make_node("Gather", ["x", "idx"], ["g"], axis=1),
        H.make_node("Greater", ["g", "zero"], ["c"]),
        H.make_node("Where", ["c", "g", "zero"], ["y"])],
        [vi("x", F, [2, 6])], [vi("y", F, [2, 3])],
        [NH.from_array(np.array(0, np.int64), "r0"), NH.from_array(np.array(6, np.int64), "r1"),
         NH.from_array(np.array(2, np.int64), "r2"), NH.from_array(np.array(0, np.float32), "zero")])
    s["batchnorm_clip_erf"] = model("bn_gelu", [
        H.make_node("BatchNormalization", ["x", "s", "b", "m", "v"], ["n"]),
        H.make_node("Clip", ["n", "lo", "hi"], ["c"]),
        H.make_node("Div", ["c", "sq2"], ["d"]), H.make_node("Erf", ["d"], ["e"]),
        H.make_node("Add", ["e", "one"], ["e1"]), H.make_node("Mul", ["c", "e1"], ["h"]),
        H.make_node("Mul", ["h", "half"], ["y"])],
        [vi("x", F, [1, 2, 3, 3])], [vi("y", F, [1, 2, 3, 3])],
        [w("s", [2]), w("b", [2], 1), w("m", [2], 2), NH.from_array(np.array([1.0, 2.0], np.float32), "v"),
         NH.from_array(np.array(-6, np.float32), "lo"), NH.from_array(np.array(6, np.float32), "hi"),
         NH.from_array(np.array(1.4142135, np.float32), "sq2"), NH.from_array(np.array(1, np.float32), "one"),
         NH.from_array(np.array(0.5, np.float32), "half")])
    s["fp16_cast"] = model("fp16", [
        H.make_node("Cast", ["x"], ["h"], to=TP.FLOAT16),
        H.make_node("Mul", ["h", "k"], ["m"]), H.make_node("Cast", ["m"], ["y"], to=F)],
        [vi("x", F, [1, 4])], [vi("y", F, [1, 4])], [NH.from_array(np.array([2, 3, 4, 5], np.float16), "k")])
    for k, v in s.items():
        out("onnx", k + ".onnx", v)
    return s


def npy_bytes(a, version=None):
    b = io.BytesIO()
    if version is None:
        np.save(b, a)
    else:
        np.lib.format.write_array(b, a, version=version)
    return b.getvalue()


def npy_seeds():
    rng = np.random.default_rng(0)
    arrs = {
        "f4": rng.standard_normal((2, 3)).astype("<f4"), "f2": rng.standard_normal(5).astype("<f2"),
        "f8": rng.standard_normal((2, 2)).astype("<f8"), "i8": np.arange(6, dtype="<i8").reshape(3, 2),
        "i4": np.arange(4, dtype="<i4"), "i1": np.array([-1, 0, 1], "|i1"),
        "u1": np.arange(12, dtype="|u1").reshape(1, 3, 2, 2), "b1": np.array([True, False]),
        "scalar": np.array(1.5, "<f4"), "empty": np.zeros((0, 3), "<f4"),
    }
    for k, a in arrs.items():
        out("npy", k + ".npy", npy_bytes(a))
    out("npy", "v2.npy", npy_bytes(arrs["f4"], (2, 0)))
    out("npy", "v3.npy", npy_bytes(arrs["u1"], (3, 0)))
    for comp, tag in ((zipfile.ZIP_STORED, "stored"), (zipfile.ZIP_DEFLATED, "deflated")):
        b = io.BytesIO()
        with zipfile.ZipFile(b, "w", comp) as z:
            z.writestr("img.npy", npy_bytes(arrs["u1"]))
            z.writestr("x.npy", npy_bytes(arrs["f4"]))
        out("npy", f"{tag}.npz", b.getvalue())


IR3_PROGRAMS = {
    "loop": """
  mov.u32u32 r1.x, 0
  mov.u32u32 r1.y, 0
loop:
  add.u r1.y, r1.y, r1.x
  add.u r1.x, r1.x, 1
  cmps.u.lt p0.x, r1.x, r0.x
  br p0.x, #loop
  shl.b r2.x, r0.x, 2
  add.u r3.x, c0.x, r2.x
  mov.u32u32 r3.y, c0.y
  stg.u32 g[r3.x], r1.y, 1
  end
""",
    "alu": """
  add.f r0.y, r0.x, r0.x
  (rpt1)mul.f r1.x, (r)r0.x, c2.x
  mad.f32 r2.x, r1.x, r1.y, r0.y
  rcp r2.y, r2.x
  (ss)cov.f32f16 hr4.x, r2.y
  sel.b32 r3.x, r2.x, r0.z, r2.y
  end
""",
    "mem": """
  shl.b r1.x, r0.x, 2
  add.u r2.x, c0.x, r1.x
  mov.u32u32 r2.y, c0.y
  ldg.u32 r3.x, g[r2.x], 1
  (sy)add.u r3.x, r3.x, 7
  stl.u32 l[r1.x], r3.x, 1
  bar
  ldl.u32 r4.x, l[r1.x], 1
  (sy)stg.u32 g[r2.x+4], r4.x, 1
  end
""",
    "hazards": """
  ldg.f32 r1.x, g[r0.x], 1
  add.f r2.x, r1.x, r1.x
  rcp r3.x, r2.x
  mul.f r4.x, r3.x, r3.x
  end
""",
}


def ir3_seeds():
    kdir = os.path.join(ROOT, "tests", "data", "ir3", "small_fp16", "kernels")
    bins = sorted(os.listdir(kdir))
    for i, name in enumerate(bins[::12][:6]):
        code = open(os.path.join(kdir, name), "rb").read()[: 32 * 8]
        out("ir3", f"a630_{name}", bytes([0x18]) + code)         # a6xx, raw words, 4 fibers
    code = open(os.path.join(kdir, bins[0]), "rb").read()[: 32 * 8]
    for mode, gen in ((4, "a4xx"), (5, "a5xx"), (6, "a7xx"), (7, "a8xx")):
        out("ir3", f"raw_{gen}.bin", bytes([mode]) + code)
    for k, text in IR3_PROGRAMS.items():
        out("ir3", f"text_{k}.s", bytes([0x98]) + text.encode())


def container_blob(code, name, args, full_regs, half_regs, consts=()):
    # Layout of qcom::make() (src/ir3/container.cpp): header | reg record | image | descriptor,
    # optional immediate-constant records (40 bytes each) between reg record and image.
    reg_at, image_at = 0x120, 0x200
    rup = lambda v, a: (v + a - 1) // a * a
    desc_at = rup(image_at + len(code), 16)
    args_at = rup(desc_at + 0x158 + len(name), 4)
    b = bytearray(args_at + 64 * len(args) + 32)
    put = lambda at, v: struct.pack_into("<I", b, at, v)
    put(0x34, reg_at); put(0xc0, image_at); put(0x100, len(code)); put(0x110, desc_at)
    put(reg_at + 0x14, full_regs); put(reg_at + 0x18, half_regs)
    b[image_at:image_at + len(code)] = code
    b[desc_at + 0x158:desc_at + 0x158 + len(name)] = name.encode()
    put(desc_at + 0xdc, sum(1 for a in args if a == 1))
    for i, t in enumerate(args):
        r = args_at + 64 * i
        put(r, 64); put(r + 12, 4 * i); put(r + 28, t)
    if consts:
        at = 0x140
        put(0xac, at); put(0xb0, 1)
        for j, (val, off, is32) in enumerate(consts):
            r = at + 40 * j
            put(r, val); put(r + 16, off); put(r + 24, is32)
    return bytes(b)


def container_seeds():
    kdir = os.path.join(ROOT, "tests", "data", "ir3", "small_fp16", "kernels")
    bins = sorted(os.listdir(kdir))
    code = open(os.path.join(kdir, bins[0]), "rb").read()
    out("container", "buffer_args.bin", container_blob(code, "E_4_3", [0, 0], 3, 1))
    out("container", "tex_ibo.bin", container_blob(open(os.path.join(kdir, bins[20]), "rb").read(), "r_32_4",
                                                   [0, 1, 2, 5], 8, 2))
    out("container", "consts.bin", container_blob(code[:64], "k", [0], 1, 0,
                                                 consts=[(0x3f800000, 8, 1), (0x3c00, 3, 0)]))
    out("container", "empty_code.bin", container_blob(b"", "e", [], 0, 0))


def pm4_parity(v):
    v ^= v >> 16; v ^= v >> 8; v ^= v >> 4
    return (~0x6996 >> (v & 0xf)) & 1


def pm4_type4(reg, vals):
    n = len(vals)
    return [(4 << 28) | (pm4_parity(reg) << 27) | (reg << 8) | (pm4_parity(n) << 7) | n] + list(vals)


def pm4_type7(op, vals):
    n = len(vals)
    return [(7 << 28) | (pm4_parity(op) << 23) | (op << 16) | (pm4_parity(n) << 15) | n] + list(vals)


def pm4_seeds():
    # header layout of backend/qcom/pm4.cpp (PM4.md section 1); first byte: harness flags
    SP_CS_CONFIG, CP_NOP, CP_WAIT_FOR_IDLE, CP_EXEC_CS, CP_EVENT_WRITE = 0xa9bb, 0x10, 0x26, 0x33, 0x46
    streams = {
        "regs_exec": pm4_type4(SP_CS_CONFIG, [0x100]) + pm4_type7(CP_EXEC_CS, [0, 4, 1, 1]),
        "nop_wait_event": pm4_type7(CP_NOP, [1, 2, 3]) + pm4_type7(CP_WAIT_FOR_IDLE, []) +
                          pm4_type7(CP_EVENT_WRITE, [4]),
        "unknown_reg": pm4_type4(0x1234, [7, 8]),
    }
    for k, dws in streams.items():
        out("pm4", k + ".bin", bytes([1 if k == "unknown_reg" else 0]) + struct.pack(f"<{len(dws)}I", *dws))


def opv_seeds(opvision, onnx_models):
    with tempfile.TemporaryDirectory() as tmp:
        for k in ("conv_relu", "pools", "gemm", "shape_ops", "gather_where_range", "cast_uint8_split",
                  "reduce_norm", "fp16_cast"):
            src = os.path.join(tmp, k + ".onnx")
            open(src, "wb").write(onnx_models[k])
            for target in ("reference", "cpu"):
                dst = os.path.join(tmp, f"{k}_{target}.opv")
                r = subprocess.run([opvision, "compile", src, "-o", dst, "--target", target],
                                   capture_output=True, text=True)
                if r.returncode != 0:
                    print(f"make_seeds: {k} ({target}): {r.stderr.strip()}", file=sys.stderr)
                    continue
                out("opv", f"{k}_{target}.opv", open(dst, "rb").read())


def cubin_seeds():
    import ctypes
    for name in ("libnvrtc.so", "libnvrtc.so.13", "libnvrtc.so.12", "/usr/local/cuda/lib64/libnvrtc.so"):
        try:
            nv = ctypes.CDLL(name)
            break
        except OSError:
            nv = None
    if nv is None:
        print("make_seeds: no NVRTC: the committed cubin seeds stay", file=sys.stderr)
        return
    shutil.rmtree(os.path.join(CORPUS, "cubin"), ignore_errors=True)
    src = (b'extern "C" __global__ void k(const float* x, float* y, int n) {'
           b' int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) y[i] = x[i] * 2.0f + 1.0f; }')
    for sm in (80, 90):
        prog = ctypes.c_void_p()
        assert nv.nvrtcCreateProgram(ctypes.byref(prog), src, b"k.cu", 0, None, None) == 0
        opts = (ctypes.c_char_p * 1)(f"--gpu-architecture=sm_{sm}".encode())
        assert nv.nvrtcCompileProgram(prog, 1, opts) == 0
        size = ctypes.c_size_t()
        assert nv.nvrtcGetCUBINSize(prog, ctypes.byref(size)) == 0
        buf = ctypes.create_string_buffer(size.value)
        assert nv.nvrtcGetCUBIN(prog, buf) == 0
        nv.nvrtcDestroyProgram(ctypes.byref(prog))
        out("cubin", f"scale_sm{sm}.cubin", buf.raw)
        out("cubin", f"scale_sm{sm}_header.cubin", buf.raw[:64])  # the header alone: tables outside


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--opvision", default=os.path.join(ROOT, "build", "opvision"))
    a = ap.parse_args()
    for t in ("onnx", "opv", "npy", "ir3", "container", "capture", "pm4"):
        shutil.rmtree(os.path.join(CORPUS, t), ignore_errors=True)
    models = onnx_seeds()
    npy_seeds()
    ir3_seeds()
    container_seeds()
    pm4_seeds()
    cubin_seeds()
    out("capture", "small_fp16.json",
        open(os.path.join(ROOT, "tests", "data", "ir3", "small_fp16", "capture.json"), "rb").read())
    opv_seeds(a.opvision, models)


if __name__ == "__main__":
    main()
