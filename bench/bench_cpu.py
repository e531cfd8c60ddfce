#!/usr/bin/env python3
"""CPU benchmark: opvision's cpu backend against onnxruntime's CPU provider on the same model(s),
in one run, for each thread count.

For every MODEL and every T in --threads:
  1. `opvision bench MODEL --backend cpu --threads T --warmup W --iters N --seed S --json` in a child
     process: its median/min/p90 latency, and the plan's arena bytes (from the JSON, or from
     `opvision inspect MODEL --json` when the bench JSON does not carry them);
  2. onnxruntime in a child python process (this script with --ort-child): intra_op_num_threads=T,
     inter_op_num_threads=1, sequential execution, all graph optimisations, the same input names,
     shapes and dtypes (seeded random values; these networks have no data-dependent control flow),
     W warm-up runs then N timed runs.
Steps 1 and 2 alternate for --rounds rounds (default 3) and the table gives the median of the
rounds' medians, with each round's ratio, since a shared VM drifts in speed over minutes.
Peak RSS of each child comes from wait4()'s rusage (ru_maxrss), so each side is measured alone.
Linux carries the parent's high-water RSS across fork+exec into ru_maxrss, so this script keeps
its own process lean (no numpy/onnxruntime import) and prints that floor; onnxruntime's figure
includes its python interpreter and numpy.
Without MODEL, the default openpilot-architecture model is generated with `opvision make-model`.
Each model is compiled ahead of time once (`opvision compile --target cpu`, the product's path:
the runtime loads a .opv) and the .opv is benchmarked, so opvision's RSS is the runtime's; the
compile's own peak RSS is printed apart. --from-onnx benchmarks the .onnx directly instead
(compiled on the fly inside the timed process, whose RSS then includes the compiler's peak).

--plot OUT.png draws each round's median latency of both peers, per model and thread count
(matplotlib, imported only then and after every measurement, so it never inflates the RSS floor).

Usage: bench/bench_cpu.py [MODEL ...] [--iters 50] [--warmup 10] [--threads 1,2] [--rounds 3]
       [--opvision PATH] [--json OUT.json] [--plot OUT.png] [--from-onnx]
"""
import argparse
import json
import statistics
import os
import pathlib
import platform
import re
import resource
import subprocess
import sys
import tempfile
import time

REPO = pathlib.Path(__file__).resolve().parents[1]
MIB = 1024.0 * 1024.0


def find_opvision(arg):
    for cand in ([arg] if arg else []) + ["./build/opvision", str(REPO / "build" / "opvision")]:
        p = pathlib.Path(cand)
        if p.is_file() and os.access(p, os.X_OK):
            return str(p.resolve())
    sys.exit(f"bench_cpu: opvision binary not found (tried {arg or './build/opvision'} and "
             f"{REPO / 'build' / 'opvision'}); build it or pass --opvision PATH")


def run_child(cmd, timeout):
    """Runs cmd; returns (returncode, stdout, stderr, peak_rss_bytes, wall_s)."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        t0 = time.perf_counter()
        p = subprocess.Popen(cmd, stdout=out, stderr=err)
        deadline = t0 + timeout
        while True:
            pid, status, ru = os.wait4(p.pid, os.WNOHANG)
            if pid == p.pid:
                break
            if time.perf_counter() > deadline:
                p.kill()
                pid, status, ru = os.wait4(p.pid, 0)
                break
            time.sleep(0.01)
        p.returncode = os.waitstatus_to_exitcode(status)
        wall = time.perf_counter() - t0
        out.seek(0)
        err.seek(0)
        return (p.returncode, out.read().decode(errors="replace"),
                err.read().decode(errors="replace"), ru.ru_maxrss * 1024, wall)


def find_key(obj, pattern):
    """First numeric value whose key matches pattern (depth-first over nested dicts)."""
    rx = re.compile(pattern)
    if isinstance(obj, dict):
        for k, v in obj.items():
            if rx.search(k) and isinstance(v, (int, float)) and not isinstance(v, bool):
                return float(v)
        for v in obj.values():
            r = find_key(v, pattern)
            if r is not None:
                return r
    return None


def parse_json(text):
    """The last JSON object printed on stdout."""
    text = text.strip()
    try:
        return json.loads(text)
    except ValueError:
        start = text.rfind("\n{")
        return json.loads(text[start + 1:] if start >= 0 else text[text.find("{"):])


def bench_opvision(opv, model, threads, args):
    cmd = [opv, "bench", model, "--backend", "cpu", "--threads", str(threads), "--warmup",
           str(args.warmup), "--iters", str(args.iters), "--seed", str(args.seed), "--json",
           "--cpu-precision", args.precision]
    rc, out, err, rss, _ = run_child(cmd, args.timeout)
    if rc != 0:
        raise RuntimeError(f"{' '.join(cmd)} exited {rc}:\n{err[-2000:]}")
    obj = parse_json(out)
    res = {"median_ms": find_key(obj, r"^median(_ms)?$"), "min_ms": find_key(obj, r"^min(_ms)?$"),
           "p90_ms": find_key(obj, r"^p90(_ms)?$"), "peak_rss": rss,
           "arena_bytes": find_key(obj, r"arena")}
    if res["median_ms"] is None:
        raise RuntimeError(f"no median in opvision bench --json output: {out[:500]}")
    return res


def arena_from_inspect(opv, model, args):
    """Arena bytes from `opvision inspect` (its JSON when it has one, else the `arena N B` line)."""
    for cmd in ([opv, "inspect", model, "--target", "cpu", "--json"],
                [opv, "inspect", model, "--target", "cpu"]):
        rc, out, _, _, _ = run_child(cmd, args.timeout)
        if rc != 0:
            continue
        try:
            v = find_key(parse_json(out), r"arena")
            if v is not None:
                return v
        except ValueError:
            pass
        m = re.search(r"^arena\s+(\d+) B", out, re.M)
        if m:
            return float(m.group(1))
    return None


def bench_ort(model, threads, args):
    cmd = [sys.executable, __file__, "--ort-child", model, "--threads", str(threads),
           "--iters", str(args.iters), "--warmup", str(args.warmup), "--seed", str(args.seed)]
    rc, out, err, rss, _ = run_child(cmd, args.timeout)
    if rc != 0:
        raise RuntimeError(f"onnxruntime child exited {rc}:\n{err[-2000:]}")
    res = json.loads(out.strip().splitlines()[-1])
    res["peak_rss"] = rss
    return res


def ort_child(args):
    """Runs in the child process: times onnxruntime and prints one JSON line."""
    import numpy as np
    import onnxruntime as ort
    model = args.models[0]
    so = ort.SessionOptions()
    so.intra_op_num_threads = int(args.threads)
    so.inter_op_num_threads = 1
    so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    sess = ort.InferenceSession(model, so, providers=["CPUExecutionProvider"])
    rng = np.random.default_rng(args.seed)
    np_types = {"tensor(uint8)": np.uint8, "tensor(float)": np.float32,
                "tensor(float16)": np.float16, "tensor(int64)": np.int64}
    feeds = {}
    for i in sess.get_inputs():
        dt = np_types[i.type]
        if np.issubdtype(dt, np.integer):
            feeds[i.name] = rng.integers(0, 256 if dt == np.uint8 else 8, i.shape, dtype=dt)
        else:
            feeds[i.name] = rng.standard_normal(i.shape).astype(dt)
    for _ in range(args.warmup):
        sess.run(None, feeds)
    ts = []
    for _ in range(args.iters):
        t = time.perf_counter()
        sess.run(None, feeds)
        ts.append((time.perf_counter() - t) * 1e3)
    ts = np.array(ts)
    print(json.dumps({"median_ms": float(np.median(ts)), "min_ms": float(ts.min()),
                      "p90_ms": float(np.percentile(ts, 90)), "version": ort.__version__}))


def combine_rounds(results):
    """Median of the rounds' medians and p90s, minimum of their minima, maximum RSS."""
    out = dict(results[0])
    for key in ("median_ms", "p90_ms"):
        out[key] = statistics.median(x[key] for x in results if x.get(key) is not None)
    out["min_ms"] = min(x["min_ms"] for x in results if x.get("min_ms") is not None)
    out["peak_rss"] = max((x["peak_rss"] for x in results if x.get("peak_rss") is not None), default=None)
    out["round_medians_ms"] = [x["median_ms"] for x in results]
    return out


def plot_rounds(rows, args, ort_version, out):
    """One panel per model: each round's median latency, opvision (solid) and onnxruntime (dashed)
    per thread count, so drift between rounds and the per-round ratio are both visible."""
    import matplotlib
    matplotlib.use("Agg")  # files only, no display
    import matplotlib.pyplot as plt
    models = list(dict.fromkeys(r["model"] for r in rows))
    fig, axes = plt.subplots(1, len(models), figsize=(6 * len(models), 4), squeeze=False)
    for ax, m in zip(axes[0], models):
        for i, r in enumerate(x for x in rows if x["model"] == m):
            color = f"C{i}"
            for peer, style in (("opvision", "-o"), ("onnxruntime", "--s")):
                ys = r[peer]["round_medians_ms"]
                ax.plot(range(1, len(ys) + 1), ys, style, color=color, label=f"{peer} T={r['threads']}")
        ax.set_title(pathlib.Path(m).name)
        ax.set_xlabel("round")
        ax.set_ylabel(f"median latency of {args.iters} runs (ms)")
        ax.set_xticks(range(1, args.rounds + 1))
        ax.set_ylim(bottom=0)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    fig.suptitle(f"opvision cpu vs onnxruntime {ort_version} CPU on {platform.node()} "
                 f"({os.cpu_count()} CPUs), alternating rounds", fontsize=10)
    fig.tight_layout()
    fig.savefig(out, dpi=100)
    plt.close(fig)
    print(f"wrote {out}", file=sys.stderr)


def fmt(v, scale=1.0, prec=2):
    return "-" if v is None else f"{v / scale:.{prec}f}"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("models", nargs="*", help="ONNX models (default: generate the default model)")
    ap.add_argument("--iters", type=int, default=50)
    ap.add_argument("--warmup", type=int, default=10)
    ap.add_argument("--threads", default="1,2", help="comma-separated thread counts")
    ap.add_argument("--rounds", type=int, default=3,
                    help="alternating opvision/onnxruntime rounds per model and thread count")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--opvision", default=None, help="opvision binary (default ./build/opvision)")
    ap.add_argument("--workdir", default=None, help="where a generated model goes")
    ap.add_argument("--timeout", type=float, default=1800, help="seconds per child process")
    ap.add_argument("--json", default=None, help="also write the results as JSON here")
    ap.add_argument("--plot", default=None, help="also draw the latency of every round as a PNG here")
    ap.add_argument("--from-onnx", action="store_true",
                    help="bench the .onnx (compiled in the timed process) instead of a .opv compiled once")
    ap.add_argument("--precision", choices=["fp32", "bf16"], default="fp32",
                    help="opvision's --cpu-precision (bf16: convolutions in bf16 with fp32 accumulation, opt-in; "
                         "onnxruntime stays at its default)")
    ap.add_argument("--ort-child", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.ort_child:
        return ort_child(args)
    if args.iters < 1 or args.warmup < 0:
        sys.exit("bench_cpu: --iters must be >= 1 and --warmup >= 0")
    try:
        thread_list = [int(t) for t in args.threads.split(",") if t.strip()]
    except ValueError:
        sys.exit(f"bench_cpu: --threads must be a comma-separated list of integers, got {args.threads!r}")
    if not thread_list or min(thread_list) < 1:
        sys.exit("bench_cpu: --threads needs positive thread counts")
    if args.rounds < 1:
        sys.exit("bench_cpu: --rounds must be >= 1")
    opv = find_opvision(args.opvision)

    models = list(args.models)
    if not models:
        work = pathlib.Path(args.workdir or tempfile.mkdtemp(prefix="opv_bench_"))
        work.mkdir(parents=True, exist_ok=True)
        path = work / "opvision_default.onnx"
        rc, _, err, _, wall = run_child([opv, "make-model", str(path)], args.timeout)
        if rc != 0:
            sys.exit(f"bench_cpu: make-model failed:\n{err}")
        print(f"generated the default model: {path} ({wall:.1f} s)", file=sys.stderr)
        models = [str(path)]
    for m in models:
        if not pathlib.Path(m).is_file():
            sys.exit(f"bench_cpu: model {m} not found")

    print(f"machine: {platform.node()} {platform.machine()}, {os.cpu_count()} CPUs; "
          f"opvision {opv} (--cpu-precision {args.precision}); warmup {args.warmup}, iters {args.iters}",
          file=sys.stderr)
    rows = []
    aot_dir = None
    for m in models:
        arena = None
        bench_path, compile_rss = m, None
        if not args.from_onnx:
            aot_dir = aot_dir or pathlib.Path(tempfile.mkdtemp(prefix="opv_bench_aot_"))
            bench_path = str(aot_dir / (pathlib.Path(m).stem + ".opv"))
            rc, _, err, compile_rss, wall = run_child([opv, "compile", m, "-o", bench_path, "--target", "cpu"],
                                                     args.timeout)
            if rc != 0:
                sys.exit(f"bench_cpu: compile of {m} failed:\n{err[-2000:]}")
            print(f"compiled {pathlib.Path(m).name} -> {bench_path} ({wall:.1f} s, compile peak RSS "
                  f"{compile_rss / MIB:.1f} MiB)", file=sys.stderr)
        for t in thread_list:
            # Alternate the two peers for --rounds rounds so that drift in the machine's speed
            # (a shared VM) hits both alike; report the median of the per-round medians.
            os_, rs_ = [], []
            for k in range(args.rounds):
                print(f"[{pathlib.Path(m).name} T={t} round {k + 1}/{args.rounds}] opvision, onnxruntime ...",
                      file=sys.stderr, flush=True)
                os_.append(bench_opvision(opv, bench_path, t, args))
                rs_.append(bench_ort(m, t, args))
            o, r = combine_rounds(os_), combine_rounds(rs_)
            if o["arena_bytes"] is None and arena is None:
                arena = arena_from_inspect(opv, bench_path, args)
            o["arena_bytes"] = o["arena_bytes"] if o["arena_bytes"] is not None else arena
            ratios = [a["median_ms"] / b["median_ms"] for a, b in zip(os_, rs_)]
            rows.append({"model": m, "threads": t, "opvision": o, "onnxruntime": r, "compile_rss": compile_rss,
                         "ratio": o["median_ms"] / r["median_ms"], "round_ratios": ratios})

    ort_version = rows[0]["onnxruntime"].get("version", "?") if rows else "?"
    floor = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0
    print(f"onnxruntime {ort_version}; RSS figures below {floor:.0f} MiB are this script's "
          f"own floor (see the header comment)", file=sys.stderr)
    hdr = (f"{'model':28s} {'T':>2s} {'opv med':>8s} {'opv min':>8s} {'opv p90':>8s} "
           f"{'ort med':>8s} {'ort p90':>8s} {'opv/ort':>7s} {'opv RSS':>8s} {'ort RSS':>8s} "
           f"{'arena':>8s}  per-round opv/ort")
    print(hdr)
    print(f"{'':28s} {'':>2s} {'ms':>8s} {'ms':>8s} {'ms':>8s} {'ms':>8s} {'ms':>8s} {'':>7s} "
          f"{'MiB':>8s} {'MiB':>8s} {'MiB':>8s}")
    for r in rows:
        o, x = r["opvision"], r["onnxruntime"]
        print(f"{pathlib.Path(r['model']).name[:28]:28s} {r['threads']:>2d} "
              f"{fmt(o['median_ms']):>8s} {fmt(o['min_ms']):>8s} {fmt(o['p90_ms']):>8s} "
              f"{fmt(x['median_ms']):>8s} {fmt(x['p90_ms']):>8s} {r['ratio']:>7.2f} "
              f"{fmt(o['peak_rss'], MIB, 1):>8s} {fmt(x['peak_rss'], MIB, 1):>8s} "
              f"{fmt(o['arena_bytes'], MIB, 2):>8s}  "
              + " ".join(f"{x:.2f}" for x in r["round_ratios"]))
    if not args.from_onnx:
        for m in models:
            c = next(r["compile_rss"] for r in rows if r["model"] == m)
            print(f"{pathlib.Path(m).name}: opvision ran the .opv compiled ahead of time; the compile's peak "
                  f"RSS was {fmt(c, MIB, 1)} MiB")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"machine": platform.node(), "cpus": os.cpu_count(), "iters": args.iters,
                       "precision": args.precision,
                       "onnxruntime": ort_version, "rss_floor_mib": floor,
                       "warmup": args.warmup, "rows": rows}, f, indent=1)
    if args.plot:
        plot_rounds(rows, args, ort_version, args.plot)


if __name__ == "__main__":
    main()
