"""The OpenCL backend end to end through the CLI (skipped where no OpenCL device exists; CI runs
it on PoCL): the shared fixture against its onnxruntime reference with every plan pass and with
each optional pass switched off, generated models, the artifact checks of DESIGN.md (repeat runs
and reloads bit-identical), what the passes do to the fixture's plan (dedupe removes the
duplicated head, batch merges launches, input-pack leaves one input call), and `inspect`'s
texture-read counts."""
import os
import re
import subprocess

import numpy as np
import pytest

from opv_util import assert_error, assert_verify_ok, describe, load_npz, ort_run

OPTIONAL_PASSES = ["layout-image", "input-pack", "weight-pack", "dedupe", "level-schedule", "batch", "replay"]


@pytest.fixture(scope="module")
def ocl(cli):
    if not cli.has_opencl():
        pytest.skip("no OpenCL device (see `opvision devices`)")
    return cli




@pytest.fixture(scope="module")
def fixture_opv(ocl, fixture_paths, tmp_path_factory):
    out = tmp_path_factory.mktemp("ocl") / "fixture.opv"
    p = ocl.run("compile", fixture_paths[0], "-o", out, "--target", "opencl", timeout=600)
    assert p.returncode == 0, describe(p)
    return out


def _calls(cli, opv):
    p = cli.run("inspect", opv)
    assert p.returncode == 0, describe(p)
    m = re.search(r"^calls (\d+)", p.stdout, re.M)
    assert m, p.stdout
    return int(m.group(1)), p.stdout


def _run(cli, model, out, *args):
    p = cli.run("run", model, "-o", out, "--backend", "opencl", *args, timeout=600)
    assert p.returncode == 0, describe(p)
    return load_npz(out)["outputs"]


def test_fixture_verifies_all_passes(ocl, fixture_paths, fixture_opv):
    rel, mx = assert_verify_ok(ocl, fixture_opv, fixture_paths[1], "opencl", timeout=600)
    assert rel <= 1e-2 and mx <= 1e-2, (rel, mx)


@pytest.mark.parametrize("off", OPTIONAL_PASSES)
def test_fixture_verifies_without_pass(ocl, fixture_paths, tmp_path, off):
    opv = tmp_path / f"no_{off}.opv"
    p = ocl.run("compile", fixture_paths[0], "-o", opv, "--target", "opencl", "--no-pass", off, timeout=600)
    assert p.returncode == 0, describe(p)
    assert_verify_ok(ocl, opv, fixture_paths[1], "opencl", timeout=600)


def test_fixture_live_onnxruntime(ocl, fixture_paths, fixture_opv, tmp_path):
    """A second input set, with the reference computed now by onnxruntime."""
    rng = np.random.default_rng(23)
    z = load_npz(fixture_paths[1])
    feeds = {k: rng.integers(0, 256, z[k].shape, dtype=np.uint8) for k in ("img", "big_img")}
    ref = tmp_path / "live.npz"
    np.savez(ref, **feeds, **ort_run(str(fixture_paths[0]), feeds))
    assert_verify_ok(ocl, fixture_opv, ref, "opencl", timeout=600)


def test_repeat_runs_and_reload_bit_identical(ocl, fixture_paths, fixture_opv, tmp_path):
    a = _run(ocl, fixture_opv, tmp_path / "a.npz", "--seed", "3")
    b = _run(ocl, fixture_opv, tmp_path / "b.npz", "--seed", "3", "--spin")  # polling wait: same bits
    c = _run(ocl, fixture_paths[0], tmp_path / "c.npz", "--seed", "3")  # compiled afresh from the ONNX
    d = _run(ocl, fixture_opv, tmp_path / "d.npz", "--seed", "4")
    assert a.dtype == np.float32 and np.all(np.isfinite(a))
    assert a.tobytes() == b.tobytes()
    assert a.tobytes() == c.tobytes()
    assert not np.array_equal(a, d)


def test_passes_shrink_the_plan(ocl, fixture_paths, fixture_opv, tmp_path):
    base = tmp_path / "base.opv"
    p = ocl.run("compile", fixture_paths[0], "-o", base, "--target", "opencl", "--passes", "layout-image",
                timeout=600)
    assert p.returncode == 0, describe(p)
    n_base, _ = _calls(ocl, base)
    n_all, text = _calls(ocl, fixture_opv)
    # dedupe removes the duplicated head (3 calls), batch merges same-kernel head layers,
    # input-pack makes the Concat + normalisation + reorder one call.
    assert n_all <= n_base - 3 - 2, (n_base, n_all)
    assert "input_pack" in text, text


def test_inspect_counts_texture_reads(ocl, fixture_opv):
    _, text = _calls(ocl, fixture_opv)
    m = re.search(r"total: (\d+) launches for (\d+) calls, (\d+) host-fallback calls, (\d+) texture reads, "
                  r"(\d+) gated", text)
    assert m, text
    launches, calls, host, reads, gated = (int(x) for x in m.groups())
    assert launches <= calls and reads > 0
    assert host == 0, "every fixture op should have a GPU kernel\n" + text
    assert gated == 0, "image kernels pad through the sampler border, not gated reads\n" + text


def test_opt_on_saved_artifact(ocl, fixture_paths, tmp_path):
    """Passes run standalone on a saved artifact give the same numbers as at compile time."""
    raw = tmp_path / "raw.opv"
    p = ocl.run("compile", fixture_paths[0], "-o", raw, "--target", "opencl", "--no-pass", "dedupe",
                "--no-pass", "batch", timeout=600)
    assert p.returncode == 0, describe(p)
    opt = tmp_path / "opt.opv"
    p = ocl.run("opt", raw, opt, "--pass", "dedupe", "--pass", "batch", timeout=600)
    assert p.returncode == 0, describe(p)
    assert _calls(ocl, opt)[0] < _calls(ocl, raw)[0]
    a = _run(ocl, raw, tmp_path / "raw.npz", "--seed", "5")
    b = _run(ocl, opt, tmp_path / "opt.npz", "--seed", "5")
    assert np.abs(a - b).max() <= 1e-2 * np.abs(a).max(), np.abs(a - b).max()


def test_fp16_math_is_opt_in_and_falls_back_without_cl_khr_fp16(ocl, fixture_opv, tmp_path):
    """fp16-math is not run by default; where the device lacks cl_khr_fp16 (PoCL, NVIDIA) the
    rebuilt kernels take the fp32 path, so the outputs stay bit-identical."""
    p = ocl.run("inspect", fixture_opv, "--source", "conv1x1")
    assert p.returncode == 0 and "-DOPV_FP16_MATH" not in p.stdout, describe(p)
    half = tmp_path / "half.opv"
    p = ocl.run("opt", fixture_opv, half, "--pass", "fp16-math", timeout=600)
    assert p.returncode == 0, describe(p)
    p = ocl.run("inspect", half, "--source", "conv1x1")
    assert p.returncode == 0 and "-DOPV_FP16_MATH" in p.stdout, describe(p)
    devices = ocl.run("devices").stdout
    if "fp16 yes" in devices:
        pytest.skip("the device has cl_khr_fp16: outputs legitimately differ")
    a = _run(ocl, fixture_opv, tmp_path / "a.npz", "--seed", "9")
    b = _run(ocl, half, tmp_path / "b.npz", "--seed", "9")
    assert a.tobytes() == b.tobytes()


def _launches(text):
    m = re.search(r"total: (\d+) launches for (\d+) calls", text)
    assert m, text
    return int(m.group(1))


@pytest.mark.parametrize("images,weights", [("image", "f32"), ("buffer", "f16")])
def test_fixture_desktop_gpu_settings(ocl, fixture_paths, fixture_opv, tmp_path, images, weights):
    """The settings for desktop GPUs (wide-GPU K-split and row-split kernels, 16 calls per batched
    launch; image-layout activations in buffers, F32 packed weights) verify, run bit-identically
    twice, and take fewer launches."""
    opv = tmp_path / "desktop.opv"
    p = ocl.run("compile", fixture_paths[0], "-o", opv, "--target", "opencl", "--cl-busy-items", "65536",
                "--cl-batch", "16", "--cl-weights", weights, "--cl-images", images, timeout=600)
    assert p.returncode == 0, describe(p)
    assert_verify_ok(ocl, opv, fixture_paths[1], "opencl", timeout=600)
    a = _run(ocl, opv, tmp_path / "a.npz", "--seed", "5")
    b = _run(ocl, opv, tmp_path / "b.npz", "--seed", "5")
    assert a.tobytes() == b.tobytes()
    _, text = _calls(ocl, opv)
    _, text_default = _calls(ocl, fixture_opv)
    assert _launches(text) < _launches(text_default), (_launches(text), _launches(text_default))
    assert re.search(r"cl_conv1x1_\S+_tw4_ob2_ks\d+", text), text
    assert re.search(r"cl_dwconv7x7_\S+_ks7", text), text
    assert not re.search(r"cl_(dw)?conv\S*_ks\d+", text_default), "the Adreno default never splits convs"
    assert ("cl_image_storage=buffer" in text) == (images == "buffer"), text.splitlines()[:3]


@pytest.mark.parametrize("args,needle", [
    (["--cl-weights", "f8"], "--cl-weights must be f16 or f32"),
    (["--cl-batch", "0"], "--cl-batch must be in 1..64"),
    (["--cl-images", "texture"], "--cl-images must be image or buffer"),
    (["--cl-tune", "cl_unknown=2"], "--cl-tune wants"),
    (["--cl-tune", "cl_ks_max_lanes=x"], "must be an integer"),
])
def test_compile_rejects_bad_opencl_options(cli, fixture_paths, tmp_path, args, needle):
    p = cli.run("compile", fixture_paths[0], "-o", tmp_path / "x.opv", "--target", "opencl", *args)
    assert p.returncode == 2, describe(p)
    assert needle in p.stderr, p.stderr


# ------------------------------------------- backend options (formerly environment switches)
def test_opencl_options_are_flags(ocl, fixture_opv, tmp_path):
    """OPV_CL_COMMAND_BUFFER, OPV_CL_QCOM_RECORDING and OPV_CL_CACHE are no longer read: the
    behaviour they switched is chosen by --cl-command-buffer, --cl-qcom-recording and --cl-cache
    on run/bench/verify/demo, listed in --help; a value other than on/off is a usage error."""
    for cmd in ("run", "bench", "verify", "demo"):
        p = ocl.run(cmd, "--help")
        assert p.returncode == 0, describe(p)
        for flag in ("--cl-command-buffer on|off", "--cl-qcom-recording on|off", "--cl-cache on|off"):
            assert flag in p.stdout, (cmd, flag, p.stdout)
    assert_error(ocl.run("run", fixture_opv, "--cl-command-buffer", "maybe"), "--cl-command-buffer must be on or off")
    assert_error(ocl.run("bench", fixture_opv, "--cl-cache", "0"), "--cl-cache must be on or off")

    def run_line(*args, env=None):
        p = subprocess.run([ocl.path, "run", str(fixture_opv), "--backend", "opencl", *args], capture_output=True,
                           text=True, timeout=600, env=env)
        assert p.returncode == 0, describe(p)
        m = re.search(r"^\[run\] opencl device .*: calls (.*)$", p.stderr, re.M)
        assert m, p.stderr
        return m.group(1)

    # The fixture compiles to a replay plan: without recordings its calls are enqueued in one go.
    assert run_line("--cl-command-buffer", "off", "--cl-qcom-recording", "off") == \
        "enqueued without host synchronisation"
    default = run_line()
    assert run_line(env=dict(os.environ, OPV_CL_COMMAND_BUFFER="0", OPV_CL_QCOM_RECORDING="0")) == default

    # The program disk cache: off writes nothing, on fills the directory.
    for mode in ("off", "on"):
        cache = tmp_path / f"cache_{mode}"
        env = dict(os.environ, OPV_CACHE_DIR=str(cache), OPV_CL_CACHE="1")
        run_line("--cl-cache", mode, env=env)
        files = list(cache.glob("*")) if cache.exists() else []
        assert bool(files) == (mode == "on"), (mode, files)


def test_devices_lists_backend_caps(ocl):
    p = ocl.run("devices")
    assert p.returncode == 0, describe(p)
    assert "backend reference: layouts linear; per-call times yes; runs on host" in p.stdout, p.stdout
    assert "backend cpu: layouts linear, nhwc; per-call times yes; runs on host" in p.stdout, p.stdout
    assert re.search(r"^backend opencl: layouts linear, nhwc, packed, image_rgba; per-call times yes; runs on .+ / .+$",
                     p.stdout, re.M), p.stdout
