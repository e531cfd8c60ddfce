#!/usr/bin/env python3
"""Summarises an Nsight Compute raw CSV (ncu --csv --page raw) of one inference's kernels.

  ncu --clock-control none --cache-control none -k regex:opv_ --launch-skip N --launch-count M \
      --section SpeedOfLight --section LaunchStats --section Occupancy --section WarpStateStats \
      --csv --page raw opvision bench A.opv --backend cuda --warmup 1 --iters 1 > ncu.csv
  python3 bench/ncu_summary.py ncu.csv

Prints one line per kernel launch in launch order (duration, grid x block, registers, achieved
occupancy, compute / memory throughput as % of peak, the three largest warp-stall reasons in
cycles per issued instruction) and then the launches grouped by kernel name with their total.
Metric names differ between ncu versions, so columns are found by pattern; a missing one prints '-'.

  ncu ... --set full -o REP ...; ncu -i REP.ncu-rep --page source --csv --print-source sass > sass.csv
  python3 bench/ncu_summary.py --sass sass.csv

With --sass: one kernel's SASS source page instead. Prints its executed warp instructions and
warp-stall samples by opcode (the largest sample shares first, each with its three largest stall
reasons), and split into three regions: before the first HMMA, from it to the last HMMA (the main
loop of a tensor-core kernel), after it (the epilogue).
"""
import argparse
import csv
import re
import sys
from collections import OrderedDict


def num(s):
    try:
        return float(str(s).replace(",", ""))
    except ValueError:
        return None


def pick(row, *patterns):
    """The first column (in the given pattern order) whose name matches and holds a number."""
    for pat in patterns:
        rx = re.compile(pat)
        for k, v in row.items():
            if rx.fullmatch(k) and num(v) is not None:
                return num(v)
    return None


def fmt(v, spec):
    width = int(re.match(r"\d*", spec).group() or 0)
    return "-".rjust(width) if v is None else format(v, spec)


def sass_summary(path):
    """The instruction mix and stall samples of an `ncu --page source --print-source sass` CSV."""
    with open(path, newline="") as f:
        rows = list(csv.reader(f))
    head = next((i for i, r in enumerate(rows) if r and r[0] == "Address"), None)
    if head is None:
        sys.exit(f"{path}: no SASS source page header (a row starting with \"Address\")")
    hdr = rows[head]
    ix = {h: i for i, h in enumerate(hdr)}
    for col in ("Source", "Instructions Executed", "Warp Stall Sampling (All Samples)"):
        if col not in ix:
            sys.exit(f"{path}: no column '{col}'")
    stall_cols = [h for h in hdr if h.startswith("stall_") and "Not Issued" not in h]
    ops = []  # (opcode, executed, samples, {stall: samples})
    for r in rows[head + 1:]:
        if len(r) < len(hdr):
            continue
        op = re.sub(r"^@!?U?P\w+\s+", "", r[ix["Source"]].strip()).split(" ")[0].split(".")[0]
        ops.append((op, num(r[ix["Instructions Executed"]]) or 0.0,
                    num(r[ix["Warp Stall Sampling (All Samples)"]]) or 0.0,
                    {h[6:]: num(r[ix[h]]) or 0.0 for h in stall_cols}))
    ex_total = sum(o[1] for o in ops) or 1.0
    s_total = sum(o[2] for o in ops) or 1.0
    by_ex, by_s, by_stall = {}, {}, {}
    for op, e, smp, st in ops:
        by_ex[op] = by_ex.get(op, 0.0) + e
        by_s[op] = by_s.get(op, 0.0) + smp
        d = by_stall.setdefault(op, {})
        for k, v in st.items():
            d[k] = d.get(k, 0.0) + v
    print(f"{path}: {ex_total:.0f} warp instructions executed, {s_total:.0f} stall samples")
    print(f"{'opcode':<10} {'exec %':>7} {'samples %':>9}  top stalls (samples)")
    for op in sorted(by_s, key=lambda o: -by_s[o])[:20]:
        top = ", ".join(f"{k} {v:.0f}" for k, v in sorted(by_stall[op].items(), key=lambda kv: -kv[1])[:3] if v)
        print(f"{op:<10} {100 * by_ex[op] / ex_total:7.1f} {100 * by_s[op] / s_total:9.1f}  {top}")
    hmma = [i for i, o in enumerate(ops) if o[0] == "HMMA"]
    if hmma:
        for name, a, b in (("before the first HMMA", 0, hmma[0]), ("first to last HMMA", hmma[0], hmma[-1] + 1),
                           ("after the last HMMA", hmma[-1] + 1, len(ops))):
            part = ops[a:b]
            mix = {}
            for o in part:
                mix[o[0]] = mix.get(o[0], 0.0) + o[1]
            top = ", ".join(f"{k} {100 * v / ex_total:.1f}" for k, v in sorted(mix.items(), key=lambda kv: -kv[1])[:6])
            print(f"{name:<22} exec {100 * sum(o[1] for o in part) / ex_total:5.1f} %  samples "
                  f"{100 * sum(o[2] for o in part) / s_total:5.1f} %  ({top})")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("csv", help="ncu --csv --page raw output (text before the header is skipped)")
    ap.add_argument("--sass", action="store_true", help="CSV is one kernel's SASS source page (see above)")
    args = ap.parse_args()
    if args.sass:
        sass_summary(args.csv)
        return
    with open(args.csv, newline="") as f:
        lines = f.read().splitlines()
    start = next((i for i, l in enumerate(lines) if l.startswith('"ID"')), None)
    if start is None:
        sys.exit(f"{args.csv}: no ncu raw CSV header (a line starting with \"ID\")")
    rows = list(csv.DictReader(lines[start:]))
    if rows and num(rows[0].get("ID")) is None:  # the units row
        units, rows = rows[0], rows[1:]
    else:
        units = {}
    if not rows:
        sys.exit(f"{args.csv}: no kernel rows")
    dur_col = next((k for k in rows[0] if k == "gpu__time_duration.sum"), None)
    scale = 1.0  # to microseconds
    if dur_col:
        u = units.get(dur_col, "nsecond")
        scale = {"nsecond": 1e-3, "usecond": 1.0, "msecond": 1e3, "second": 1e6}.get(u, 1e-3)
    stall_rx = re.compile(r"smsp__average_warp(s|_latency)_issue_stalled_(\w+?)_per_(issue_active|warp_active)\.ratio")
    print(f"{'#':>3} {'kernel':<40} {'us':>7} {'grid':>6} {'blk':>4} {'reg':>4} {'occ%':>5} {'sm%':>5} {'mem%':>5}  top stalls (cycles/issue)")
    groups = OrderedDict()
    total = 0.0
    for i, r in enumerate(rows):
        name = re.sub(r"\(.*", "", r.get("Kernel Name", "?"))
        us = num(r.get(dur_col)) * scale if dur_col and num(r.get(dur_col)) is not None else None
        grid = pick(r, r"launch__grid_size")
        blk = pick(r, r"launch__block_size")
        reg = pick(r, r"launch__registers_per_thread")
        occ = pick(r, r"sm__warps_active\.avg\.pct_of_peak_sustained_active")
        smp = pick(r, r"sm__throughput\.avg\.pct_of_peak_sustained_elapsed")
        mem = pick(r, r"gpu__compute_memory_throughput\.avg\.pct_of_peak_sustained_elapsed",
                   r"memory__throughput\.avg\.pct_of_peak_sustained_elapsed")
        stalls = []
        for k, v in r.items():
            m = stall_rx.fullmatch(k)
            if m and num(v) is not None and m.group(2) not in ("not_issued",):
                stalls.append((num(v), m.group(2)))
        stalls.sort(reverse=True)
        top = ", ".join(f"{n} {v:.1f}" for v, n in stalls[:3])
        print(f"{i:>3} {name[:40]:<40} {fmt(us, '7.2f')} {fmt(grid, '6.0f')} {fmt(blk, '4.0f')} {fmt(reg, '4.0f')} "
              f"{fmt(occ, '5.1f')} {fmt(smp, '5.1f')} {fmt(mem, '5.1f')}  {top}")
        g = groups.setdefault(name, [0, 0.0])
        g[0] += 1
        g[1] += us or 0.0
        total += us or 0.0
    print(f"\nper kernel name (ncu's durations: kernels serialised, clocks as found)")
    for name, (n, us) in sorted(groups.items(), key=lambda kv: -kv[1][1]):
        print(f"  {name[:48]:<48} {n:>3} x  {us:8.2f} us  {100 * us / total if total else 0:5.1f} %")
    print(f"  {'total':<48} {len(rows):>3}    {total:8.2f} us")


if __name__ == "__main__":
    main()
