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
round and overall (< 1: opvision faster), launches per inference and the slowest kernels.
Not yet here: torch.compile (mode max-autotune) and the throughput figure with N inferences in
flight (issue 15 lists both).

Usage: bench/bench_cuda.py [--model M.onnx | --art M.opv] [--iters 200] [--rounds 5] [--no-torch]
       [--opvision PATH] [--arch compute_90] [--json OUT.json]
"""
import argparse
import json
import pathlib
import platform
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
from bench_opencl import DEFAULT_MODEL, bench_torch, find_opvision, last_json, run  # noqa: E402


def bench_opv(opv, art, args):
    cmd = [opv, "bench", str(art), "--backend", "cuda", "--warmup", str(args.warmup), "--iters", str(args.iters),
           "--json"]
    return last_json(run(cmd, args.timeout))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", default=str(DEFAULT_MODEL))
    ap.add_argument("--iters", type=int, default=200)
    ap.add_argument("--warmup", type=int, default=20)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--arch", default="compute_80", help="compile --cuda-arch (compute_80+: tensor-core 1x1 convs)")
    ap.add_argument("--art", default=None, help="a .opv compiled for cuda already (skips the compile)")
    ap.add_argument("--trunk", default="fastvit_t12")
    ap.add_argument("--hw", default="128,256")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--no-torch", action="store_true", help="skip the PyTorch peer")
    ap.add_argument("--opvision", default=None)
    ap.add_argument("--timeout", type=float, default=600)
    ap.add_argument("--json", default=None, help="write all numbers to this file")
    args = ap.parse_args()
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
        opv_rounds, torch_rounds = [], []
        for r in range(args.rounds):
            opv_rounds.append(bench_opv(opv, art, args))
            if not args.no_torch:
                torch_rounds.append(bench_torch(args))
            print(f"[bench] round {r + 1}/{args.rounds} done", file=sys.stderr, flush=True)
        prof = opv_rounds[-1]  # `opvision bench` ends with profiled runs: its per-kernel table
    meds = [x["median_ms"] for x in opv_rounds]
    med = statistics.median(meds)
    results["opvision"] = {"median_ms": med, "min_ms": min(float(x["min_ms"]) for x in opv_rounds),
                           "round_medians_ms": meds}
    print(f"{'':<34} {'median ms':>10} {'min ms':>8}  round medians")
    print(f"{'opvision cuda (graph replay, I/O)':<34} {med:>10.3f} {results['opvision']['min_ms']:>8.3f}  "
          + " ".join(f"{m:.3f}" for m in meds))
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
    kernels = prof.get("kernels") or []
    results["launches_per_inference"] = sum(int(k.get("count", 1)) for k in kernels)
    results["kernels"] = kernels
    print(f"launches per inference: {results['launches_per_inference']}")
    if kernels:
        top = sorted(kernels, key=lambda k: -float(k.get("total_ms", 0)))[:12]
        print("slowest kernels (profiled run, CUDA events):")
        for k in top:
            print("  " + json.dumps(k))
    if args.json:
        pathlib.Path(args.json).write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    sys.exit(main())
