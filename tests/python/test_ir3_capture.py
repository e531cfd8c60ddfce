"""Real Adreno 630 machine code on the simulated a630: the committed captures (tests/data/ir3,
made by tools/ir3_capture.py from tinygrad + Mesa's ir3 compiler) replayed kernel by kernel by
`opvision ir3 replay` and compared with onnxruntime at the fp16 tolerance of DESIGN.md.

The capture tool itself needs its pinned PyPI packages (~170 MB, created in a venv on first
use); its test runs when OPV_TEST_CAPTURE=1 (CI sets it)."""
import json
import os
import pathlib
import shutil
import subprocess
import sys

import numpy as np
import pytest

from opv_util import assert_error, describe, ort_run, save_uint8_reference

REPO = pathlib.Path(__file__).resolve().parents[2]
DATA = REPO / "tests" / "data" / "ir3"
SMALL_ARGS = ["--fp16", "--height", "32", "--width", "64", "--widths", "16,32,48,64", "--depths", "1,1,1,1",
              "--hidden", "64", "--heads", "4,8"]


def reference(model, path, seed):
    save_uint8_reference(model, path, seed)
    return path


def replay_ok(cli, capture, model, ref, *extra, timeout=600):
    p = cli.run("ir3", "replay", capture, "--model", model, "--inputs", ref, "--ref", ref, *extra, timeout=timeout)
    assert p.returncode == 0, describe(p)
    line = [l for l in p.stdout.splitlines() if l.startswith("rel_l2=")]
    assert line, describe(p)
    return line[0]


@pytest.fixture(scope="module")
def small_model(cli, tmp_path_factory):
    root = tmp_path_factory.mktemp("ir3")
    model = root / "ir3_small_fp16.onnx"
    p = cli.run("make-model", model, *SMALL_ARGS)
    assert p.returncode == 0, describe(p)
    return model, reference(model, root / "ref.npz", 7)


def test_small_capture_replay_matches_onnxruntime(cli, small_model):
    model, ref = small_model
    print(replay_ok(cli, DATA / "small_fp16", model, ref))


def test_fixture_capture_replay_matches_onnxruntime(cli, fixture_paths):
    model, ref = fixture_paths
    print(replay_ok(cli, DATA / "t12_fp16", model, ref))


@pytest.mark.skipif(os.environ.get("OPV_TEST_SLOW") != "1", reason="~3 min on the simulator: set OPV_TEST_SLOW=1")
def test_openpilot_settings_capture_replay_matches_onnxruntime(cli, fixture_paths):
    # IMAGE=2 NOLOCALS=1, as openpilot compiles its model: other kernels (weights read as
    # texels of 4 output channels, no local-memory reductions, larger grids)
    model, ref = fixture_paths
    print(replay_ok(cli, DATA / "t12_fp16_openpilot", model, ref, timeout=1200))


def test_replay_writes_outputs_and_random_inputs(cli, small_model, tmp_path):
    model, _ = small_model
    out = tmp_path / "out.npz"
    p = cli.run("ir3", "replay", DATA / "small_fp16", "--model", model, "--seed", "3", "-o", out, "--quiet")
    assert p.returncode == 0, describe(p)
    z = np.load(out)
    assert set(z.files) == {"img", "big_img", "outputs"}
    # the outputs follow the inputs: onnxruntime on the same random inputs agrees
    want = ort_run(str(model), {"img": z["img"], "big_img": z["big_img"]})["outputs"]
    rel = np.linalg.norm(z["outputs"] - want) / np.linalg.norm(want)
    assert rel < 1e-2, rel


def test_replay_refuses_bad_input(cli, small_model, tmp_path):
    model, ref = small_model
    # weights of another model: refused by their SHA-256, not silently used
    other = tmp_path / "other.onnx"
    assert cli.run("make-model", other, *SMALL_ARGS, "--seed", "1").returncode == 0
    assert_error(cli.run("ir3", "replay", DATA / "small_fp16", "--model", other, "--quiet"), "sha256")
    # a tampered capture: buffer index out of range, kernel image changed
    bad = tmp_path / "bad"
    shutil.copytree(DATA / "small_fp16", bad)
    doc = json.loads((bad / "capture.json").read_text())
    doc["schedule"][0]["args"][0]["buffer"] = 10 ** 6
    (bad / "capture.json").write_text(json.dumps(doc))
    assert_error(cli.run("ir3", "replay", bad, "--model", model, "--quiet"), "buffer")
    shutil.rmtree(bad)
    shutil.copytree(DATA / "small_fp16", bad)
    k = sorted((bad / "kernels").iterdir())[0]
    b = bytearray(k.read_bytes())
    b[0] ^= 1
    k.write_bytes(bytes(b))
    assert_error(cli.run("ir3", "replay", bad, "--model", model, "--quiet"), "sha256")
    # not a capture at all; missing input entry
    assert_error(cli.run("ir3", "replay", tmp_path, "--model", model), "capture")
    np.savez(tmp_path / "partial.npz", img=np.load(ref)["img"])
    assert_error(cli.run("ir3", "replay", DATA / "small_fp16", "--model", model, "--inputs", tmp_path / "partial.npz"),
                 "big_img")


@pytest.mark.skipif(os.environ.get("OPV_TEST_CAPTURE") != "1",
                    reason="set OPV_TEST_CAPTURE=1 to run the capture tool (installs tinygrad + tinymesa in a venv)")
def test_capture_tool_on_generated_model(cli, small_model, tmp_path):
    model, ref = small_model
    out = tmp_path / "cap"
    venv = os.environ.get("OPV_CAPTURE_VENV", str(pathlib.Path.home() / ".cache" / "opvision" / "ir3-capture-venv"))
    p = subprocess.run([sys.executable, str(REPO / "tools" / "ir3_capture.py"), str(model), str(out), "--venv", venv],
                       capture_output=True, text=True, timeout=1800)
    assert p.returncode == 0, p.stderr[-4000:]
    doc = json.loads((out / "capture.json").read_text())
    assert doc["format"] == "opvision-ir3-capture" and doc["schedule"] and doc["kernels"]
    # the committed capture was made by the same tool from the same (deterministic) model
    committed = json.loads((DATA / "small_fp16" / "capture.json").read_text())
    assert [k["sha256"] for k in doc["kernels"]] == [k["sha256"] for k in committed["kernels"]]
    print(replay_ok(cli, out, model, ref))


def test_opt_small_capture_validates_and_still_matches_onnxruntime(cli, small_model, tmp_path):
    """`ir3 opt` on real kernels: every rewrite validated on the simulator, more mad.f32 in (rptN)
    groups, and the rewritten capture still matches onnxruntime end to end."""
    model, ref = small_model
    out = tmp_path / "opt"
    p = cli.run("ir3", "opt", DATA / "small_fp16", "-o", out, "--validate", "2", "--json", timeout=900)
    assert p.returncode == 0, describe(p)
    doc = json.loads(p.stdout)
    assert all(k["failed_pass"] == "" for k in doc["kernels"]), [k for k in doc["kernels"] if k["failed_pass"]]
    per = doc["per_inference"]
    assert per["changed"] > 0 and per["validated"] == per["kernels"]
    assert per["after"]["mad_f32_packed"] > per["before"]["mad_f32_packed"]
    assert per["after"]["instructions"] < per["before"]["instructions"]
    # serial mad.f32 (no independent mad.f32 in their block) are never in a group, and no pass
    # reassociates, so none makes more of them; waves: Mesa's a630 occupancy of the footprint
    for k in doc["kernels"]:
        for side in ("before", "after"):
            s = k[side]
            assert 0 <= s["mad_f32_serial"] and s["mad_f32_packed"] + s["mad_f32_serial"] <= s["mad_f32"], k
            vec4 = s["max_reg"] + 1 + (s["max_half_reg"] + 2) // 2
            assert s["waves"] == (min(16, 96 // vec4 * 2) if vec4 else 16), k
        assert k["after"]["mad_f32_serial"] <= k["before"]["mad_f32_serial"], k
    print(per)
    print(replay_ok(cli, out, model, ref))
    # each pass followed by legalize also validates; without legalize the delays are wrong, which
    # the hazard check refuses (the kernel keeps its code and the report says why)
    for name in ("fold", "cp", "coalesce", "reassoc", "dce", "accum", "relocate", "rpt", "rename", "guards", "hoist", "tidy", "legalize"):
        passes = name if name == "legalize" else f"{name},legalize"
        p = cli.run("ir3", "opt", DATA / "small_fp16", "-o", tmp_path / name, "--pass", passes, "--validate", "1")
        assert p.returncode == 0 and " 0 kept their original code" in p.stdout, describe(p)
    p = cli.run("ir3", "opt", DATA / "small_fp16", "-o", tmp_path / "raw", "--pass", "rpt", "--validate", "1", "--report")
    assert p.returncode == 0 and "kept original: rpt: hazard:" in p.stdout, describe(p)
    assert_error(cli.run("ir3", "opt", DATA / "small_fp16", "-o", tmp_path / "x", "--pass", "bogus"), "bogus")
    # --kernels: only the named kernels are rewritten, the others keep their code
    p = cli.run("ir3", "opt", DATA / "small_fp16", "-o", tmp_path / "one", "--kernels", "0", "--validate", "1", "--json")
    assert p.returncode == 0, describe(p)
    ks = json.loads(p.stdout)["kernels"]
    assert [k["changed"] for k in ks[1:]] == [False] * (len(ks) - 1) and ks[0]["changed"], ks
    kept = sorted((tmp_path / "one" / "kernels").iterdir())[1:]
    assert all(k.read_bytes() == (DATA / "small_fp16" / "kernels" / k.name).read_bytes() for k in kept)
    assert_error(cli.run("ir3", "opt", DATA / "small_fp16", "-o", tmp_path / "x", "--kernels", "nosuch"), "nosuch")
    # --pack-tolerance: a wider near-tie margin never keeps fewer mad.f32 packed, and still validates
    p = cli.run("ir3", "opt", DATA / "small_fp16", "-o", tmp_path / "wide", "--pack-tolerance", "100", "--validate", "1",
                "--json", timeout=900)
    assert p.returncode == 0, describe(p)
    wide = json.loads(p.stdout)["per_inference"]
    assert wide["validated"] == wide["kernels"] and wide["after"]["mad_f32_packed"] >= per["after"]["mad_f32_packed"], wide
    for bad in ("-1", "101", "abc", ""):
        assert_error(cli.run("ir3", "opt", DATA / "small_fp16", "-o", tmp_path / "x", "--pack-tolerance", bad), "--pack-tolerance")


def test_opt_single_program_forms(cli, tmp_path):
    """A raw image, assembler text and a Qualcomm program binary go through `ir3 opt` and come
    out in their own form, hazard-free."""
    k = sorted((DATA / "small_fp16" / "kernels").iterdir())[-1]
    out = tmp_path / "k.bin"
    p = cli.run("ir3", "opt", k, "-o", out, "--report")
    assert p.returncode == 0, describe(p)
    assert "before" in p.stdout and "after" in p.stdout
    assert out.stat().st_size % 128 == 0  # whole 16-instruction units
    assert cli.run("ir3", "check", out).returncode == 0
    s = tmp_path / "k.s"
    assert cli.run("ir3", "dis", k).returncode == 0
    s.write_text(cli.run("ir3", "dis", k).stdout)
    p = cli.run("ir3", "opt", s, "-o", tmp_path / "o.s")
    assert p.returncode == 0, describe(p)
    assert "mad" in (tmp_path / "o.s").read_text() or "end" in (tmp_path / "o.s").read_text()


def test_run_verify_bench_with_backend_qcom(cli, small_model, tmp_path):
    """`--backend qcom` on run/verify/bench: MODEL is a capture directory, submitted as one PM4
    stream per inference to the simulated a630 (no /dev/kgsl-3d0 here)."""
    model, ref = small_model
    cap = DATA / "small_fp16"
    p = cli.run("verify", cap, "--backend", "qcom", "--model", model, "--ref", ref, "--device", "sim")
    assert p.returncode == 0 and p.stdout.startswith("rel_l2="), describe(p)
    out = tmp_path / "o.npz"
    p = cli.run("run", cap, "--backend", "qcom", "--model", model, "--inputs", ref, "-o", out)
    assert p.returncode == 0 and "one submission" in p.stderr, describe(p)
    want = ort_run(str(model), {k: np.load(ref)[k] for k in ("img", "big_img")})["outputs"]
    got = np.load(out)["outputs"]
    assert np.linalg.norm(got - want) / np.linalg.norm(want) < 1e-2
    p = cli.run("bench", cap, "--backend", "qcom", "--model", model, "--warmup", "0", "--iters", "2", "--json")
    assert p.returncode == 0, describe(p)
    doc = json.loads(p.stdout)
    assert doc["submissions"] == 1 and doc["dispatches"] == 44 and doc["barriers"] < doc["dispatches"]
    assert_error(cli.run("run", model, "--backend", "qcom"), "capture directory")
    assert_error(cli.run("run", cap, "--backend", "qcom", "--model", model, "--device", "gpu"), "sim or kgsl")


def test_inspect_counts_the_capture_and_its_command_stream(cli):
    p = cli.run("inspect", DATA / "small_fp16")
    assert p.returncode == 0, describe(p)
    lines = [l for l in p.stdout.splitlines() if l.startswith("qcom stream per inference")]
    assert len(lines) == 2, p.stdout
    deps, every = lines

    def count(line, what):
        import re
        return int(re.search(r"(\d+) " + what, line).group(1))
    assert count(deps, "submission") == 1 and count(deps, "dispatches") == 44
    assert count(deps, "barriers") < count(every, "barriers") and count(deps, "cache flushes") == 0
    assert count(every, "cache flushes") == 44
