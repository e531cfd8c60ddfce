#!/usr/bin/env python3
"""Per-kernel GPU time of the PyTorch peer (the fixture network in fp16, CUDA-graph replay), from
torch.profiler: how many kernels one replay runs and where its time goes. Runs on the GPU machine.

Usage: bench/torch_profile.py [--trunk fastvit_t12 --hw 128,256 --seed 1] [--iters 20] [--top 40]
"""
import argparse
import os
import pathlib
import sys

import numpy as np
import torch

REPO = pathlib.Path(__file__).resolve().parents[1]
SHARED = pathlib.Path(os.environ.get("OPV_SHARED", REPO.parent / "shared"))


def capture_peer(trunk, hw, seed):
    """The fixture network (make_fixtures.build) in fp16 on the GPU, captured once in a CUDA graph
    on two random uint8 frames; returns (graph, img, big_img, output)."""
    sys.path.insert(0, str(SHARED / "models"))
    import make_fixtures  # noqa: E402  (needs torch, timm, onnx, onnxruntime)
    h, w = (int(x) for x in hw.split(","))
    m = make_fixtures.build(trunk, (h, w), seed).cuda().half().eval()
    rng = np.random.default_rng(0)
    img = torch.from_numpy(rng.integers(0, 256, (1, 12, h, w), dtype=np.uint8)).cuda()
    big = torch.from_numpy(rng.integers(0, 256, (1, 12, h, w), dtype=np.uint8)).cuda()
    with torch.no_grad():
        s = torch.cuda.Stream()
        s.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(s):
            for _ in range(3):
                m(img, big)
        torch.cuda.current_stream().wait_stream(s)
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            out = m(img, big)
    return g, img, big, out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--trunk", default="fastvit_t12")
    ap.add_argument("--hw", default="128,256")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--iters", type=int, default=20)
    ap.add_argument("--top", type=int, default=40)
    args = ap.parse_args()
    g, _, _, _ = capture_peer(args.trunk, args.hw, args.seed)
    for _ in range(10):
        g.replay()
    torch.cuda.synchronize()
    from torch.profiler import profile, ProfilerActivity
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(args.iters):
            g.replay()
        torch.cuda.synchronize()
    evs = [e for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA]
    per = {}
    for e in evs:
        d = per.setdefault(e.name, [0, 0.0])
        d[0] += 1
        d[1] += e.device_time_total if hasattr(e, "device_time_total") else e.cuda_time_total
    total = sum(v[1] for v in per.values()) / args.iters
    print(f"kernels per replay: {len(evs) / args.iters:.1f}; kernel time per replay: {total / 1e3:.3f} ms")
    for name, (n, us) in sorted(per.items(), key=lambda kv: -kv[1][1])[: args.top]:
        print(f"{us / args.iters:9.1f} us  {n / args.iters:5.1f}x  {name[:110]}")


if __name__ == "__main__":
    main()
