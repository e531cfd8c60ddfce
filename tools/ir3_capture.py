#!/usr/bin/env python3
"""Capture real Adreno a630 machine code for an ONNX model, offline.

    python3 tools/ir3_capture.py MODEL.onnx OUTDIR [--venv DIR] [--seed S] [--image 1|2] [--nolocals]

Compiles MODEL for the Adreno 630 with tinygrad's IR3 back end (Mesa's ir3 compiler, packaged
as PyPI `tinymesa`) on tinygrad's NULL device, so no GPU is needed, and writes a *capture*:

  OUTDIR/capture.json      format, model hash, kernels, buffers, the schedule, inputs, outputs
  OUTDIR/kernels/K.bin     each kernel's code image (little-endian 64-bit ir3 words)
  OUTDIR/data.bin          contents of setup copies that are not an ONNX initializer verbatim

The model runs under TinyJit three times, as openpilot's compile script does. Of the third
call's launches, those that do not depend on the model inputs and whose results nothing
per-inference overwrites compute constants (weight layouts): they move to the *setup*; the rest
are the per-inference *schedule*. Of everything before the third call, only the launches and
copies whose results the setup and schedule read (a backward slice over byte ranges) are kept. Weights that are an ONNX initializer byte for byte are stored by name and sha256 and
read back from the model at replay. `opvision ir3 replay OUTDIR` runs it on our simulator.

tinygrad's defaults here are IMAGE=1 (activations in images); `--image 2 --nolocals` compile as
openpilot's compile script does (IMAGE=2: weights in images too, each texel holding 4 output
channels; NOLOCALS=1: no local-memory reductions).

The tool runs itself in its own virtual environment with pinned tinygrad/tinymesa versions
(created on first use; --venv picks where, default ~/.cache/opvision/ir3-capture-venv).
"""
import argparse
import hashlib
import json
import os
import pathlib
import subprocess
import sys

PINNED = ["tinygrad==0.14.0", "tinymesa==25.2.7.2", "onnx", "numpy"]
FORMAT = "opvision-ir3-capture"
VERSION = 1


def pinned_venv(venv: pathlib.Path, pinned, who: str) -> pathlib.Path:
  """The python of a venv at `venv` holding exactly the `pinned` packages (made, or remade when its
  pins differ; bench/bench_tinygrad.py uses it too); `who` names the tool in the progress line."""
  py = venv / "bin" / "python"
  stamp = venv / "opvision-pins.txt"
  want = "\n".join(pinned)
  if not py.exists() or not stamp.exists() or stamp.read_text() != want:
    print(f"{who}: creating {venv} with {' '.join(pinned)}", file=sys.stderr, flush=True)
    subprocess.check_call([sys.executable, "-m", "venv", str(venv)])
    subprocess.check_call([str(py), "-m", "pip", "install", "-q", *pinned])
    stamp.write_text(want)
  return py


def ensure_venv(venv: pathlib.Path) -> None:
  """Re-executes this script inside a venv that has the pinned packages."""
  if os.environ.get("OPV_CAPTURE_IN_VENV") == "1":
    return
  py = pinned_venv(venv, PINNED, "ir3_capture")
  env = dict(os.environ, OPV_CAPTURE_IN_VENV="1")
  os.execve(str(py), [str(py), os.path.abspath(__file__), *sys.argv[1:]], env)


# ------------------------------------------------------------------------------------------
# Recording (runs inside the venv)


class Buf:
  """A NULL-device allocation that really holds bytes (so host reads of copied data work)."""
  count = 0

  def __init__(self, size, base=None, off=0):
    Buf.count += 1
    self.id, self.size, self.base, self.off = Buf.count, size, base, off
    self.data = bytearray(size) if base is None else None

  def root(self):
    return (self.base.root()[0], self.base.root()[1] + self.off) if self.base is not None else (self, 0)

  def view(self):
    r, o = self.root()
    return r.data, o


def install_hooks(events, phase):
  from tinygrad.runtime import ops_null
  from tinygrad.engine import realize

  A = ops_null.NullAllocator
  A._alloc = lambda self, size, options: Buf(size)
  A._offset = lambda self, buf, size, offset: Buf(size, buf, offset)
  A._free = lambda self, opaque, options: None

  def copyin(self, dest, src):
    d, o = dest.view()
    d[o:o + len(src)] = bytes(src)
    events.append(dict(kind="copy", phase=phase[0], dst=dest.root(), size=len(src), data=bytes(src), src=None))
  A._copyin = copyin

  def copyout(self, dest, src):
    d, o = src.view()
    dest[:] = d[o:o + len(dest)]
  A._copyout = copyout

  def transfer(self, dest, src, sz, src_dev, dest_dev):
    s, so = src.view()
    d, do = dest.view()
    d[do:do + sz] = s[so:so + sz]
    events.append(dict(kind="copy", phase=phase[0], dst=dest.root(), size=sz, data=None, src=src.root()))
  A._transfer = transfer

  orig_get_runtime = realize.get_runtime

  def get_runtime(device, ast, cache=True):
    rt = orig_get_runtime(device, ast, cache)
    info = ast.arg
    elf = ast.to_elf()

    def run(*bufs, global_size=(1, 1, 1), local_size=(1, 1, 1), vals=(), wait=False, **kw):
      events.append(dict(kind="launch", phase=phase[0], name=elf.name, lib=elf.lib, sig=elf.signature,
                         globals=tuple(info.globals), outs=tuple(info.outs), ins=tuple(info.ins),
                         bufs=[b.root() + (b.size,) for b in bufs], global_size=tuple(int(g) for g in global_size),
                         local_size=tuple(int(l) for l in (local_size or (1, 1, 1))), vals=tuple(vals)))
      return 1e-3
    return run
  realize.get_runtime = get_runtime


def fix_scalar_half_constants():
  """tinygrad folds scalar fp16 ONNX constants to Python numbers; before Python 3.12 it casts
  them to fp32 with a *kernel* first, which the NULL device never runs, so every such constant
  (GELU's 1/sqrt(2), 0.5 ...) would read as 0 and whole blocks fold away. Read the fp16 bytes
  directly instead (numpy), which is what Python >= 3.12 does through memoryview."""
  import types
  import numpy as np
  from tinygrad import Tensor, dtypes
  from tinygrad.nn import onnx as tg_onnx
  if sys.version_info >= (3, 12):
    return
  tg_onnx.sys = types.SimpleNamespace(version_info=(3, 12), **{k: getattr(sys, k) for k in ("argv", "platform", "modules")})
  orig_item = Tensor.item

  def item(self):
    if self.dtype == dtypes.half:
      t = self.contiguous().realize()
      raw = bytes(t.uop.buffer.as_memoryview())
      return float(np.frombuffer(raw, dtype=np.float16)[0])
    return orig_item(self)
  Tensor.item = item


def kernel_sidecar(lib):
  """Everything a launch needs, read from Mesa's ir3_shader_variant as tinygrad packs it."""
  from tinygrad.runtime.support.compiler_mesa import IR3Compiler
  from tinygrad.runtime.autogen import mesa
  v, cs, imm, image = IR3Compiler.unpack_lib(lib)
  dp = cs.allocs.consts[mesa.IR3_CONST_ALLOC_DRIVER_PARAMS]
  nt = v.image_mapping.num_tex
  imm_off = cs.allocs.max_const_offset_vec4 * 16
  return image, {
    "image_bytes": v.info.size,
    "instructions": v.info.instrs_count,
    "max_reg": v.info.max_reg,          # highest full register used (footprint = max_reg + 1)
    "max_half_reg": v.info.max_half_reg,
    "max_const": v.info.max_const,
    "branchstack": v.branchstack,
    "pvtmem_bytes": v.pvtmem_size,
    "shared_bytes": v.shared_size,
    "constlen_vec4": v.constlen,
    "mergedregs": bool(v.mergedregs),
    # register ids (4*n + component) where the hardware delivers the ids; 252 = none
    "work_group_id_regid": v.cs.work_group_id,
    "local_invocation_id_regid": v.cs.local_invocation_id,
    # byte offset in the const file of the local size (3 dwords) the driver writes; null = none
    "local_size_const_byte": (dp.offset_vec4 * 4 + 8) * 4 if dp.size_vec4 else None,
    "args_const_byte": cs.ubo_state.range[0].offset,   # buffer addresses then scalar args
    "immediates_const_byte": imm_off,
    "immediates": [int.from_bytes(imm[i:i + 4], "little") for i in range(0, len(imm), 4)],
    "num_tex": nt,
    "num_ibo": v.num_uavs - nt,
    "tex_to_image": list(v.image_mapping.tex_to_image[:nt]),
  }


def capture(model, outdir, seed, image=1, nolocals=False):
  os.environ.update({"DEV": "NULL:IR3:a630,IMAGE_PITCH_ALIGNMENT=64", "IMAGE": str(image), "FLOAT16": "1",
                     "CCACHE": "0", "PARALLEL": "0", "JIT": "2"})
  if nolocals: os.environ["NOLOCALS"] = "1"
  import numpy as np
  import onnx
  from onnx import numpy_helper
  from tinygrad import Tensor, TinyJit
  from tinygrad.nn.onnx import OnnxRunner
  from tinygrad.helpers import is_image_shape

  events, phase = [], ["setup"]
  install_hooks(events, phase)
  fix_scalar_half_constants()
  m = onnx.load(model, load_external_data=True)
  init_names = {x.name for x in m.graph.initializer}
  graph_inputs = [i for i in m.graph.input if i.name not in init_names]
  np_of = {1: np.float32, 2: np.uint8, 10: np.float16, 7: np.int64, 6: np.int32}
  specs = []
  for i in graph_inputs:
    tt = i.type.tensor_type
    shape = [d.dim_value if d.dim_value > 0 else 1 for d in tt.shape.dim]
    if tt.elem_type not in np_of:
      sys.exit(f"ir3_capture: input '{i.name}' has ONNX element type {tt.elem_type}, not supported")
    specs.append((i.name, shape, np_of[tt.elem_type]))

  runner = OnnxRunner(model)
  out_names = [o.name for o in m.graph.output]

  @TinyJit
  def run(**inputs):
    outs = runner(inputs)
    return [outs[n].cast("float32").contiguous().realize() for n in out_names] if len(out_names) > 1 else \
        outs[out_names[0]].cast("float32").contiguous().realize()

  rng = np.random.default_rng(seed)
  in_tensors = None
  for call in range(3):
    print(f"ir3_capture: call {call + 1}/3 ({['eager', 'jit capture', 'jit replay'][call]})", file=sys.stderr, flush=True)
    phase[0] = "inference" if call == 2 else "setup"
    feed = {n: Tensor(rng.integers(0, 256, s).astype(dt) if dt == np.uint8 else rng.standard_normal(s).astype(dt)).realize()
            for n, s, dt in specs}
    if call == 2:
      in_tensors = feed
      # the realize above recorded the inputs' copies as inference events; they are the user's inputs
      for e in events:
        if e["phase"] == "inference": e["phase"] = "input"
    out = run(**feed)
  outs = out if isinstance(out, list) else [out]

  def root_of(t):
    return t.uop.buffer._buf.root()

  # ---- buffers, inputs, outputs
  input_roots = {}
  for n, s, dt in specs:
    r, o = root_of(in_tensors[n])
    input_roots[r.id] = (n, o, s, np.dtype(dt).name)
  output_roots = [(n,) + root_of(t) + (list(t.shape),) for n, t in zip(out_names, outs)]

  # ---- reads and writes of every event as byte ranges (root buffer, offset, size)
  for e in events:
    if e["kind"] == "launch":
      slot_pos = {s: i for i, s in enumerate(e["globals"])}
      e["reads"] = [e["bufs"][slot_pos[s]] for s in e["ins"] if s in slot_pos]
      e["writes"] = [e["bufs"][slot_pos[s]] for s in e["outs"] if s in slot_pos]
    else:
      e["reads"] = [(e["src"][0], e["src"][1], e["size"])] if e["src"] else []
      e["writes"] = [(e["dst"][0], e["dst"][1], e["size"])]

  def overlaps(a, b):
    return a[0] is b[0] and a[1] < b[1] + b[2] and b[1] < a[1] + a[2]

  def any_overlap(xs, ys):
    return any(overlaps(x, y) for x in xs for y in ys)

  calls = [e for e in events if e["kind"] == "launch" and e["phase"] == "inference"]
  if not calls:
    sys.exit("ir3_capture: the model produced no kernel launches")
  # Our own pruning (TinyJit's prune keeps too little here): a launch of the third call whose
  # inputs do not depend on the model inputs, and whose results nothing per-inference clobbers
  # or reads before it, computes constants (weight layouts): it moves to the setup.
  tainted = [(r, o, r.size) for r, o in [root_of(in_tensors[n]) for n, _, _ in specs]]
  per_inf = set()
  for i, e in enumerate(calls):
    if any_overlap(e["reads"], tainted):
      per_inf.add(i)
      tainted += e["writes"]
  changed = True
  while changed:
    changed = False
    s_writes = [w for i in per_inf for w in calls[i]["writes"]]
    for i, e in enumerate(calls):
      if i in per_inf:
        continue
      earlier_reads = [r for j in per_inf if j < i for r in calls[j]["reads"]]
      if any_overlap(e["writes"], s_writes) or any_overlap(e["reads"], s_writes) or any_overlap(e["writes"], earlier_reads):
        per_inf.add(i)
        changed = True
  launches = [e for i, e in enumerate(calls) if i in per_inf]
  hoisted = [e for i, e in enumerate(calls) if i not in per_inf]

  # ---- backward slice of the earlier events over byte ranges: what the launches read first
  input_ids = set(input_roots)
  needed, written = [], []
  for e in hoisted + launches:
    for r in e["reads"]:
      if r[0].id in input_ids:
        continue
      if not any(w[0] is r[0] and w[1] <= r[1] and r[1] + r[2] <= w[1] + w[2] for w in written):
        needed.append(r)
    written += e["writes"]
  setup = []
  for e in reversed([e for e in events if e["phase"] == "setup"]):
    if any_overlap(e["writes"], needed):
      setup.append(e)
      needed += [r for r in e["reads"] if r[0].id not in input_ids]
  setup.reverse()
  setup += hoisted
  print(f"ir3_capture: {len(launches)} launches per inference, {len(hoisted)} constant launches moved to the setup, "
        f"{len(setup)} setup events", file=sys.stderr)

  # ---- write
  out = pathlib.Path(outdir)
  (out / "kernels").mkdir(parents=True, exist_ok=True)
  inits = {}
  for t in m.graph.initializer:
    raw = numpy_helper.to_array(t).tobytes()
    inits.setdefault(hashlib.sha256(raw).hexdigest(), t.name)
  kernels, kernel_of = [], {}
  buffers, buffer_index = [], {}

  def buf_ref(root):
    if root.id not in buffer_index:
      buffer_index[root.id] = len(buffers)
      buffers.append({"id": len(buffers), "bytes": root.size})
    return buffer_index[root.id]

  def kernel_ref(e):
    key = hashlib.sha256(e["lib"]).hexdigest()
    if key not in kernel_of:
      image, side = kernel_sidecar(e["lib"])
      idx = len(kernels)
      fname = f"kernels/{idx:03d}_{e['name']}.bin"
      (out / fname).write_bytes(image)
      side.update({"index": idx, "name": e["name"], "image": fname, "sha256": hashlib.sha256(image).hexdigest()})
      kernel_of[key] = idx
      kernels.append(side)
    return kernel_of[key]

  def args_of(e):
    args = []
    slot_pos = {s: i for i, s in enumerate(e["globals"])}
    nbuf = 0
    for name, slot, dt, shape in e["sig"]:
      if slot in slot_pos:
        r, o, sz = e["bufs"][slot_pos[slot]]
        a = {"slot": slot, "buffer": buf_ref(r), "offset": o, "bytes": sz, "dtype": dt.name,
             "access": ("rw" if slot in e["outs"] and slot in e["ins"] else "w" if slot in e["outs"] else "r")}
        if is_image_shape(shape):
          a.update(kind="image", height=int(shape[0]), width=int(shape[1]))
        else:
          a["kind"] = "buffer"
          nbuf += 1
        args.append(a)
    vals = [{"kind": "value", "dtype": dt.name, "value": int(v)} for (name, slot, dt, shape), v in
            zip([s for s in e["sig"] if s[1] not in slot_pos], e["vals"])]
    return args + vals

  data = bytearray()
  setup_out = []
  for e in setup:
    if e["kind"] == "copy":
      item = {"op": "copy", "buffer": buf_ref(e["dst"][0]), "offset": e["dst"][1], "bytes": e["size"]}
      if e["src"] is not None:
        item.update(src_buffer=buf_ref(e["src"][0]), src_offset=e["src"][1])
      else:
        h = hashlib.sha256(e["data"]).hexdigest()
        if h in inits:
          item.update(initializer=inits[h], sha256=h)
        else:
          item.update(data_offset=len(data), sha256=h)
          data += e["data"]
          data += bytes((-len(data)) % 16)
      setup_out.append(item)
    else:
      setup_out.append({"op": "launch", "kernel": kernel_ref(e), "global_size": list(e["global_size"]),
                        "local_size": list(e["local_size"]), "args": args_of(e)})
  schedule = [{"op": "launch", "kernel": kernel_ref(e), "global_size": list(e["global_size"]),
               "local_size": list(e["local_size"]), "args": args_of(e)} for e in launches]
  inputs = []
  for rid, (n, o, s, dt) in input_roots.items():
    root = next(r for r, _ in [root_of(in_tensors[n])])
    inputs.append({"name": n, "buffer": buf_ref(root), "offset": o, "shape": s, "dtype": dt,
                   "layout": "the ONNX tensor's bytes, row-major (NCHW), unchanged"})
  outputs = [{"name": n, "buffer": buf_ref(r), "offset": o, "shape": s, "dtype": "float32"} for n, r, o, s in output_roots]
  (out / "data.bin").write_bytes(bytes(data))
  doc = {
    "format": FORMAT, "version": VERSION, "gpu": "a630",
    "producer": {"tool": "tools/ir3_capture.py", "packages": PINNED,
                 "env": {"DEV": os.environ["DEV"], "IMAGE": os.environ["IMAGE"], "FLOAT16": "1", "JIT": "2",
                         **({"NOLOCALS": "1"} if nolocals else {})}},
    "model": {"file": os.path.basename(model), "sha256": hashlib.sha256(pathlib.Path(model).read_bytes()).hexdigest()},
    "kernels": kernels, "buffers": buffers, "inputs": inputs, "outputs": outputs,
    "setup": setup_out, "schedule": schedule,
    "notes": "const file: dword i is c[i/4].xyzw[i%4]; buffer args are 64-bit addresses at args_const_byte + 8*k "
             "(k = index among buffer args), then scalar values; images: textures t#i bind image arg "
             "num_ibo + tex_to_image[i] (in order of image args), IBOs bind the first num_ibo image args",
  }
  (out / "capture.json").write_text(json.dumps(doc, separators=(",", ":")))
  ninstr = sum(k["instructions"] for k in kernels)
  print(f"ir3_capture: wrote {outdir}: {len(kernels)} kernels, {ninstr} instructions, "
        f"{len(schedule)} launches per inference, {len(data)} bytes of non-initializer data", file=sys.stderr)


def main():
  ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
  ap.add_argument("model", help="ONNX model")
  ap.add_argument("outdir", help="capture directory to write")
  ap.add_argument("--venv", default=os.path.expanduser("~/.cache/opvision/ir3-capture-venv"),
                  help="virtual environment with the pinned packages (created if missing)")
  ap.add_argument("--seed", type=int, default=0, help="seed of the random inputs used while tracing")
  ap.add_argument("--image", type=int, choices=(1, 2), default=1,
                  help="tinygrad IMAGE mode: 1 = activations in images (default), 2 = weights too, "
                       "as openpilot compiles its model")
  ap.add_argument("--nolocals", action="store_true",
                  help="tinygrad NOLOCALS=1 (no local-memory reductions), as openpilot compiles its model")
  a = ap.parse_args()
  if not os.path.isfile(a.model):
    sys.exit(f"ir3_capture: error: '{a.model}' is not a file")
  ensure_venv(pathlib.Path(a.venv))
  capture(os.path.abspath(a.model), a.outdir, a.seed, a.image, a.nolocals)


if __name__ == "__main__":
  main()
