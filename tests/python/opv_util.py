"""Helpers for the CLI-level tests: build small ONNX models, compute onnxruntime references,
save them as model + npz, and drive `opvision` as a subprocess."""
import re
import subprocess

import numpy as np
import onnx
import onnxruntime as ort
from onnx import helper

VERIFY_LINE = re.compile(r"^rel_l2=(\S+) max_abs_rel=(\S+)$", re.M)

NP_TO_ONNX = {
    np.dtype(np.float32): onnx.TensorProto.FLOAT,
    np.dtype(np.float16): onnx.TensorProto.FLOAT16,
    np.dtype(np.float64): onnx.TensorProto.DOUBLE,
    np.dtype(np.int64): onnx.TensorProto.INT64,
    np.dtype(np.int32): onnx.TensorProto.INT32,
    np.dtype(np.int8): onnx.TensorProto.INT8,
    np.dtype(np.uint8): onnx.TensorProto.UINT8,
    np.dtype(np.bool_): onnx.TensorProto.BOOL,
}


class Cli:
    def __init__(self, path, env=None):
        self.path = path
        self.env = env  # the environment of every run (None: this process's)

    def run(self, *args, timeout=300):
        """Runs `opvision ARGS`; returns the CompletedProcess (text mode)."""
        cmd = [self.path] + [str(a) for a in args]
        return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=self.env)

    def has_opencl(self):
        """Whether `opvision devices` lists an OpenCL device (cached); GPU tests skip without one."""
        if not hasattr(self, "_has_opencl"):
            try:
                p = self.run("devices", timeout=120)
                self._has_opencl = p.returncode == 0 and "[0]" in p.stdout
            except subprocess.TimeoutExpired:
                self._has_opencl = False
        return self._has_opencl

    def verify(self, model, ref, backend, *extra, timeout=300):
        """Runs `opvision verify`; returns (proc, rel_l2, max_abs_rel) (None, None if no line)."""
        p = self.run("verify", model, "--ref", ref, "--backend", backend, *extra, timeout=timeout)
        m = VERIFY_LINE.findall(p.stdout)
        if len(m) != 1:
            return p, None, None
        return p, float(m[0][0]), float(m[0][1])


def describe(p):
    return (f"command: {' '.join(p.args)}\nexit code: {p.returncode}\n"
            f"stdout:\n{p.stdout[-3000:]}\nstderr:\n{p.stderr[-3000:]}")


def assert_verify_ok(cli, model, ref, backend, *extra, timeout=300):
    """verify must exit 0 and print exactly one finite metrics line."""
    p, rel, mx = cli.verify(model, ref, backend, *extra, timeout=timeout)
    assert p.returncode == 0, describe(p)
    assert rel is not None, "no single `rel_l2=... max_abs_rel=...` line\n" + describe(p)
    assert np.isfinite(rel) and np.isfinite(mx), describe(p)
    assert rel >= 0 and mx >= 0, describe(p)
    return rel, mx


def assert_error(p, *needles):
    """A CLI error: exit code 2, `opvision: error:` on stderr naming every needle, no crash."""
    assert p.returncode == 2, describe(p)
    assert "opvision: error:" in p.stderr, describe(p)
    low = p.stderr.lower()
    for n in needles:
        assert n.lower() in low, f"error message does not mention {n!r}\n" + describe(p)


def make_model(nodes, inputs, outputs, initializers=None, opset=17, out_types=None,
               check=True):
    """A model from nodes; `inputs` maps runtime input names to example arrays (for dtype and
    shape), `initializers` maps names to constant arrays, `outputs` lists output names. Output
    types and shapes are filled by ONNX shape inference."""
    initializers = initializers or {}
    vin = [helper.make_tensor_value_info(k, NP_TO_ONNX[v.dtype], list(v.shape))
           for k, v in inputs.items()]
    out_types = out_types or {}
    vout = [helper.make_tensor_value_info(o, out_types.get(o, onnx.TensorProto.FLOAT), None)
            for o in outputs]
    inits = [onnx.numpy_helper.from_array(np.asarray(v), k) for k, v in initializers.items()]
    graph = helper.make_graph(nodes, "t", vin, vout, initializer=inits)
    ops = [helper.make_opsetid("", opset)]
    model = helper.make_model(graph, opset_imports=ops, producer_name="opvision-tests")
    model.ir_version = helper.find_min_ir_version_for(ops)
    if check:
        model = onnx.shape_inference.infer_shapes(model, strict_mode=True, data_prop=True)
        if any(not o.type.tensor_type.HasField("shape") for o in model.graph.output):
            # inference could not follow a computed shape: take it from onnxruntime
            outs = ort_run(model, inputs)
            for o in model.graph.output:
                dims = outs[o.name].shape
                o.type.tensor_type.shape.Clear()
                o.type.tensor_type.shape.SetInParent()
                for d in dims:
                    o.type.tensor_type.shape.dim.add().dim_value = d
        onnx.checker.check_model(model)
    return model


def ort_run(model, feeds):
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    data = model if isinstance(model, (bytes, str)) else model.SerializeToString()
    sess = ort.InferenceSession(data, so, providers=["CPUExecutionProvider"])
    names = [o.name for o in sess.get_outputs()]
    return dict(zip(names, sess.run(None, feeds)))


def save_case(tmp_path, model, feeds, name="model"):
    """Saves the model and an npz of its inputs and onnxruntime outputs; returns both paths."""
    outs = ort_run(model, feeds)
    mpath = tmp_path / f"{name}.onnx"
    rpath = tmp_path / f"{name}_ref.npz"
    onnx.save(model, str(mpath))
    np.savez(rpath, **feeds, **outs)
    return mpath, rpath, outs


def save_uint8_reference(model_path, ref_path, seed):
    """Random uint8 values for every input of the ONNX model at model_path (openpilot's frames),
    saved with onnxruntime's outputs on them into ref_path; returns the inputs."""
    m = onnx.load(str(model_path), load_external_data=False)
    rng = np.random.default_rng(seed)
    feeds = {i.name: rng.integers(0, 256, [d.dim_value for d in i.type.tensor_type.shape.dim], dtype=np.uint8)
             for i in m.graph.input}
    np.savez(ref_path, **feeds, **ort_run(str(model_path), feeds))
    return feeds


def load_npz(path):
    with np.load(path) as z:
        return {k: z[k] for k in z.files}


def readme_python_block(section):
    """The one ```python block of the README section titled `section` (its '## ' heading)."""
    import pathlib
    import re
    text = (pathlib.Path(__file__).resolve().parents[2] / "README.md").read_text()
    parts = text.split("## " + section, 1)
    assert len(parts) == 2, f"README.md has no '## {section}' section"
    blocks = re.findall(r"```python\n(.*?)```", parts[1].split("\n## ", 1)[0], re.S)
    assert len(blocks) == 1, f"the README section '{section}' should hold one ```python block"
    return blocks[0]
