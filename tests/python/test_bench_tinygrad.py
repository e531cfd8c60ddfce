"""bench/bench_tinygrad.py: opvision's cpu backend against tinygrad's CPU:LLVM device, openpilot's
engine and setting on a PC without an NVIDIA GPU. The bad-argument checks always run; the short
benchmark (which installs tinygrad into a venv under ~/.cache/opvision) runs when
OPV_TEST_TINYGRAD=1 (CI sets it)."""
import json
import os
import pathlib
import subprocess
import sys

import pytest

from opv_util import describe, save_uint8_reference

REPO = pathlib.Path(__file__).resolve().parents[2]
SCRIPT = REPO / "bench" / "bench_tinygrad.py"


def bench(cli, *args, timeout=900):
    return subprocess.run([sys.executable, str(SCRIPT), "--opvision", cli.path, *map(str, args)],
                          capture_output=True, text=True, timeout=timeout)


def test_bad_arguments_are_named(cli, tmp_path):
    p = bench(cli, tmp_path / "absent.onnx")
    assert p.returncode != 0 and "absent.onnx' is not a file" in p.stderr, describe(p)
    model = tmp_path / "m.onnx"
    model.write_bytes(b"")
    p = bench(cli, model, "--ref", tmp_path / "absent.npz")
    assert p.returncode != 0 and "reference" in p.stderr and "absent.npz" in p.stderr, describe(p)
    p = bench(cli, model, "--threads", "1,x")
    assert p.returncode != 0 and "--threads takes comma-separated positive integers" in p.stderr, describe(p)
    p = bench(cli, model, "--threads", "0")
    assert p.returncode != 0 and "positive integers" in p.stderr, describe(p)
    p = bench(cli, model)  # not an ONNX model: opvision's compile names it, before any venv is made
    assert p.returncode != 0 and "opvision compile failed" in p.stderr and "file is empty" in p.stderr, describe(p)


@pytest.mark.skipif(os.environ.get("OPV_TEST_TINYGRAD") != "1",
                    reason="set OPV_TEST_TINYGRAD=1 to run tinygrad (installs it into a venv under ~/.cache/opvision)")
def test_short_run_times_both_and_checks_tinygrad(cli, tmp_path):
    """One round of a small generated model at one thread: both peers timed, opvision verified and
    tinygrad's JIT outputs held against onnxruntime's."""
    model = tmp_path / "small.onnx"
    p = cli.run("make-model", model, "--fp16", "--height", "32", "--width", "64", "--widths", "16,32,48,64",
                "--depths", "1,1,1,1", "--hidden", "64", "--heads", "4,8")
    assert p.returncode == 0, describe(p)
    ref = tmp_path / "small_ref.npz"
    save_uint8_reference(model, ref, 3)
    out = tmp_path / "r.json"
    venv = os.environ.get("OPV_TINYGRAD_VENV", str(pathlib.Path.home() / ".cache" / "opvision" / "tinygrad-venv"))
    p = bench(cli, model, "--threads", "1", "--rounds", "1", "--iters", "2", "--warmup", "0",
              "--venv", venv, "--json", out, timeout=1800)
    assert p.returncode == 0, describe(p)
    assert "against the reference: rel_l2=" in p.stdout, p.stdout  # opvision verify's line
    r = json.loads(out.read_text())["threads"]["1"]
    assert len(r["opvision_ms"]) == 1 and r["opvision_ms"][0] > 0 and r["tinygrad_ms"][0] > 0, r
    assert "DEV=CPU:LLVM THREADS=0" in r["tinygrad"], r
    assert r["tinygrad_check"]["outputs"]["rel_l2"] < 1e-2, r
    assert "threads 1: opvision median" in p.stdout and "ratio" in p.stdout, p.stdout
