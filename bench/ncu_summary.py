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


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("csv", help="ncu --csv --page raw output (text before the header is skipped)")
    args = ap.parse_args()
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
