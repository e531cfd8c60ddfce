#!/usr/bin/env python3
"""Replay throughput: opvision.replay on Ray Data with 1..N workers against a single-process loop
doing the same work, in one run (issue 16, deliverable 2).

  1. MODEL (default: the shared fixture ../shared/models/opvision_t12_fp16.onnx) is compiled once
     with `opvision compile --target cpu`; every side runs the .opv.
  2. A dataset of --segments shards of --frames frames each is synthesised (seeded random uint8 for
     every model input, the layout of `pydoc opvision.replay`).
  3. Per round, in this order: the peer, a single-process loop (one InferenceSession of T threads
     per --peer-threads entry; per segment: load the shard, run_into every frame, write the output
     atomically: opvision.replay's own per-segment functions, without Ray), then
     opvision.replay.replay() with W workers of --threads threads for each W in --workers, each
     into a fresh output directory. Ray is started once beforehand (ray.init with
     num_cpus = max(W) * threads), so its start-up is not in any time; a replay's time is its
     Ray Data execution, including the actors' start (one session load each).
The table gives each side's median over --rounds rounds of frames/s (total frames / wall time),
and its ratio to the first peer. Every replay's outputs are compared with the peer's, bit for bit.

Usage: bench/bench_replay.py [MODEL.onnx] [--segments 8] [--frames 20] [--workers 1,2]
       [--threads 1] [--peer-threads 1,2] [--rounds 3] [--opvision PATH] [--keep DIR]
"""
import argparse
import os
import pathlib
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

REPO = pathlib.Path(__file__).resolve().parents[1]
FIXTURE = REPO.parent / "shared" / "models" / "opvision_t12_fp16.onnx"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("model", nargs="?", default=str(FIXTURE))
    ap.add_argument("--segments", type=int, default=8)
    ap.add_argument("--frames", type=int, default=20)
    ap.add_argument("--workers", default="1,2")
    ap.add_argument("--threads", type=int, default=1, help="threads per worker session")
    ap.add_argument("--peer-threads", default="1,2", help="threads of the single-process peer(s)")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--opvision", default=str(REPO / "build" / "opvision"))
    ap.add_argument("--keep", default=None, help="work in this directory and keep it")
    a = ap.parse_args()
    workers = [int(w) for w in a.workers.split(",")]
    peer_threads = [int(t) for t in a.peer_threads.split(",")]

    sys.path.insert(0, str(pathlib.Path(a.opvision).resolve().parent / "python"))
    import numpy as np
    import opvision
    from opvision import replay as rp
    import ray

    work = pathlib.Path(a.keep or tempfile.mkdtemp(prefix="bench_replay_"))
    work.mkdir(parents=True, exist_ok=True)
    opv = work / "model.opv"
    subprocess.run([a.opvision, "compile", a.model, "-o", opv, "--target", "cpu"], check=True,
                   capture_output=True)
    ds = work / "dataset"
    ds.mkdir(exist_ok=True)
    s = opvision.InferenceSession(opv, backend="cpu", threads=1)
    rng = np.random.default_rng(0)
    for i in range(a.segments):
        np.savez(ds / f"seg{i:03d}.npz", **{x.name: rng.integers(0, 256, [a.frames] + x.shape, dtype=np.uint8)
                                            for x in s.get_inputs()})
    segments = rp.list_segments(str(ds), s.get_inputs())
    total = sum(seg.frames for seg in segments)

    def peer(threads, out):
        """(wall seconds, model seconds) of the single-process loop (session load included in
        neither: the replay's actors load theirs inside its wall time)."""
        sess = opvision.InferenceSession(opv, backend="cpu", threads=threads)
        model_s = 0.0
        t0 = time.perf_counter()
        for seg in segments:
            feeds, frames = rp.load_shard(seg.shard, sess.get_inputs())
            outs = {o.name: np.empty([frames] + o.shape, o.dtype) for o in sess.get_outputs()}
            t1 = time.perf_counter()
            for f in range(frames):
                sess.run_into({k: v[f] for k, v in feeds.items()}, {k: v[f] for k, v in outs.items()})
            model_s += time.perf_counter() - t1
            rp.write_atomic(rp.output_path(str(out), seg.name, "npz"), outs, "npz")
        return time.perf_counter() - t0, model_s

    ray.init(address="local", num_cpus=max(workers) * a.threads, include_dashboard=False, logging_level="WARNING",
             runtime_env={"env_vars": {"PYTHONPATH": str(pathlib.Path(opvision.__file__).parents[1])}})
    fps, model_fps, load = {}, {}, {}

    def record(side, wall_s, model_s, load1):
        fps.setdefault(side, []).append(total / wall_s)
        model_fps.setdefault(side, []).append(total / model_s)
        load.setdefault(side, []).append(load1)

    for r in range(a.rounds):
        for t in peer_threads:
            out = work / f"peer_t{t}"
            shutil.rmtree(out, ignore_errors=True)
            out.mkdir()
            load1 = os.getloadavg()[0]
            record(f"single-process loop, threads={t}", *peer(t, out), load1)
        for w in workers:
            out = work / f"replay_w{w}"
            shutil.rmtree(out, ignore_errors=True)
            load1 = os.getloadavg()[0]
            res = rp.replay(str(opv), str(ds), str(out), workers=w, threads=a.threads, progress=False)
            assert res.frames == total, res
            per_actor = {}
            for row in res.segments:
                per_actor[row["pid"]] = per_actor.get(row["pid"], 0.0) + row["seconds"]
            # model time of the busiest actor: the replay's time without Ray's and start-up's share
            record(f"opvision.replay, {w} worker(s) x {a.threads} thread(s)", res.wall_seconds,
                   max(per_actor.values()), load1)
            for seg in segments:  # bit for bit against the peer
                got = rp.read_segment(rp.output_path(str(out), seg.name, "npz"))
                ref = rp.read_segment(rp.output_path(str(work / f"peer_t{peer_threads[0]}"), seg.name, "npz"))
                assert all(np.array_equal(got[k], ref[k]) for k in ref), seg.name
        print(f"round {r + 1}: " + ", ".join(f"{k}: {v[-1]:.1f}" for k, v in fps.items()), flush=True)
    ray.shutdown()

    print(f"\n{pathlib.Path(a.model).name}, {a.segments} segments x {a.frames} frames, "
          f"{platform.node()}, {os.cpu_count()} CPUs, median of {a.rounds} rounds (frames/s)")
    base = statistics.median(next(iter(fps.values())))
    print("frames/s: all frames / wall time; model only: all frames / model time (the busiest "
          "actor's, for a replay); load: the 1-minute load average as each run started "
          "(other jobs on the machine)")
    print("| side | frames/s | vs first peer | model only | load (per round) |\n| --- | --- | --- | --- | --- |")
    for k, v in fps.items():
        m = statistics.median(v)
        print(f"| {k} | {m:.1f} | {m / base:.2f}x | {statistics.median(model_fps[k]):.1f} | "
              f"{' '.join(f'{x:.1f}' for x in load[k])} |")
    if not a.keep:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
