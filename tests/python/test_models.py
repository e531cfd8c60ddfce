"""Whole-model tests through the CLI: generated openpilot-architecture models (make-model) and
the shared fixture against onnxruntime on every backend, the artifact checks of DESIGN.md
(repeat runs and reloads bit-identical, inputs move outputs), and `opvision demo`."""
import collections
import os
import time

import numpy as np
import onnx
import pytest

from opv_util import assert_error, assert_verify_ok, describe, load_npz, ort_run

BACKENDS = ("reference", "cpu")
SMALL_OPTS = {"--height": "64", "--width": "128", "--widths": "16,32,48,64", "--depths": "1,1,2,1",
              "--hidden": "64"}
SMALL = [x for kv in SMALL_OPTS.items() for x in kv]


def small_with(*overrides):
    """SMALL with some options replaced (each option may be given only once)."""
    opts = dict(SMALL_OPTS)
    for i in range(0, len(overrides), 2):
        opts[overrides[i]] = overrides[i + 1]
    return [x for kv in opts.items() for x in kv]
# Heads as in openpilot but with head 12 duplicating head 11 (the make-model default list).
DEFAULT_HEADS = [12, 12, 6, 6, 32, 8, 8, 2, 2, 8, 8, 4, 4, 4, 4]


def random_feeds(model_path, seed):
    m = onnx.load(str(model_path), load_external_data=False)
    rng = np.random.default_rng(seed)
    feeds = {}
    for i in m.graph.input:
        dims = [d.dim_value for d in i.type.tensor_type.shape.dim]
        assert i.type.tensor_type.elem_type == onnx.TensorProto.UINT8, i.name
        feeds[i.name] = rng.integers(0, 256, dims, dtype=np.uint8)
    return feeds


def make_reference(model_path, seed, out_path):
    feeds = random_feeds(model_path, seed)
    outs = ort_run(str(model_path), feeds)
    np.savez(out_path, **feeds, **outs)
    return feeds, outs


@pytest.fixture(scope="module")
def generated(cli, tmp_path_factory):
    """make-model variants (fp32 and fp16) with their onnxruntime references."""
    root = tmp_path_factory.mktemp("models")
    made = {}
    for tag, extra in (("small_fp32", []), ("small_fp16", ["--fp16", "--seed", "5"]),
                       ("small_opset18", ["--opset", "18", "--seed", "9"])):
        path = root / f"{tag}.onnx"
        p = cli.run("make-model", path, *SMALL, *extra)
        assert p.returncode == 0, describe(p)
        ref = root / f"{tag}_ref.npz"
        make_reference(path, 1, ref)
        made[tag] = (path, ref)
    return made


# ------------------------------------------------------------------------- make-model itself
def test_make_model_structure(generated):
    path, ref = generated["small_fp32"]
    m = onnx.load(str(path))
    onnx.checker.check_model(m, full_check=True)
    assert [i.name for i in m.graph.input] == ["img", "big_img"]
    for i in m.graph.input:
        assert [d.dim_value for d in i.type.tensor_type.shape.dim] == [1, 12, 64, 128]
    assert [o.name for o in m.graph.output] == ["outputs"]
    ops = collections.Counter(n.op_type for n in m.graph.node)
    # 5 BatchNorms (sum of depths), GELU in erf form, a squeeze-excite, 15 3-layer heads + 2 hidden
    assert ops["BatchNormalization"] == 5
    depths, stages = [1, 1, 2, 1], 4
    # stem 3, one per block, one per patch embedding, final conv, summarise
    assert ops["Erf"] == 3 + sum(depths) + (stages - 1) + 2
    assert ops["Gemm"] == 2 + 3 * len(DEFAULT_HEADS)
    assert ops["Sigmoid"] == 1 and ops["ReduceMean"] == 1
    inits = {t.name for t in m.graph.initializer}
    assert "heads.12.l1.weight" not in inits  # the duplicate head reuses head 11's weights
    out = load_npz(ref)["outputs"]
    assert out.shape == (1, 64 + sum(DEFAULT_HEADS)) and out.dtype == np.float32
    assert np.all(np.isfinite(out)) and np.abs(out).max() > 1e-3


def test_make_model_duplicate_head_outputs_identical(generated):
    out = load_npz(generated["small_fp32"][1])["outputs"][0]
    starts = np.cumsum([64] + DEFAULT_HEADS)  # starts[k] = first column of head k
    h11, h12, h13 = (out[starts[k]:starts[k + 1]] for k in (11, 12, 13))
    # same weights, same input; onnxruntime's Gemm may round differently per buffer alignment
    np.testing.assert_allclose(h11, h12, rtol=1e-5, atol=1e-6)
    assert len(h11) == len(h13) and not np.array_equal(h11, h13)  # other heads differ


def test_make_model_fp16_types(generated):
    m = onnx.load(str(generated["small_fp16"][0]))
    types = {t.data_type for t in m.graph.initializer}
    assert types == {onnx.TensorProto.FLOAT16}
    assert m.graph.output[0].type.tensor_type.elem_type == onnx.TensorProto.FLOAT


def test_make_model_deterministic_and_seeded(cli, tmp_path):
    a, b, c = (tmp_path / f"{n}.onnx" for n in "abc")
    for path, seed in ((a, 3), (b, 3), (c, 4)):
        p = cli.run("make-model", path, *SMALL, "--seed", seed)
        assert p.returncode == 0, describe(p)
    assert a.read_bytes() == b.read_bytes()
    assert a.read_bytes() != c.read_bytes()


@pytest.mark.parametrize("args,needle", [
    (["--height", "100"], "--height"),
    (["--width", "0"], "--width"),
    (["--widths", "16,32", "--depths", "1"], "--depths"),
    (["--widths", "16,-4,8,8"], "--widths"),
    (["--heads", "4,0"], "--heads"),
    (["--opset", "3"], "--opset"),
])
def test_make_model_rejects_bad_sizes(cli, tmp_path, args, needle):
    p = cli.run("make-model", tmp_path / "x.onnx", *small_with(*args))
    assert_error(p, needle)
    assert not (tmp_path / "x.onnx").exists()


# --------------------------------------------------------------- (a) generated models verify
@pytest.mark.parametrize("backend", BACKENDS + ("opencl",))
@pytest.mark.parametrize("tag", ["small_fp32", "small_fp16", "small_opset18"])
def test_generated_model_verifies(cli, generated, tag, backend):
    if backend == "opencl" and not cli.has_opencl():
        pytest.skip("no OpenCL device")
    path, ref = generated[tag]
    assert_verify_ok(cli, path, ref, backend)


def test_generated_model_threads(cli, generated):
    path, ref = generated["small_fp32"]
    for t in ("1", "2"):
        assert_verify_ok(cli, path, ref, "cpu", "--threads", t)




def test_fixture_stored_reference_cpu(cli, fixture_paths):
    assert_verify_ok(cli, *fixture_paths, "cpu")


def test_fixture_cpu_bf16(cli, fixture_paths):
    """--cpu-precision bf16 (opt-in): verify against onnxruntime within the bf16 tolerance; inspect
    says which convolutions run in bf16 (none where the CPU has no native bf16 kernel)."""
    assert_verify_ok(cli, *fixture_paths, "cpu", "--cpu-precision", "bf16")
    p = cli.run("inspect", fixture_paths[0], "--cpu-precision", "bf16")
    assert p.returncode == 0, describe(p)
    assert "convolutions in bf16" in p.stdout, p.stdout
    assert_error(cli.run("run", fixture_paths[0], "--cpu-precision", "fp8"), "--cpu-precision must be fp32 or bf16")


def test_fixture_live_onnxruntime_cpu(cli, fixture_paths, tmp_path):
    ref = tmp_path / "live_ref.npz"
    make_reference(fixture_paths[0], 11, ref)
    assert_verify_ok(cli, fixture_paths[0], ref, "cpu")


def test_fixture_reference_backend(cli, fixture_paths):
    t0 = time.time()
    assert_verify_ok(cli, *fixture_paths, "reference", timeout=600)
    elapsed = time.time() - t0
    # Not a failure, but worth knowing when the oracle gets too slow for the suite.
    if elapsed > 60:
        print(f"note: reference backend took {elapsed:.1f} s on the fixture")


# --------------------------------------------------------------------- (c) artifact checks
@pytest.fixture(scope="module")
def compiled(cli, generated, tmp_path_factory):
    root = tmp_path_factory.mktemp("artifact")
    path, _ = generated["small_fp32"]
    opv = root / "small.opv"
    p = cli.run("compile", path, "-o", opv, "--target", "cpu")
    assert p.returncode == 0, describe(p)
    assert opv.stat().st_size > 0
    return path, opv, root


def _run_outputs(cli, model, out, *args):
    p = cli.run("run", model, "-o", out, *args)
    assert p.returncode == 0, describe(p)
    z = load_npz(out)
    assert "outputs" in z, f"run -o wrote {sorted(z)}"
    return z["outputs"]


def test_artifact_repeat_runs_bit_identical(cli, compiled):
    _, opv, root = compiled
    a = _run_outputs(cli, opv, root / "r1.npz", "--seed", "7", "--backend", "cpu")
    b = _run_outputs(cli, opv, root / "r2.npz", "--seed", "7", "--backend", "cpu")
    assert a.dtype == np.float32 and np.all(np.isfinite(a))
    assert a.tobytes() == b.tobytes()


def test_artifact_reload_equals_onnx_run(cli, compiled):
    onnx_path, opv, root = compiled
    a = _run_outputs(cli, onnx_path, root / "from_onnx.npz", "--seed", "7", "--backend", "cpu")
    b = _run_outputs(cli, opv, root / "from_opv.npz", "--seed", "7", "--backend", "cpu")
    assert a.tobytes() == b.tobytes()


def test_artifact_seed_changes_outputs(cli, compiled):
    _, opv, root = compiled
    a = _run_outputs(cli, opv, root / "s7.npz", "--seed", "7")
    b = _run_outputs(cli, opv, root / "s8.npz", "--seed", "8")
    assert not np.array_equal(a, b)


def test_artifact_run_with_npz_inputs_matches_onnxruntime(cli, compiled, generated):
    _, opv, root = compiled
    _, ref = generated["small_fp32"]
    z = load_npz(ref)
    inputs = root / "inputs.npz"
    np.savez(inputs, img=z["img"], big_img=z["big_img"])
    out = _run_outputs(cli, opv, root / "npz_out.npz", "--inputs", inputs)
    rel = np.linalg.norm(out - z["outputs"]) / np.linalg.norm(z["outputs"])
    assert rel < 1e-4, rel


def test_artifact_target_mismatch(cli, compiled):
    _, opv, _ = compiled
    assert_error(cli.run("run", opv, "--seed", "1", "--backend", "reference"), "cpu")


def test_inspect_and_bench(cli, compiled):
    _, opv, _ = compiled
    p = cli.run("inspect", opv)
    assert p.returncode == 0, describe(p)
    assert "Conv" in p.stdout or "conv" in p.stdout, describe(p)
    p = cli.run("bench", opv, "--warmup", "1", "--iters", "3", "--json")
    assert p.returncode == 0, describe(p)
    import json
    obj = json.loads(p.stdout)
    assert isinstance(obj, dict) and obj, p.stdout


# ---------------------------------------------------------------------------------- (d) demo
def test_demo_small_model(cli, generated, tmp_path):
    path, _ = generated["small_fp32"]
    p = cli.run("demo", path, "--iters", "3", "--workdir", tmp_path, timeout=600)
    assert p.returncode == 0, describe(p)
    assert "PASS" in p.stdout + p.stderr, describe(p)


def test_help_and_version(cli):
    for args in (["--help"], ["--version"]):
        p = cli.run(*args)
        assert p.returncode == 0, describe(p)
        assert p.stdout.strip(), describe(p)
    for sub in ("demo", "make-model", "compile", "run", "bench", "inspect", "verify"):
        p = cli.run(sub, "--help")
        assert p.returncode == 0, describe(p)
        assert "--" in p.stdout, describe(p)


def test_unknown_subcommand_and_option(cli, tmp_path):
    assert_error(cli.run("frobnicate"), "frobnicate")
    assert_error(cli.run("make-model", tmp_path / "x.onnx", "--no-such-flag"), "--no-such-flag")


@pytest.mark.skipif(os.environ.get("OPV_SLOW_TESTS") != "1",
                    reason="default-size demo is slow; set OPV_SLOW_TESTS=1")
def test_demo_default_model(cli, tmp_path):
    p = cli.run("demo", "--iters", "3", "--workdir", tmp_path, timeout=900)
    assert p.returncode == 0, describe(p)


def test_bench_cpu_script(cli, generated, tmp_path):
    """bench/bench_cpu.py runs both sides, writes one row per thread count and plots the rounds."""
    import json
    import subprocess
    import sys
    from conftest import REPO
    path, _ = generated["small_fp32"]
    out, png = tmp_path / "bench.json", tmp_path / "bench.png"
    p = subprocess.run([sys.executable, str(REPO / "bench" / "bench_cpu.py"), str(path),
                        "--opvision", cli.path, "--iters", "2", "--warmup", "1", "--threads", "1,2",
                        "--rounds", "2", "--json", str(out), "--plot", str(png)],
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stdout + p.stderr
    rows = json.loads(out.read_text())["rows"]
    assert [r["threads"] for r in rows] == [1, 2]
    for r in rows:
        assert r["opvision"]["median_ms"] > 0 and r["onnxruntime"]["median_ms"] > 0
        assert r["opvision"]["peak_rss"] > 0 and r["onnxruntime"]["peak_rss"] > 0
    assert "opv/ort" in p.stdout
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 5000  # the round plot
