#!/usr/bin/env python3
"""OpenCL benchmark: opvision's opencl backend against PyTorch (fp16, CUDA-graph replay) on the
same network, in one run, plus the per-pass attribution of opvision's plan passes.

1. opvision: the model is compiled for --target opencl once per pass set (cumulative: layout +
   codegen only, then + input-pack, + weight-pack, + dedupe, + level-schedule, + batch, + replay),
   and each artifact is timed with `opvision bench ART --backend opencl --device SEL --json` in a
   child process (wall-clock per inference: input upload, every kernel, output read-back).
2. PyTorch peer (a child process; needs torch + timm + CUDA): the fixture network rebuilt with
   ../shared/models/make_fixtures.py `build(trunk, (H, W), seed)`, in fp16 on the GPU, captured
   once into a CUDA graph and replayed; wall-clock per replay + synchronize, inputs already on the
   GPU (so the peer does less work per frame than opvision, which uploads and reads back); it is
   timed a second time with the host->device input copies and the output read-back included.
Both sides run --rounds alternating rounds; the table gives the median of the round medians and
the ratio opvision / PyTorch (< 1 means opvision is faster).

The shared fixture directory is ../shared beside the repository, or $OPV_SHARED.

Usage: bench/bench_opencl.py [--model M.onnx] [--device nvidia] [--iters 200] [--rounds 3]
       [--trunk fastvit_t12 --hw 128,256 --seed 1] [--no-torch] [--no-attribution]
       [--busy-items N] [--weights f16|f32] [--batch N] [--images image|buffer] [--spin] [--opvision PATH] [--json OUT.json]
"""
import argparse
import json
import os
import pathlib
import platform
import statistics
import subprocess
import sys
import tempfile
import time

REPO = pathlib.Path(__file__).resolve().parents[1]
SHARED = pathlib.Path(os.environ.get("OPV_SHARED", REPO.parent / "shared"))
DEFAULT_MODEL = SHARED / "models" / "opvision_t12_fp16.onnx"
# Cumulative pass sets for the attribution (layout-image + codegen are the unoptimised baseline).
PASS_STEPS = ["layout-image", "input-pack", "weight-pack", "dedupe", "level-schedule", "batch", "replay"]


def find_opvision(arg):
    for cand in ([arg] if arg else []) + ["./build/opvision", str(REPO / "build" / "opvision")]:
        p = pathlib.Path(cand)
        if p.is_file() and os.access(p, os.X_OK):
            return str(p.resolve())
    sys.exit(f"bench_opencl: opvision binary not found (tried {arg or './build/opvision'}); "
             "build it or pass --opvision PATH")


def run(cmd, timeout):
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    if p.returncode != 0:
        raise RuntimeError(f"{' '.join(map(str, cmd))} exited {p.returncode}:\n{p.stderr[-3000:]}")
    return p.stdout


def last_json(text):
    text = text.strip()
    start = text.rfind("\n{")
    return json.loads(text[start + 1:] if start >= 0 else text[text.find("{"):])


def compile_art(opv, model, passes, out, timeout, args):
    cmd = [opv, "compile", str(model), "-o", str(out), "--target", "opencl", "--passes", ",".join(passes),
           "--cl-busy-items", str(args.busy_items), "--cl-weights", args.weights, "--cl-batch", str(args.batch),
           "--cl-images", args.images]
    run(cmd, timeout)
    return out


def bench_opv(opv, art, args):
    cmd = [opv, "bench", str(art), "--backend", "opencl", "--warmup", str(args.warmup), "--iters",
           str(args.iters), "--json"]
    if args.device:
        cmd += ["--device", args.device]
    if args.spin:
        cmd += ["--spin"]
    obj = last_json(run(cmd, args.timeout))
    return {"median_ms": float(obj["median_ms"]), "min_ms": float(obj["min_ms"]),
            "per_kernel": obj.get("kernels")}


def torch_child(args):
    """Child process: times the PyTorch fp16 CUDA-graph replay and prints one JSON line."""
    import torch
    sys.path.insert(0, str(REPO / "bench"))
    from torch_profile import capture_peer  # noqa: E402
    g, img, big, out = capture_peer(args.trunk, args.hw, args.seed)
    img_host = img.cpu()
    big_host = big.cpu()
    for _ in range(args.warmup):
        g.replay()
    torch.cuda.synchronize()
    ts = []
    for _ in range(args.iters):
        t = time.perf_counter()
        g.replay()
        torch.cuda.synchronize()
        ts.append((time.perf_counter() - t) * 1e3)
    # The same with the frame's host->device copies and the output's read-back, as opvision does.
    io = []
    for _ in range(args.iters):
        t = time.perf_counter()
        img.copy_(img_host)
        big.copy_(big_host)
        g.replay()
        out.cpu()
        io.append((time.perf_counter() - t) * 1e3)
    print(json.dumps({"median_ms": statistics.median(ts), "min_ms": min(ts),
                      "io_median_ms": statistics.median(io), "torch": torch.__version__,
                      "gpu": torch.cuda.get_device_name(0)}))


def bench_torch(args):
    cmd = [sys.executable, __file__, "--torch-child", "--trunk", args.trunk, "--hw", args.hw, "--seed",
           str(args.seed), "--iters", str(args.iters), "--warmup", str(args.warmup)]
    return json.loads(run(cmd, args.timeout).strip().splitlines()[-1])


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", default=str(DEFAULT_MODEL))
    ap.add_argument("--device", default="", help="OpenCL device selector (see `opvision devices`)")
    ap.add_argument("--iters", type=int, default=200)
    ap.add_argument("--warmup", type=int, default=20)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--trunk", default="fastvit_t12")
    ap.add_argument("--hw", default="128,256")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--busy-items", type=int, default=0,
                    help="compile --cl-busy-items (0: sized for Adreno 630; ~65536 for large desktop GPUs)")
    ap.add_argument("--weights", default="f16", choices=["f16", "f32"],
                    help="compile --cl-weights (f32 for GPUs without fp16 arithmetic)")
    ap.add_argument("--images", default="image", choices=["image", "buffer"],
                    help="compile --cl-images (buffer: image-layout activations in global buffers)")
    ap.add_argument("--batch", type=int, default=4, help="compile --cl-batch (calls per batched launch)")
    ap.add_argument("--spin", action="store_true",
                    help="opvision bench --spin: poll for the end of each inference (PyTorch's synchronize spins too)")
    ap.add_argument("--no-torch", action="store_true", help="skip the PyTorch peer (no CUDA here)")
    ap.add_argument("--no-attribution", action="store_true", help="time only the fully optimised plan")
    ap.add_argument("--opvision", default=None)
    ap.add_argument("--timeout", type=float, default=600)
    ap.add_argument("--json", default=None, help="write all numbers to this file")
    ap.add_argument("--torch-child", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.torch_child:
        return torch_child(args)
    opv = find_opvision(args.opvision)
    if not pathlib.Path(args.model).is_file():
        sys.exit(f"bench_opencl: model not found: {args.model}")
    steps = [PASS_STEPS[: i + 1] for i in range(len(PASS_STEPS))]
    if args.no_attribution:
        steps = steps[-1:]
    results = {"machine": platform.node(), "model": args.model, "device": args.device,
               "busy_items": args.busy_items, "weights": args.weights, "batch": args.batch,
               "images": args.images, "spin": args.spin, "steps": {}}
    with tempfile.TemporaryDirectory() as tmp:
        arts = []
        for passes in steps:
            art = pathlib.Path(tmp) / f"m{len(passes)}.opv"
            t = time.perf_counter()
            compile_art(opv, args.model, passes, art, args.timeout, args)
            print(f"[bench] compiled +{passes[-1]} in {time.perf_counter() - t:.1f} s", file=sys.stderr, flush=True)
            arts.append((passes[-1], art))
        rounds = {name: [] for name, _ in arts}
        torch_rounds = []
        for r in range(args.rounds):
            for name, art in arts:
                rounds[name].append(bench_opv(opv, art, args))
            if not args.no_torch:
                torch_rounds.append(bench_torch(args))
            print(f"[bench] round {r + 1}/{args.rounds} done", file=sys.stderr, flush=True)
    peer = statistics.median(x["median_ms"] for x in torch_rounds) if torch_rounds else None
    print(f"{'plan passes (cumulative)':<28} {'median ms':>10} {'min ms':>8} {'vs previous':>12} {'vs torch':>9}")
    prev = None
    for name, rs in rounds.items():
        med = statistics.median(x["median_ms"] for x in rs)
        mn = min(x["min_ms"] for x in rs)
        results["steps"][name] = {"median_ms": med, "min_ms": mn, "round_medians_ms": [x["median_ms"] for x in rs]}
        vs_prev = f"{med / prev:.2f}x" if prev else "-"
        vs_peer = f"{med / peer:.2f}" if peer else "-"
        print(f"+{name:<27} {med:>10.3f} {mn:>8.3f} {vs_prev:>12} {vs_peer:>9}")
        prev = med
    if torch_rounds:
        peer_io = statistics.median(x["io_median_ms"] for x in torch_rounds)
        results["torch"] = {"median_ms": peer, "min_ms": min(x["min_ms"] for x in torch_rounds),
                            "io_median_ms": peer_io,
                            "round_medians_ms": [x["median_ms"] for x in torch_rounds],
                            "torch": torch_rounds[0]["torch"], "gpu": torch_rounds[0]["gpu"]}
        last = results["steps"][list(rounds)[-1]]["median_ms"]
        results["ratio"] = last / peer
        print(f"{'PyTorch fp16 CUDA graph':<28} {peer:>10.3f} {results['torch']['min_ms']:>8.3f}"
              f"   ({results['torch']['gpu']}, torch {results['torch']['torch']})")
        print(f"{'  + input upload/read-back':<28} {peer_io:>10.3f}")
        print(f"ratio opvision opencl / PyTorch CUDA graph: {last / peer:.2f} "
              f"(vs the peer with its input/output copies: {last / peer_io:.2f})")
        final = results["steps"][list(rounds)[-1]]["round_medians_ms"]
        per_round = [o / t["median_ms"] for o, t in zip(final, torch_rounds)]
        results["round_ratios"] = per_round
        print("per-round ratios (opvision / PyTorch, same round): " + " ".join(f"{r:.2f}" for r in per_round))
    if args.json:
        pathlib.Path(args.json).write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    sys.exit(main())
