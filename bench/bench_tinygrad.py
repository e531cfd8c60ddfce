#!/usr/bin/env python3
"""opvision's cpu backend against tinygrad, the engine openpilot runs its models with, on a PC's CPU.

openpilot compiles its vision model with tinygrad (selfdrive/modeld/SConscript): with `DEV=CUDA` where
an NVIDIA GPU is present, else, on Linux, `DEV=CPU:LLVM THREADS=0` (tinygrad's LLVM CPU back end,
one thread). This script times that peer and opvision on the same ONNX model, in one run:

  1. opvision: the model is compiled once (`opvision compile --target cpu`) and each round runs
     `opvision bench MODEL.opv --backend cpu --threads T --json` in a child process (bench_cpu.py's
     runner);
  2. tinygrad: one long-lived child process per thread count (this script with --tg-child, inside
     its own virtual environment with pinned tinygrad, created on first use): it loads the ONNX model
     with tinygrad's OnnxRunner and captures it in a TinyJit (three calls, as openpilot's compile
     script does), checks the JIT's outputs against the model's reference (--ref, default
     MODEL_ref.npz beside the model: its inputs and onnxruntime's outputs; the error metrics of
     DESIGN.md), then, each round, times --iters frames after --warmup, a frame being what
     openpilot's modeld does on a CPU: the inputs copied into new tinygrad tensors, the JIT run, the
     outputs read back into numpy.
The two alternate for --rounds rounds (a shared VM drifts in speed over minutes); the table gives
the median of the rounds' medians and each round's ratio opvision / tinygrad.

Thread counts (--threads): 1 pairs opvision --threads 1 with openpilot's setting (THREADS=0: one
thread); N > 1 pairs opvision --threads N with tinygrad's threaded CPU kernels (THREADS=1,
NUM_CPU_THREADS=N).

tinygrad's CPU:LLVM device loads libLLVM >= 16 with ctypes (Debian 12: libllvm19, installed by
scripts/setup.sh); --tg-device CPU uses clang instead.

Usage: bench/bench_tinygrad.py [MODEL.onnx] [--ref REF.npz] [--threads 1,2] [--rounds 5]
       [--iters 30] [--warmup 5] [--tg-device CPU:LLVM] [--opvision PATH] [--venv DIR] [--json OUT]
"""
import argparse
import json
import os
import pathlib
import platform
import statistics
import shutil
import subprocess
import sys
import tempfile
import time

REPO = pathlib.Path(__file__).resolve().parents[1]
DEFAULT_MODEL = REPO.parent / "shared" / "models" / "opvision_t12_fp16.onnx"
PINNED = ["tinygrad==0.14.0", "onnx", "numpy"]
DEFAULT_VENV = pathlib.Path.home() / ".cache" / "opvision" / "tinygrad-venv"


# ---------------------------------------------------------------------------------------------
# tinygrad child (runs inside the venv)

def tg_child(a):
    """Loads the model under tinygrad, checks it, then serves rounds: a line 'ITERS WARMUP' on stdin
    gives a JSON line of latencies on stdout; EOF ends it."""
    import numpy as np
    from tinygrad import Device, Tensor, TinyJit
    from tinygrad.nn.onnx import OnnxRunner
    import onnx

    m = onnx.load(a.model, load_external_data=True)
    init_names = {x.name for x in m.graph.initializer}
    in_names = [i.name for i in m.graph.input if i.name not in init_names]
    out_names = [o.name for o in m.graph.output]
    ref = dict(np.load(a.ref)) if a.ref else {}
    feed_np = {}
    np_of = {1: np.float32, 2: np.uint8, 10: np.float16, 7: np.int64, 6: np.int32}
    rng = np.random.default_rng(a.seed)
    for i in m.graph.input:
        if i.name not in in_names:
            continue
        if i.name in ref:
            feed_np[i.name] = np.ascontiguousarray(ref[i.name])
            continue
        tt = i.type.tensor_type
        if tt.elem_type not in np_of:
            raise SystemExit(f"bench_tinygrad: input '{i.name}' has ONNX element type {tt.elem_type}, not supported here")
        shape = [d.dim_value if d.dim_value > 0 else 1 for d in tt.shape.dim]
        dt = np_of[tt.elem_type]
        feed_np[i.name] = (rng.integers(0, 256, shape).astype(dt) if dt == np.uint8
                           else rng.standard_normal(shape).astype(dt))

    t0 = time.perf_counter()
    runner = OnnxRunner(a.model)

    @TinyJit
    def run(**inputs):
        outs = runner(inputs)
        return [outs[n].cast("float32").contiguous().realize() for n in out_names]

    kept = {k: Tensor(v).realize() for k, v in feed_np.items()} if a.tg_inputs == "device" else None

    def frame():
        # host: the frame's inputs copied from numpy into new tensors on the device (openpilot's
        # modeld on a CPU); device: the same device tensors every frame (frames made on the GPU)
        inputs = kept if kept is not None else {k: Tensor(v).realize() for k, v in feed_np.items()}
        return [o.numpy() for o in run(**inputs)]

    for _ in range(3):  # eager, JIT capture, JIT replay (openpilot's compile script runs it so)
        outs = frame()
    compile_s = time.perf_counter() - t0
    check = {}
    for n, o in zip(out_names, outs):
        if n in ref and all(k in ref for k in in_names):
            r = ref[n].astype(np.float64).ravel()
            d = o.astype(np.float64).ravel() - r
            check[n] = {"rel_l2": float(np.linalg.norm(d) / (np.linalg.norm(r) or 1.0)),
                        "max_abs_rel": float(np.abs(d).max() / (np.abs(r).max() or 1.0))}
    try:  # the JIT's calls (kernels and copies) a frame; the attribute has moved between tinygrad versions
        calls = len(run.captured.linear.src)
    except AttributeError:
        calls = None
    print(json.dumps({"ready": True, "device": Device.DEFAULT, "compile_s": compile_s, "check": check,
                      "calls": calls}), flush=True)
    for line in sys.stdin:
        iters, warmup = (int(x) for x in line.split())
        for _ in range(warmup):
            frame()
        ts = []
        for _ in range(iters):
            t = time.perf_counter()
            frame()
            ts.append((time.perf_counter() - t) * 1e3)
        ts.sort()
        print(json.dumps({"median_ms": statistics.median(ts), "min_ms": ts[0],
                          "p90_ms": ts[min(len(ts) - 1, int(0.9 * len(ts)))]}), flush=True)


# ---------------------------------------------------------------------------------------------
# parent (system python)

class TinygradPeer:
    """One long-lived tinygrad child: `py` runs this script with --tg-child on `model` with the
    environment `tg_env` (DEV=..., THREADS=...); inputs "host" or "device" (see tg_child)."""

    def __init__(self, py, model, ref, seed, tg_env, inputs="host"):
        env = dict(os.environ, **tg_env)
        cmd = [str(py), os.path.abspath(__file__), "--tg-child", model, "--seed", str(seed), "--tg-inputs", inputs]
        if ref:
            cmd += ["--ref", ref]
        try:
            version = subprocess.run([str(py), "-c", "import importlib.metadata as m; print(m.version('tinygrad'))"],
                                     capture_output=True, text=True, timeout=60).stdout.strip() or "?"
        except (OSError, subprocess.TimeoutExpired):
            version = "?"
        self.desc = f"tinygrad {version} " + " ".join(f"{k}={v}" for k, v in tg_env.items()) + \
            ("" if inputs == "host" else f", {inputs} inputs")
        print(f"bench_tinygrad: {self.desc}: loading and capturing the JIT ...", file=sys.stderr, flush=True)
        self.p = subprocess.Popen(cmd, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        self.info = self._read()

    def _read(self):
        line = self.p.stdout.readline()
        if not line:
            rc = self.p.wait()
            hint = " (tinygrad's LLVM devices need libLLVM >= 16: scripts/setup.sh installs libllvm19)" \
                if "LLVM" in self.desc else ""
            raise RuntimeError(f"{self.desc}: the tinygrad child ended (exit {rc}) before answering; "
                               f"its stderr is above{hint}")
        return json.loads(line)

    def round(self, iters, warmup):
        self.p.stdin.write(f"{iters} {warmup}\n")
        self.p.stdin.flush()
        return self._read()

    def close(self):
        if self.p.poll() is None:
            self.p.stdin.close()
            self.p.wait(timeout=60)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("model", nargs="?", default=str(DEFAULT_MODEL), help="ONNX model (default: the fp16 fixture)")
    ap.add_argument("--ref", default=None, help="reference .npz (inputs and outputs; default MODEL_ref.npz where it exists)")
    ap.add_argument("--threads", default="1,2", help="thread counts, comma-separated (default 1,2)")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--iters", type=int, default=30)
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--tg-device", default="CPU:LLVM", help="tinygrad DEV (default CPU:LLVM, openpilot's on Linux)")
    ap.add_argument("--opvision", default=None)
    ap.add_argument("--venv", default=str(DEFAULT_VENV), help="virtual environment with the pinned tinygrad (created if missing)")
    ap.add_argument("--timeout", type=float, default=600)
    ap.add_argument("--json", default=None, help="write all numbers to this file")
    ap.add_argument("--tg-child", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--tg-inputs", choices=("host", "device"), default="host", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if not os.path.isfile(a.model):
        sys.exit(f"bench_tinygrad: error: model '{a.model}' is not a file")
    if a.ref is None:
        cand = a.model[:-5] + "_ref.npz" if a.model.endswith(".onnx") else ""
        a.ref = cand if cand and os.path.isfile(cand) else ""
    elif not os.path.isfile(a.ref):
        sys.exit(f"bench_tinygrad: error: reference '{a.ref}' is not a file")
    if a.tg_child:
        return tg_child(a)
    try:
        threads = [int(t) for t in a.threads.split(",")]
    except ValueError:
        sys.exit(f"bench_tinygrad: error: --threads takes comma-separated positive integers, not '{a.threads}'")
    if any(t < 1 for t in threads) or a.rounds < 1 or a.iters < 1 or a.warmup < 0:
        sys.exit("bench_tinygrad: error: --threads, --rounds and --iters take positive integers, --warmup >= 0")

    sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
    import bench_cpu  # noqa: E402 (its child runner and opvision bench parser)
    opv = bench_cpu.find_opvision(a.opvision)
    a.precision = "fp32"
    work = tempfile.mkdtemp(prefix="bench_tinygrad_")
    opv_art = os.path.join(work, "model.opv")
    rc, _, err, _, wall = bench_cpu.run_child([opv, "compile", a.model, "--target", "cpu", "-o", opv_art], a.timeout)
    if rc != 0:
        sys.exit(f"bench_tinygrad: opvision compile failed (exit {rc}):\n{err[-2000:]}")
    sys.path.insert(0, str(REPO / "tools"))
    from ir3_capture import pinned_venv  # noqa: E402 (the same pinned-venv maker as the capture tool's)
    py = pinned_venv(pathlib.Path(a.venv), PINNED, "bench_tinygrad")
    verify = ""
    if a.ref:
        rc, out, err, _, _ = bench_cpu.run_child([opv, "verify", opv_art, "--ref", a.ref, "--backend", "cpu"], a.timeout)
        verify = (out.strip().splitlines() or ["?"])[-1] + ("" if rc == 0 else f" (verify exit {rc})")

    print(f"machine: {platform.node()} {platform.processor() or platform.machine()}, {os.cpu_count()} CPUs")
    print(f"model: {a.model}")
    print(f"opvision: {opv} (compiled in {wall:.1f} s); against the reference: {verify or 'no reference'}")
    results = {"model": a.model, "rounds": a.rounds, "iters": a.iters, "threads": {}}
    for t in threads:
        tg_env = {"DEV": a.tg_device, "THREADS": "0" if t == 1 else "1"}
        if t > 1:
            tg_env["NUM_CPU_THREADS"] = str(t)
        peer = TinygradPeer(py, a.model, a.ref, a.seed, tg_env)
        try:
            chk = peer.info.get("check", {})
            print(f"{peer.desc}: {peer.info.get('calls')} calls in the JIT, load + capture "
                  f"{peer.info['compile_s']:.1f} s; against the reference: " +
                  (", ".join(f"{n} rel_l2={c['rel_l2']:.3e} max_abs_rel={c['max_abs_rel']:.3e}" for n, c in chk.items())
                   or "no reference"))
            opv_r, tg_r = [], []
            for r in range(a.rounds):
                o = bench_cpu.bench_opvision(opv, opv_art, t, a)
                g = peer.round(a.iters, a.warmup)
                opv_r.append(o["median_ms"])
                tg_r.append(g["median_ms"])
                print(f"  threads {t} round {r + 1}: opvision {o['median_ms']:.2f} ms, tinygrad {g['median_ms']:.2f} ms "
                      f"(ratio {o['median_ms'] / g['median_ms']:.3f})", flush=True)
        finally:
            peer.close()
        om, gm = statistics.median(opv_r), statistics.median(tg_r)
        results["threads"][t] = {"opvision_ms": opv_r, "tinygrad_ms": tg_r, "tinygrad": peer.desc,
                                 "tinygrad_check": chk, "tinygrad_calls": peer.info.get("calls")}
        print(f"threads {t}: opvision median {om:.2f} ms, {peer.desc} median {gm:.2f} ms: ratio {om / gm:.3f} "
              f"(per round {' '.join(f'{x / y:.3f}' for x, y in zip(opv_r, tg_r))})")
    if a.json:
        pathlib.Path(a.json).write_text(json.dumps(results, indent=1) + "\n")
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    try:
        main()
    except RuntimeError as e:  # a child that failed: its own message is above
        sys.exit(f"bench_tinygrad: error: {e}")
