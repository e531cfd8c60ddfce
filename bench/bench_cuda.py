#!/usr/bin/env python3
"""CUDA benchmark: opvision's cuda backend against PyTorch (fp16, CUDA-graph replay) on the same
network, alternating in one run (issue 15, deliverable 6).

1. opvision: the model is compiled once for --target cuda (PTX, ahead of time) and timed with
   `opvision bench ART --backend cuda --json` in a child process per round: wall-clock per
   inference, with the input upload and output read-back (the backend replays one CUDA graph).
   `opvision bench` ends with profiled runs (CUDA events per call, no graph): the per-kernel table.
2. PyTorch peer: bench_opencl.py's child (the fixture network rebuilt by make_fixtures.py, fp16,
   one CUDA graph replayed; timed without and with its host<->device copies).
The table gives the median of the round medians, the spread, the ratio opvision / PyTorch per
round and overall (< 1: opvision faster), launches per inference and the slowest kernels, alone
(CUDA events) and on the replay's critical path (`opvision bench --replay-prefixes`: the graph cut
after each call; --no-prefixes skips it).
3. Throughput (--inflight N, 0 = skip): frames per second with N inferences in flight.
   opvision's artifact is batch-1: `opvision bench --inflight N` replays its CUDA graph
   N times back to back before the one host wait (each replay uploads the frame and reads the
   output back, as the latency figure does; replay r+1's upload runs on a second stream while
   replay r's kernels run, `--cuda-overlap on`, the default); time per run / N = time per frame.
   PyTorch: (a) its batch-1 graph replayed N times back to back, one synchronize (the same shape
   of work), (b) the same network captured at batch N (one graph over N frames), without copies,
   and (c) the same with the N frames' host->device copies and the outputs' read-back (pageable
   host tensors, as the batch-1 peer's copies).
   --batch-art B.opv: opvision's batch-N artifact (`compile --batch N`, N = --inflight; read from
   `opvision inspect`) timed in the same rounds: `opvision bench B.opv` (one inference = N frames,
   with its upload and read-back: ms per frame = median / N), the same with --inflight 4 (four
   batches per host wait, uploads overlapped with the previous batch's kernels) and with
   --inflight 4 --cuda-overlap off (each batch's upload after the previous batch: the same-run
   before/after of the overlap), and the profiled kernel time per frame (CUDA events per call, no
   graph, no copies: the figure to hold against (b)).
4. torch.compile (--compile-timeout S, 0 = skip): the fp16 network through torch.compile in a
   child process bounded by S seconds, mode max-autotune first (CUDA graphs and autotuned
   kernels); if that fails or runs out of time, mode default (no CUDA graphs), and the table says
   which. Timed per call with a synchronize, no copies (as the graph peer). The child runs in its
   own process group, killed whole on time-out (Inductor's compile workers with it). On the H200
   max-autotune took 238 s to compile (BENCHMARKS.md, CUDA run 15).
5. tinygrad (--tinygrad): what openpilot runs its models with on a PC with an NVIDIA GPU (its
   modeld SConscript: DEV=CUDA). bench_tinygrad.py's child loads --model with tinygrad's
   OnnxRunner, captures a TinyJit, checks its outputs against MODEL_ref.npz, then times a frame
   each round: the JIT on the same device input tensors (--tinygrad-inputs device, the default;
   host: copied from numpy each frame) and the outputs read back into numpy.

Usage: bench/bench_cuda.py [--model M.onnx | --art M.opv] [--iters 200] [--rounds 5] [--no-torch]
       [--opvision PATH] [--arch compute_90] [--json OUT.json] [--inflight 32] [--compile-timeout 240]
       [--batch-art B.opv] [--tinygrad [--tinygrad-inputs device|host]]
"""
import argparse
import json
import os
import pathlib
import platform
import shlex
import signal
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from bench_opencl import DEFAULT_MODEL, bench_torch, find_opvision, last_json, run  # noqa: E402


def find_nvrtc():
    """A libnvrtc.so for tinygrad's CUDA device, which looks only in a few fixed folders: CUDA
    toolkits under /usr/local, then the NVIDIA wheels beside PyTorch; None if there is none."""
    import glob
    import re
    import site
    pats = ["/usr/local/cuda*/targets/*/lib/libnvrtc.so*", "/usr/local/cuda*/lib64/libnvrtc.so*"]
    for sp in site.getsitepackages():
        pats += [sp + "/nvidia/*/lib/libnvrtc.so*", sp + "/nvidia/cuda_nvrtc/lib/libnvrtc.so*"]
    for pat in pats:
        for f in sorted(glob.glob(pat)):
            if re.search(r"/libnvrtc\.so(\.[0-9]+)*$", f) and os.path.isfile(f):
                return f
    return None


def start_tinygrad(args):
    """The tinygrad peer (bench_tinygrad.py's long-lived child) on --model with DEV=--tinygrad-dev."""
    import bench_tinygrad
    ref = args.model[:-5] + "_ref.npz" if args.model.endswith(".onnx") else ""
    env = {"DEV": args.tinygrad_dev}
    if args.tinygrad_dev.startswith("CUDA") and not os.environ.get("NVRTC_PATH") and (nv := find_nvrtc()):
        env["NVRTC_PATH"] = nv  # tinygrad's own override of where libnvrtc is
    try:
        peer = bench_tinygrad.TinygradPeer(sys.executable, args.model, ref if os.path.isfile(ref) else "", args.seed,
                                           env, inputs=args.tinygrad_inputs)
    except RuntimeError as e:
        sys.exit(f"bench_cuda: --tinygrad: {e}")
    chk = peer.info.get("check") or {}
    print(f"[bench] {peer.desc}: loaded and captured in {peer.info['compile_s']:.1f} s; against the reference: "
          + (", ".join(f"{n} rel_l2={c['rel_l2']:.3e} max_abs_rel={c['max_abs_rel']:.3e}" for n, c in chk.items())
             or "no reference"), file=sys.stderr, flush=True)
    return peer


def bench_opv(opv, art, args, replays=1, overlap=True, flags=""):
    cmd = [opv, "bench", str(art), "--backend", "cuda", "--warmup", str(args.warmup), "--iters", str(args.iters),
           "--json"] + shlex.split(flags)
    if replays > 1:
        cmd += ["--inflight", str(replays), "--cuda-overlap", "on" if overlap else "off"]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=args.timeout)
    if p.returncode != 0:
        raise RuntimeError(f"{' '.join(map(str, cmd))} exited {p.returncode}:\n{p.stderr[-3000:]}")
    return last_json(p.stdout)


def _peer_model(args, batch):
    import numpy as np
    import torch
    from torch_profile import SHARED  # noqa: E402
    sys.path.insert(0, str(SHARED / "models"))
    import make_fixtures  # noqa: E402
    h, w = (int(x) for x in args.hw.split(","))
    m = make_fixtures.build(args.trunk, (h, w), args.seed).cuda().half().eval()
    rng = np.random.default_rng(0)
    img = torch.from_numpy(rng.integers(0, 256, (batch, 12, h, w), dtype=np.uint8)).cuda()
    big = torch.from_numpy(rng.integers(0, 256, (batch, 12, h, w), dtype=np.uint8)).cuda()
    return m, img, big


def _graph(m, img, big):
    import torch
    with torch.no_grad():
        s = torch.cuda.Stream()
        s.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(s):
            for _ in range(3):
                m(img, big)
        torch.cuda.current_stream().wait_stream(s)
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            g.opv_out = m(img, big)  # the graph's output tensor (refilled by every replay)
    return g


def _time_ms(fn, iters, warmup):
    """Median wall-clock ms of fn() followed by a synchronize."""
    import torch
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    ts = []
    for _ in range(iters):
        t = time.perf_counter()
        fn()
        torch.cuda.synchronize()
        ts.append((time.perf_counter() - t) * 1e3)
    return statistics.median(ts), min(ts)


def throughput_child(args):
    """PyTorch frames per second with N frames in flight: the batch-1 graph replayed N times back to
    back, and the batch-N graph."""
    import torch
    n = args.inflight
    m, img, big = _peer_model(args, 1)
    g1 = _graph(m, img, big)
    med, _ = _time_ms(lambda: [g1.replay() for _ in range(n)], max(args.iters // 4, 20), 5)
    res = {"b1_replays_ms_per_frame": med / n}
    del g1
    m, img, big = _peer_model(args, n)
    gn = _graph(m, img, big)
    med, _ = _time_ms(gn.replay, max(args.iters // 4, 20), 5)
    res["batch_ms_per_frame"] = med / n
    # The same with the N frames' copies in and the outputs' read-back (as bench_opencl's io figure).
    out = gn.opv_out
    img_host, big_host = img.cpu(), big.cpu()

    def io_step():
        img.copy_(img_host)
        big.copy_(big_host)
        gn.replay()
        out.cpu()
    med, _ = _time_ms(io_step, max(args.iters // 4, 20), 5)
    res["batch_io_ms_per_frame"] = med / n
    res["torch"] = torch.__version__
    print(json.dumps(res))


def compile_child(args):
    """torch.compile of the fp16 network in one mode: median ms per call (synchronized)."""
    import torch
    m, img, big = _peer_model(args, 1)
    t = time.perf_counter()
    cm = torch.compile(m, mode=None if args.compile_mode == "default" else args.compile_mode)
    mark = getattr(torch.compiler, "cudagraph_mark_step_begin", lambda: None)

    def step():
        mark()
        cm(img, big)
    with torch.no_grad():
        for _ in range(3):
            step()
        torch.cuda.synchronize()
        compile_s = time.perf_counter() - t
        med, mn = _time_ms(step, args.iters, 10)
    print(json.dumps({"mode": args.compile_mode, "median_ms": med, "min_ms": mn, "compile_s": compile_s}))


def bench_compile(args, mode, timeout):
    cmd = [sys.executable, __file__, "--compile-child", "--compile-mode", mode, "--trunk", args.trunk, "--hw", args.hw,
           "--seed", str(args.seed), "--iters", str(args.iters)]
    # Its own process group: on time-out the compile workers Inductor starts go with it (they
    # would otherwise keep the CPUs busy through the next mode and the rest of the run).
    t = time.perf_counter()
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        out, err = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        p.communicate()
        return {"mode": mode, "error": f"timed out after {timeout:.0f} s"}
    finally:
        try:  # workers left behind by a child that exited
            os.killpg(p.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    if p.returncode != 0:
        return {"mode": mode, "error": f"exit {p.returncode} after {time.perf_counter() - t:.0f} s: "
                + err.strip()[-600:]}
    return json.loads(out.strip().splitlines()[-1])


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", default=str(DEFAULT_MODEL))
    ap.add_argument("--iters", type=int, default=200)
    ap.add_argument("--warmup", type=int, default=20)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--arch", default="compute_80", help="compile --cuda-arch (compute_80+: tensor-core 1x1 convs)")
    ap.add_argument("--art", default=None, help="a .opv compiled for cuda already (skips the compile)")
    ap.add_argument("--base-art", action="append", default=[],
                    help="another .opv timed in the same rounds (a before/after); repeatable (a sweep)")
    ap.add_argument("--trunk", default="fastvit_t12")
    ap.add_argument("--hw", default="128,256")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--no-torch", action="store_true", help="skip the PyTorch peer")
    ap.add_argument("--tinygrad", action="store_true",
                    help="also time tinygrad with DEV=CUDA (openpilot's engine and setting on a PC with an NVIDIA GPU) on "
                         "--model in the same rounds: a TinyJit of tinygrad's OnnxRunner in a long-lived child "
                         "(bench_tinygrad.py), its outputs checked against MODEL_ref.npz; tinygrad must be importable "
                         "(bench/device_cuda.sh --bundle carries its wheel)")
    ap.add_argument("--tinygrad-dev", default="CUDA", help="tinygrad's DEV for --tinygrad (default CUDA)")
    ap.add_argument("--tinygrad-inputs", choices=("device", "host"), default="device",
                    help="tinygrad's frames: device, the same GPU tensors every frame (as PyTorch's graph and opvision "
                         "--cuda-inputs device); host, copied from numpy each frame (default: device)")
    ap.add_argument("--bench-flags", default="",
                    help="more `opvision bench` flags for the --art (or compiled) artifact's runs, e.g. "
                         "--bench-flags=--staged-inputs (one flag: with '=', else argparse takes it for its own) "
                         "or \"--cuda-inputs copy --staged-inputs\" (the --base-art runs go without)")
    ap.add_argument("--no-prefixes", action="store_true",
                    help="skip the replay's critical path per call (opvision bench --replay-prefixes)")
    ap.add_argument("--opvision", default=None)
    ap.add_argument("--timeout", type=float, default=600)
    ap.add_argument("--json", default=None, help="write all numbers to this file")
    ap.add_argument("--inflight", type=int, default=32, help="throughput: frames in flight (0: skip)")
    ap.add_argument("--batch-art", default=None,
                    help="throughput: a batch-N .opv (compile --batch N, N = --inflight) timed in the same rounds")
    ap.add_argument("--compile-timeout", type=float, default=240,
                    help="torch.compile: seconds for max-autotune (then default mode in what is left; 0: skip)")
    ap.add_argument("--compile-modes", default="max-autotune,default",
                    help="torch.compile modes tried in order until one compiles within the time")
    ap.add_argument("--tp-child", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--compile-child", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--compile-mode", default="max-autotune", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.tp_child:
        return throughput_child(args)
    if args.compile_child:
        return compile_child(args)
    opv = find_opvision(args.opvision)
    if not args.art and not pathlib.Path(args.model).is_file():
        sys.exit(f"bench_cuda: model not found: {args.model}")
    results = {"machine": platform.node(), "model": args.model, "arch": args.arch}
    with tempfile.TemporaryDirectory() as tmp:
        art = pathlib.Path(args.art) if args.art else pathlib.Path(tmp) / "m.opv"
        if not args.art:
            t = time.perf_counter()
            out = subprocess.run([opv, "compile", args.model, "-o", str(art), "--target", "cuda", "--cuda-arch",
                                  args.arch], capture_output=True, text=True, timeout=args.timeout)
            if out.returncode != 0:
                sys.exit(f"bench_cuda: compile failed:\n{out.stderr[-3000:]}")
            print(f"[bench] compiled for cuda in {time.perf_counter() - t:.1f} s: {out.stderr.strip()}", file=sys.stderr)
        opv_rounds, torch_rounds, tg_rounds = [], [], []
        base_rounds = {b: [] for b in args.base_art}
        tg = start_tinygrad(args) if args.tinygrad else None
        try:
            for r in range(args.rounds):
                for b in args.base_art:
                    base_rounds[b].append(bench_opv(opv, b, args))
                opv_rounds.append(bench_opv(opv, art, args, flags=args.bench_flags))
                if not args.no_torch:
                    torch_rounds.append(bench_torch(args))
                if tg is not None:
                    tg_rounds.append(tg.round(args.iters, args.warmup))
                print(f"[bench] round {r + 1}/{args.rounds} done", file=sys.stderr, flush=True)
        finally:
            if tg is not None:
                tg.close()
        prof = opv_rounds[-1]
        # The replayed graph cut after each call (`opvision bench --replay-prefixes`): what each
        # call adds to the replay's critical path, summed by kernel.
        prefix = None if args.no_prefixes else bench_opv(opv, art, args, flags=args.bench_flags + " --replay-prefixes")
        art_keep = art
        if args.inflight > 0 and not args.art:  # the temporary artifact is gone after this block
            args.inflight = 0  # `opvision bench` ends with profiled runs: its per-kernel table
    meds = [x["median_ms"] for x in opv_rounds]
    med = statistics.median(meds)
    results["opvision"] = {"median_ms": med, "min_ms": min(float(x["min_ms"]) for x in opv_rounds),
                           "round_medians_ms": meds}
    print(f"{'':<34} {'median ms':>10} {'min ms':>8}  round medians")
    print(f"{'opvision cuda (graph replay, I/O)':<34} {med:>10.3f} {results['opvision']['min_ms']:>8.3f}  "
          + " ".join(f"{m:.3f}" for m in meds))
    results["bases"] = []
    for b, rounds in base_rounds.items():
        bm = [x["median_ms"] for x in rounds]
        results["bases"].append({"art": b, "median_ms": statistics.median(bm), "round_medians_ms": bm})
        label = "base " + pathlib.Path(b).stem
        print(f"{label[:34]:<34} {statistics.median(bm):>10.3f} {min(float(x['min_ms']) for x in rounds):>8.3f}  "
              + " ".join(f"{m:.3f}" for m in bm) + "   (--art / base per round: "
              + " ".join(f"{o / b:.2f}" for o, b in zip(meds, bm)) + ")")
    if results["bases"]:
        results["base"] = results["bases"][0]
    if torch_rounds:
        peer = statistics.median(x["median_ms"] for x in torch_rounds)
        peer_io = statistics.median(x["io_median_ms"] for x in torch_rounds)
        results["torch"] = {"median_ms": peer, "io_median_ms": peer_io, "gpu": torch_rounds[0]["gpu"],
                            "torch": torch_rounds[0]["torch"],
                            "round_medians_ms": [x["median_ms"] for x in torch_rounds]}
        print(f"{'PyTorch fp16 CUDA graph':<34} {peer:>10.3f} {min(x['min_ms'] for x in torch_rounds):>8.3f}  "
              + " ".join(f"{x['median_ms']:.3f}" for x in torch_rounds)
              + f"   ({results['torch']['gpu']}, torch {results['torch']['torch']})")
        print(f"{'  + input upload/read-back':<34} {peer_io:>10.3f}")
        ratios = [o / t["median_ms"] for o, t in zip(meds, torch_rounds)]
        results["ratio"] = med / peer
        results["round_ratios"] = ratios
        print(f"ratio opvision cuda / PyTorch CUDA graph: {med / peer:.2f} (vs the peer with its copies: "
              f"{med / peer_io:.2f}); per round: " + " ".join(f"{r:.2f}" for r in ratios))
    if tg_rounds:
        tm = [x["median_ms"] for x in tg_rounds]
        results["tinygrad"] = {"median_ms": statistics.median(tm), "round_medians_ms": tm, "peer": tg.desc,
                               "check": tg.info.get("check"), "calls": tg.info.get("calls")}
        print(f"{'tinygrad (TinyJit)':<34} {statistics.median(tm):>10.3f} {min(x['min_ms'] for x in tg_rounds):>8.3f}  "
              + " ".join(f"{m:.3f}" for m in tm) + f"   ({tg.desc}; {tg.info.get('calls')} calls in the JIT)")
        print(f"ratio opvision cuda / tinygrad: {med / statistics.median(tm):.2f}; per round: "
              + " ".join(f"{o / t:.2f}" for o, t in zip(meds, tm)))
    kernels = prof.get("kernels") or []
    results["launches_per_inference"] = sum(int(k.get("count", 1)) for k in kernels)
    results["kernels"] = kernels
    print(f"launches per inference: {results['launches_per_inference']}")
    if "modules" in prof:  # which code ran: the stored SASS or the PTX the driver JIT-compiled
        results["code"] = {"modules": prof["modules"], "sass_modules": prof.get("sass_modules", 0)}
        print(f"code: {prof.get('sass_modules', 0)} of {prof['modules']} modules from stored SASS, the rest PTX "
              f"(loaded in {float(prof.get('load_ms', 0)):.0f} ms)")
    if kernels:
        top = sorted(kernels, key=lambda k: -float(k.get("total_ms", 0)))[:12]
        print("slowest kernels (profiled run, CUDA events: each call alone, with its launch):")
        for k in top:
            print("  " + json.dumps(k))
    if prefix and prefix.get("replay_prefixes_us"):
        cuts = prefix["replay_prefixes_us"]
        names = prefix.get("replay_prefix_kernels", [])
        results["replay_prefixes_us"] = cuts
        print(f"critical path of the replay (graph cut after each call, {args.iters} replays each): "
              f"{cuts[-1]:.1f} us in all, the first call {cuts[0]:.1f} us (with the graph's launch and wait)")
        if names and len(names) == len(cuts):
            by = {}
            for i, n in enumerate(names):
                c, us = by.get(n, (0, 0.0))
                by[n] = (c + 1, us + cuts[i] - (cuts[i - 1] if i else 0.0))
            results["critical_path_by_kernel_us"] = {n: us for n, (c, us) in by.items()}
            for n, (c, us) in sorted(by.items(), key=lambda kv: -kv[1][1])[:12]:
                print(f"  {n:<40} {c:>3} calls {us:>8.1f} us")
    if args.json:
        pathlib.Path(args.json).write_text(json.dumps(results, indent=1))
    if args.inflight > 0:
        n = args.inflight
        tp_rounds, opv_tp, opv_tp_serial = [], [], []
        batch_tp, batch_tp4, batch_tp4_serial, batch_kernel = [], [], [], []
        if args.batch_art:
            insp = subprocess.run([opv, "inspect", args.batch_art], capture_output=True, text=True, timeout=args.timeout)
            b = next((int(line.split()[1]) for line in insp.stdout.splitlines() if line.startswith("batch ")
                      and line.split()[1].isdigit()), 1)
            if b != n:
                sys.exit(f"bench_cuda: --batch-art {args.batch_art} has batch {b}, --inflight is {n}")
        for _ in range(min(args.rounds, 3)):
            opv_tp.append(float(bench_opv(opv, art_keep, args, replays=n, flags=args.bench_flags)["median_ms"]) / n)
            opv_tp_serial.append(float(bench_opv(opv, art_keep, args, replays=n, overlap=False,
                                                 flags=args.bench_flags)["median_ms"]) / n)
            if args.batch_art:
                r = bench_opv(opv, args.batch_art, args)
                batch_tp.append(float(r["median_ms"]) / n)
                batch_kernel.append(sum(float(k.get("total_ms", 0)) for k in r.get("kernels") or []) / n)
                batch_tp4.append(float(bench_opv(opv, args.batch_art, args, replays=4)["median_ms"]) / (4 * n))
                batch_tp4_serial.append(float(bench_opv(opv, args.batch_art, args, replays=4,
                                                        overlap=False)["median_ms"]) / (4 * n))
            if not args.no_torch:
                tp_rounds.append(json.loads(run([sys.executable, __file__, "--tp-child", "--trunk", args.trunk, "--hw",
                                                 args.hw, "--seed", str(args.seed), "--iters", str(args.iters),
                                                 "--inflight", str(n)], args.timeout).strip().splitlines()[-1]))
        o = statistics.median(opv_tp)
        os_ = statistics.median(opv_tp_serial)
        results["throughput"] = {"inflight": n, "opvision_ms_per_frame": o, "opvision_rounds": opv_tp,
                                 "opvision_serial_ms_per_frame": os_, "opvision_serial_rounds": opv_tp_serial}
        print(f"throughput, {n} frames in flight (median of {len(opv_tp)} rounds; ms per frame, frames/s):")
        print(f"  {'opvision: batch-1 graph x' + str(n) + ' back to back, with I/O':<52} {o:>7.4f} ms {1e3 / o:>8.0f} fps  "
              + " ".join(f"{x:.4f}" for x in opv_tp))
        print(f"  {'  the same, uploads not overlapped (--cuda-overlap off)':<52} {os_:>7.4f} ms {1e3 / os_:>8.0f} fps  "
              + " ".join(f"{x:.4f}" for x in opv_tp_serial) + f"  (overlapped / not: {o / os_:.2f})")
        ob = ob4 = ok = None
        if batch_tp:
            ob, ob4, ok = statistics.median(batch_tp), statistics.median(batch_tp4), statistics.median(batch_kernel)
            ob4s = statistics.median(batch_tp4_serial)
            results["throughput"].update({"batch_art": args.batch_art, "opvision_batch_ms_per_frame": ob,
                                          "opvision_batch_rounds": batch_tp, "opvision_batch_x4_ms_per_frame": ob4,
                                          "opvision_batch_x4_rounds": batch_tp4,
                                          "opvision_batch_x4_serial_ms_per_frame": ob4s,
                                          "opvision_batch_x4_serial_rounds": batch_tp4_serial,
                                          "opvision_batch_kernel_ms_per_frame": ok,
                                          "opvision_batch_kernel_rounds": batch_kernel})
            print(f"  {'opvision: batch-' + str(n) + ' artifact, one graph, with I/O':<52} {ob:>7.4f} ms {1e3 / ob:>8.0f} fps  "
                  + " ".join(f"{x:.4f}" for x in batch_tp))
            print(f"  {'opvision: batch-' + str(n) + ' artifact x4 in flight, with I/O':<52} {ob4:>7.4f} ms {1e3 / ob4:>8.0f} fps  "
                  + " ".join(f"{x:.4f}" for x in batch_tp4))
            print(f"  {'  the same, uploads not overlapped (--cuda-overlap off)':<52} {ob4s:>7.4f} ms {1e3 / ob4s:>8.0f} fps  "
                  + " ".join(f"{x:.4f}" for x in batch_tp4_serial) + f"  (overlapped / not: {ob4 / ob4s:.2f})")
            print(f"  {'opvision: batch-' + str(n) + ' kernels (profiled, no graph/copies)':<52} {ok:>7.4f} ms {1e3 / ok:>8.0f} fps  "
                  + " ".join(f"{x:.4f}" for x in batch_kernel))
        if tp_rounds:
            b1 = statistics.median(x["b1_replays_ms_per_frame"] for x in tp_rounds)
            bn = statistics.median(x["batch_ms_per_frame"] for x in tp_rounds)
            results["throughput"].update({"torch_b1_replays_ms_per_frame": b1, "torch_batch_ms_per_frame": bn,
                                          "torch_rounds": tp_rounds})
            print(f"  {'PyTorch: batch-1 graph x' + str(n) + ' back to back, no copies':<52} {b1:>7.4f} ms "
                  f"{1e3 / b1:>8.0f} fps  ratio {o / b1:.2f}")
            print(f"  {'PyTorch: one graph at batch ' + str(n) + ', no copies':<52} {bn:>7.4f} ms {1e3 / bn:>8.0f} fps  "
                  f"ratio {o / bn:.2f}" + (f" (batch-{n} artifact {ob / bn:.2f}, x4 {ob4 / bn:.2f}, kernels {ok / bn:.2f})"
                                           if ob else ""))
            bio = statistics.median(x["batch_io_ms_per_frame"] for x in tp_rounds)
            results["throughput"]["torch_batch_io_ms_per_frame"] = bio
            print(f"  {'PyTorch: one graph at batch ' + str(n) + ', with copies':<52} {bio:>7.4f} ms {1e3 / bio:>8.0f} fps  "
                  f"ratio {o / bio:.2f}" + (f" (batch-{n} artifact {ob / bio:.2f}, x4 {ob4 / bio:.2f})" if ob else ""))
            if ob:  # per round, batch artifact / PyTorch batch graph
                print(f"  per round, batch-{n} artifact / PyTorch batch-{n} graph (no copies): "
                      + " ".join(f"{a / t['batch_ms_per_frame']:.2f}" for a, t in zip(batch_tp, tp_rounds))
                      + "; with copies: "
                      + " ".join(f"{a / t['batch_io_ms_per_frame']:.2f}" for a, t in zip(batch_tp, tp_rounds)))
        if args.json:
            pathlib.Path(args.json).write_text(json.dumps(results, indent=1))
    if args.compile_timeout > 0 and not args.no_torch:
        t0 = time.perf_counter()
        results["torch_compile"] = []
        for mode in args.compile_modes.split(","):  # the first that compiles within the time
            left = args.compile_timeout - (time.perf_counter() - t0)
            if results["torch_compile"] and left < 90:
                left = 90
            results["torch_compile"].append(bench_compile(args, mode, left))
            if "error" not in results["torch_compile"][-1]:
                break
        peer = results.get("torch", {}).get("median_ms")
        for r in results["torch_compile"]:
            if "error" in r:
                print(f"torch.compile mode {r['mode']}: FAILED ({r['error'][-300:]})")
            else:
                print(f"torch.compile mode {r['mode']}: {r['median_ms']:.3f} ms (min {r['min_ms']:.3f}; compiled in "
                      f"{r['compile_s']:.0f} s); opvision / it: {med / r['median_ms']:.2f}"
                      + (f"; vs the CUDA graph peer {r['median_ms'] / peer:.2f}x" if peer else ""))
        if args.json:
            pathlib.Path(args.json).write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    sys.exit(main())
