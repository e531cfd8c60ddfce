#!/usr/bin/env python3
"""Golden plan dumps (ctest plan_golden): the plan after every plan pass (`opvision compile
--dump-after all`; format: plan::dump_plan_text in src/plan/passes/driver.cpp) for the fixture
models, compared with the files in tests/data/golden/plans/. A pass whose output moves fails
this test with a unified diff of the dump; when the change is intended, regenerate the files and
commit them with the change that moved them:

    python3 tests/plan/golden_plans.py --opvision BUILD/opvision --update

Cases (one file each, named <case>.txt):
  * tiny_<target>: a small model of the project's architecture written by `opvision make-model`
    (fixed seed, 32x64 inputs), every dump point of targets cpu, opencl and reference;
    tiny_opencl_buffer: its final opencl plan with --cl-images buffer (image storage in buffers).
  * t12_fp16_<target>: the shared fixture (../shared/models/opvision_t12_fp16.onnx beside the
    repo), the final plan only (--dump-after memory-plan), targets cpu and opencl; skipped with a
    note when the fixture is absent (the tiny cases still run).
Models are compiled from inside the work directory under a fixed file name, so the plan's
"source" meta (the model path) does not depend on where the test runs.
"""
import argparse
import difflib
import os
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
GOLDEN = os.path.join(REPO, "tests", "data", "golden", "plans")
FIXTURE = os.path.join(REPO, "..", "shared", "models", "opvision_t12_fp16.onnx")

TINY_MODEL = ["--height", "32", "--width", "64", "--widths", "8,16", "--depths", "1,1", "--hidden", "16",
              "--heads", "8,4", "--seed", "1"]
# (case, model file in the work directory, compile options)
TINY_CASES = [
    ("tiny_cpu", "tiny.onnx", ["--target", "cpu", "--dump-after", "all"]),
    ("tiny_reference", "tiny.onnx", ["--target", "reference", "--dump-after", "all"]),
    ("tiny_opencl", "tiny.onnx", ["--target", "opencl", "--dump-after", "all"]),
    ("tiny_opencl_buffer", "tiny.onnx", ["--target", "opencl", "--cl-images", "buffer", "--dump-after", "memory-plan"]),
]
FIXTURE_CASES = [
    ("t12_fp16_cpu", "t12_fp16.onnx", ["--target", "cpu", "--dump-after", "memory-plan"]),
    ("t12_fp16_opencl", "t12_fp16.onnx", ["--target", "opencl", "--dump-after", "memory-plan"]),
]


def sections(text):
    """The dump split at its "== plan after <point> (...) ==" headers: [(point, text)]."""
    out = []
    for line in text.splitlines(True):
        if line.startswith("== plan after "):
            out.append([line[len("== plan after "):].split(" ")[0], ""])
        elif out:
            out[-1][1] += line
    return [tuple(x) for x in out]


def changed_points(want, got):
    """Dump points whose plan differs, in run order (a point present in one dump only counts)."""
    w, g = dict(sections(want)), dict(sections(got))
    order = [p for p, _ in sections(want)] + [p for p, _ in sections(got) if p not in w]
    return [p for p in order if w.get(p) != g.get(p)]


def run(cmd, cwd):
    r = subprocess.run(cmd, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if r.returncode != 0:
        sys.exit("FAIL: %s (exit %d)\n%s" % (" ".join(cmd), r.returncode, r.stderr))
    return r.stdout


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--opvision", required=True, help="the opvision CLI")
    ap.add_argument("--work", default=None, help="scratch directory (default: a folder beside the CLI)")
    ap.add_argument("--update", action="store_true", help="rewrite the golden files instead of comparing")
    args = ap.parse_args()
    opvision = os.path.abspath(args.opvision)
    work = os.path.abspath(args.work or os.path.join(os.path.dirname(opvision), "plan_golden"))
    os.makedirs(work, exist_ok=True)

    run([opvision, "make-model", "tiny.onnx"] + TINY_MODEL, work)
    cases = list(TINY_CASES)
    if os.path.exists(FIXTURE):
        shutil.copyfile(FIXTURE, os.path.join(work, "t12_fp16.onnx"))
        cases += FIXTURE_CASES
    else:
        print("note: %s not found; its cases are skipped" % FIXTURE)

    failed = []
    for case, model, opts in cases:
        got = run([opvision, "compile", model, "-o", case + ".opv"] + opts, work)
        if "== plan after " not in got:
            sys.exit("FAIL: %s: no plan dump in the output of opvision compile" % case)
        path = os.path.join(GOLDEN, case + ".txt")
        if args.update:
            os.makedirs(GOLDEN, exist_ok=True)
            with open(path, "w") as f:
                f.write(got)
            print("wrote %s (%d lines)" % (os.path.relpath(path, REPO), got.count("\n")))
            continue
        if not os.path.exists(path):
            print("FAIL: %s: golden file %s is missing" % (case, os.path.relpath(path, REPO)))
            failed.append(case)
            continue
        with open(path) as f:
            want = f.read()
        if got == want:
            print("ok   %s (%d lines)" % (case, got.count("\n")))
            continue
        failed.append(case)
        diff = list(difflib.unified_diff(want.splitlines(True), got.splitlines(True),
                                         "golden/" + case + ".txt", "now/" + case + ".txt", n=2))
        print("FAIL: %s: the plan dumps differ from %s after: %s (first changed point = the pass that moved "
              "the plan; %d diff lines, first 200):"
              % (case, os.path.relpath(path, REPO), ", ".join(changed_points(want, got)), len(diff)))
        sys.stdout.writelines(diff[:200])
        with open(os.path.join(work, case + ".txt"), "w") as f:
            f.write(got)
    if failed:
        print("\n%d case(s) changed: %s. If the change is intended, regenerate with\n"
              "  python3 tests/plan/golden_plans.py --opvision %s --update\n"
              "and commit the new files with the change." % (len(failed), ", ".join(failed), args.opvision))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
