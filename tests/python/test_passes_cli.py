"""The plan passes through the CLI: `compile --passes/--no-pass/--report` and `opt` on saved
artifacts, on the shared fixture (its two byte-identical heads are what dedupe removes) for the
cpu target; bad pass names and missing files give clear errors."""
import re

import numpy as np
import pytest

from opv_util import assert_error, assert_verify_ok, describe, load_npz

SUMMARY = re.compile(r"\[compile\] .* target (\S+), (\d+) calls, (\d+) kernels, (\d+) buffers, weights (\d+) B")
OPT_SUMMARY = re.compile(r"\[opt\] .* calls (\d+) -> (\d+), weights (\d+) -> (\d+) B")




def compile_ok(cli, model, out, *extra):
    p = cli.run("compile", model, "-o", out, "--target", "cpu", *extra)
    assert p.returncode == 0, describe(p)
    m = SUMMARY.search(p.stderr)
    assert m, describe(p)
    return p, int(m.group(2)), int(m.group(5))


def run_outputs(cli, model, out):
    p = cli.run("run", model, "-o", out, "--seed", "3", "--backend", "cpu")
    assert p.returncode == 0, describe(p)
    return load_npz(out)["outputs"]


@pytest.fixture(scope="module")
def compiled(cli, fixture_paths, tmp_path_factory):
    """The fixture compiled for cpu with all passes and without dedupe."""
    root = tmp_path_factory.mktemp("passes")
    model, _ = fixture_paths
    full, no_dedupe = root / "full.opv", root / "nodedupe.opv"
    _, calls_full, w_full = compile_ok(cli, model, full)
    _, calls_nd, w_nd = compile_ok(cli, model, no_dedupe, "--no-pass", "dedupe")
    return root, full, no_dedupe, (calls_full, w_full), (calls_nd, w_nd)


def test_dedupe_removes_the_duplicated_head(compiled):
    _, _, _, (calls_full, w_full), (calls_nd, w_nd) = compiled
    # The duplicated head is three linear layers: at least three calls and their weights go.
    assert calls_nd - calls_full >= 3, (calls_full, calls_nd)
    # (the fixture's duplicated heads may already share their constants: bytes never grow)
    assert w_full <= w_nd, (w_full, w_nd)


def test_both_verify_against_onnxruntime(cli, compiled, fixture_paths):
    _, full, no_dedupe, _, _ = compiled
    _, ref = fixture_paths
    for art in (full, no_dedupe):
        assert_verify_ok(cli, art, ref, "cpu")


def test_dedupe_leaves_outputs_bit_identical(cli, compiled):
    root, full, no_dedupe, _, _ = compiled
    a = run_outputs(cli, full, root / "a.npz")
    b = run_outputs(cli, no_dedupe, root / "b.npz")
    assert a.tobytes() == b.tobytes()


def test_opt_round_trip(cli, compiled, fixture_paths):
    root, full, no_dedupe, (calls_full, w_full), (calls_nd, _) = compiled
    out = root / "opt.opv"
    p = cli.run("opt", no_dedupe, out, "--pass", "dedupe")
    assert p.returncode == 0, describe(p)
    m = OPT_SUMMARY.search(p.stderr)
    assert m, describe(p)
    assert int(m.group(1)) == calls_nd
    assert int(m.group(2)) == calls_nd - (calls_nd - calls_full), describe(p)
    assert int(m.group(4)) <= int(m.group(3)), describe(p)
    assert_verify_ok(cli, out, fixture_paths[1], "cpu")
    a = run_outputs(cli, out, root / "opt_out.npz")
    b = run_outputs(cli, no_dedupe, root / "nd_out.npz")
    assert a.tobytes() == b.tobytes()
    # Running it again changes nothing more; a comma list is accepted too.
    again = root / "opt2.opv"
    p = cli.run("opt", out, again, "--pass", "dedupe,layout-nhwc")
    assert p.returncode == 0, describe(p)
    m = OPT_SUMMARY.search(p.stderr)
    assert m and m.group(1) == m.group(2), describe(p)


def test_passes_selects_plan_passes(cli, fixture_paths, tmp_path):
    model, ref = fixture_paths
    only = tmp_path / "only_dedupe.opv"
    _, calls_only, _ = compile_ok(cli, model, only, "--passes", "dedupe")
    none = tmp_path / "none.opv"
    _, calls_none, _ = compile_ok(cli, model, none, "--no-pass", "dedupe,layout-nhwc")
    # Without layout-nhwc there are no reorder calls; with dedupe the head is gone.
    assert calls_only < calls_none
    assert_verify_ok(cli, only, ref, "cpu")
    # layout-nhwc then runs standalone on the saved artifact.
    out = tmp_path / "then_nhwc.opv"
    p = cli.run("opt", only, out, "--pass", "layout-nhwc")
    assert p.returncode == 0, describe(p)
    assert_verify_ok(cli, out, ref, "cpu")


def test_report(cli, fixture_paths, tmp_path):
    model, _ = fixture_paths
    p, _, _ = compile_ok(cli, model, tmp_path / "r.opv", "--report")
    lines = p.stdout.splitlines()
    assert any(l.startswith("pass report") for l in lines), describe(p)
    rows = {l.split()[0]: l for l in lines if l.split() and l.split()[0] in ("dedupe", "layout-nhwc", "compact")}
    assert set(rows) == {"dedupe", "layout-nhwc", "compact"}, describe(p)
    # dedupe row: "dedupe yes A -> B C -> D E -> F T0 -> T1" with B < A and a measured time.
    nums = re.findall(r"(?<![\d.])(\d+) -> (\d+)(?![\d.])", rows["dedupe"])
    assert len(nums) == 3, rows["dedupe"]
    assert int(nums[0][1]) < int(nums[0][0])
    t = re.search(r"([\d.]+|n/a) -> ([\d.]+|n/a)\s*$", rows["dedupe"])
    assert t and t.group(1) != "n/a" and float(t.group(2)) > 0, rows["dedupe"]
    # compact drops the duplicated head's weights from the blob.
    w_before, w_after = (int(x) for x in nums[2])
    assert w_after <= w_before


def test_opt_report(cli, compiled, tmp_path):
    _, _, no_dedupe, _, _ = compiled
    p = cli.run("opt", no_dedupe, tmp_path / "o.opv", "--pass", "dedupe", "--report")
    assert p.returncode == 0, describe(p)
    assert "pass report" in p.stdout and "\ndedupe " in p.stdout, describe(p)


def test_bad_pass_names_and_files(cli, compiled, fixture_paths, tmp_path):
    model, _ = fixture_paths
    _, full, _, _, _ = compiled
    out = tmp_path / "x.opv"
    assert_error(cli.run("compile", model, "-o", out, "--target", "cpu", "--passes", "bogus"),
                 "bogus", "dedupe", "layout-nhwc")
    assert_error(cli.run("compile", model, "-o", out, "--target", "cpu", "--no-pass", "nonsense"),
                 "nonsense", "dedupe")
    assert not out.exists()
    assert_error(cli.run("opt", full, out, "--pass", "bogus"), "bogus", "cpu", "dedupe", "layout-nhwc")
    assert_error(cli.run("opt", tmp_path / "missing.opv", out, "--pass", "dedupe"), "missing.opv")
    assert_error(cli.run("opt", full, out), "--pass")
    # An ONNX file is not an artifact.
    assert_error(cli.run("opt", model, out, "--pass", "dedupe"), "artifact")


def test_opencl_passes_keep_outputs_bit_identical(cli, fixture_paths, tmp_path):
    """dedupe + level-schedule + batch + replay on an OpenCL artifact (via `opt`) change no output
    bit against the same artifact without them (skipped without an OpenCL device)."""
    model, ref = fixture_paths
    d = cli.run("devices")
    if d.returncode != 0 or "[0]" not in d.stdout:
        pytest.skip("no OpenCL device")
    base = tmp_path / "base.opv"
    p = cli.run("compile", model, "-o", base, "--target", "opencl", "--no-pass", "dedupe,level-schedule,batch,replay")
    assert p.returncode == 0, describe(p)
    opt = tmp_path / "opt.opv"
    p = cli.run("opt", base, opt, "--pass", "dedupe", "--pass", "level-schedule,batch,replay")
    assert p.returncode == 0, describe(p)
    m = OPT_SUMMARY.search(p.stderr)
    assert m and int(m.group(2)) < int(m.group(1)), describe(p)
    outs = []
    for art in (base, opt):
        p = cli.run("run", art, "-o", tmp_path / "o.npz", "--seed", "4", "--backend", "opencl", timeout=600)
        assert p.returncode == 0, describe(p)
        outs.append(load_npz(tmp_path / "o.npz")["outputs"])
    assert outs[0].tobytes() == outs[1].tobytes()
    assert_verify_ok(cli, opt, ref, "opencl", timeout=600)


def test_opt_runs_passes_with_the_recorded_compile_options(cli, tmp_path):
    """`opt` re-runs plan passes with the options the artifact was compiled with (PassCtx, recorded
    in the plan meta): an artifact compiled with --cl-batch 2 batches in pairs under `opt --pass
    batch`, one compiled with the default in up to fours. Compile only: no device needed."""
    model = tmp_path / "m.onnx"
    p = cli.run("make-model", model, "--height", "32", "--width", "64", "--widths", "8,16,16,16",
                "--depths", "1,1,1,1", "--hidden", "32")
    assert p.returncode == 0, describe(p)
    widths = {}
    for batch in ("2", "4"):
        art, out = tmp_path / f"b{batch}.opv", tmp_path / f"b{batch}_opt.opv"
        p = cli.run("compile", model, "-o", art, "--target", "opencl", "--cl-batch", batch, "--no-pass", "batch")
        assert p.returncode == 0, describe(p)
        p = cli.run("opt", art, out, "--pass", "batch")
        assert p.returncode == 0, describe(p)
        p = cli.run("inspect", out)
        assert p.returncode == 0, describe(p)
        assert (f"cl_batch_max={batch}" in p.stdout) == (batch != "4"), p.stdout.splitlines()[:4]
        widths[batch] = {int(n) for n in re.findall(r"_x(\d+)\b", p.stdout)}
    assert widths["2"] == {2}, widths
    assert max(widths["4"]) > 2, widths


def _cuda_help_and_model(cli, tmp_path, option, phrase):
    """`compile --help` (skipping where this build has no cuda target), checked to list `option`
    with `phrase`; then an fp16 make-model whose final conv has 256 channels and an SE gate of
    hidden 16 (one se.cpp fuses; that of --widths 16,32,48,64, 128 channels and 8 hidden, is not)
    and whose late 1x1s split over blocks: its path."""
    p = cli.run("compile", "--help")
    assert p.returncode == 0, describe(p)
    if not re.search(r"--target \S*cuda", p.stdout):
        pytest.skip("this build has no cuda target (OPV_CUDA=OFF)")
    assert option in p.stdout and phrase in p.stdout, describe(p)
    model = tmp_path / "m.onnx"
    p = cli.run("make-model", model, "--fp16", "--height", "32", "--width", "64", "--widths", "32,64,96,128",
                "--depths", "1,1,1,1", "--hidden", "32")
    assert p.returncode == 0, describe(p)
    return model


def test_cuda_se_switch_changes_the_launch_count(cli, tmp_path):
    """compile --cuda-se on|off (target cuda, compute_80): the make-model's squeeze-excitation gate
    (ReduceMean -> 1x1 + Relu -> 1x1 + Sigmoid -> Mul) is one launch by default and with on, four
    with off; off is recorded in the plan meta (cuda_se=0), the default is not recorded; at
    compute_75 there is nothing to fuse, so the switch changes nothing. Compile only (NVRTC, no
    GPU); skipped where this build has no cuda target or no NVRTC."""
    model = _cuda_help_and_model(cli, tmp_path, "--cuda-se on|off", "squeeze-excitation gate")

    def compile_cuda(name, *extra):
        art = tmp_path / f"{name}.opv"
        p = cli.run("compile", model, "-o", art, "--target", "cuda", *extra, timeout=600)
        if p.returncode != 0 and "nvrtc" in p.stderr.lower():
            pytest.skip(f"NVRTC is not available here: {p.stderr.strip()[:300]}")
        assert p.returncode == 0, describe(p)
        m = SUMMARY.search(p.stderr)
        assert m and m.group(1) == "cuda", describe(p)
        p = cli.run("inspect", art)
        assert p.returncode == 0, describe(p)
        meta = [kv for ln in p.stdout.splitlines() if ln.startswith("meta ") for kv in ln.split()[1:]]
        return int(m.group(2)), meta, "se_gate_" in p.stdout   # calls, meta key=value list, fused kernel

    calls_default, meta_default, fused_default = compile_cuda("default", "--cuda-arch", "compute_80")
    calls_on, meta_on, fused_on = compile_cuda("on", "--cuda-arch", "compute_80", "--cuda-se", "on")
    calls_off, meta_off, fused_off = compile_cuda("off", "--cuda-arch", "compute_80", "--cuda-se", "off")
    assert calls_on == calls_default and calls_off == calls_default + 3, (calls_default, calls_on, calls_off)
    assert fused_default and fused_on and not fused_off
    assert not [kv for kv in meta_default + meta_on if kv.startswith("cuda_se=")], (meta_default, meta_on)
    assert "cuda_se=0" in meta_off, meta_off
    # compute_75: no tensor-core form, the gate stays four calls either way
    calls_75_on, _, fused_75 = compile_cuda("on75", "--cuda-se", "on")
    calls_75_off, _, _ = compile_cuda("off75", "--cuda-se", "off")
    assert calls_75_on == calls_75_off and not fused_75, (calls_75_on, calls_75_off)


def test_cuda_cluster_switch(cli, tmp_path):
    """compile --cuda-cluster on|off (target cuda): at compute_90 the split layers' kernels (the
    fixture-like make-model's late 1x1s run split-K) declare thread-block clusters by default and
    with on, never with off, which the plan meta records (cuda_cluster=0); at compute_80 there are
    none either way. Compile only (NVRTC, no GPU); skipped where this build has no cuda target or
    no NVRTC."""
    model = _cuda_help_and_model(cli, tmp_path, "--cuda-cluster on|off", "thread-block cluster")

    def clusters(name, *extra):
        art = tmp_path / f"{name}.opv"
        p = cli.run("compile", model, "-o", art, "--target", "cuda", *extra, timeout=600)
        if p.returncode != 0 and "nvrtc" in p.stderr.lower():
            pytest.skip(f"NVRTC is not available here: {p.stderr.strip()[:300]}")
        assert p.returncode == 0, describe(p)
        meta = cli.run("inspect", art)
        assert meta.returncode == 0, describe(meta)
        src = cli.run("inspect", art, "--source", "conv2d")
        assert src.returncode == 0, describe(src)
        return src.stdout.count("__cluster_dims__("), "cuda_cluster=0" in meta.stdout

    n_default, rec_default = clusters("default", "--cuda-arch", "compute_90")
    n_on, rec_on = clusters("on", "--cuda-arch", "compute_90", "--cuda-cluster", "on")
    n_off, rec_off = clusters("off", "--cuda-arch", "compute_90", "--cuda-cluster", "off")
    n_80, _ = clusters("c80", "--cuda-arch", "compute_80")
    assert n_default > 0 and n_on == n_default, (n_default, n_on)
    assert n_off == 0 and n_80 == 0, (n_off, n_80)
    assert rec_off and not rec_default and not rec_on
    p = cli.run("compile", model, "-o", tmp_path / "bad.opv", "--target", "cuda", "--cuda-cluster", "maybe")
    assert p.returncode != 0 and "--cuda-cluster" in p.stderr, describe(p)


def _compile_cuda90(cli, model, art, *extra):
    """`model` compiled for cuda at compute_90 with `extra` flags into `art` (skipping where NVRTC
    is missing): its meta line and its `inspect --dump`."""
    p = cli.run("compile", model, "-o", art, "--target", "cuda", "--cuda-arch", "compute_90", *extra, timeout=600)
    if p.returncode != 0 and "nvrtc" in p.stderr.lower():
        pytest.skip(f"NVRTC is not available here: {p.stderr.strip()[:300]}")
    assert p.returncode == 0, describe(p)
    d = cli.run("inspect", art, "--dump")
    assert d.returncode == 0, describe(d)
    return next(line for line in d.stdout.splitlines() if line.startswith("meta ")), d.stdout


def test_cuda_pdl_switch(cli, tmp_path):
    """compile --cuda-pdl off|on|early|prefetch|tail (target cuda): the choice is recorded in the
    plan meta unless it is the default (on): cuda_pdl=0 for off, 2 for early, 3 for prefetch, 4 for
    tail; a value outside the five is a usage error naming the option. Compile only (NVRTC, no GPU); skipped where
    this build has no cuda target or no NVRTC."""
    model = _cuda_help_and_model(cli, tmp_path, "--cuda-pdl off|on|early|prefetch|tail", "programmatic dependent launch")

    def meta(name, *extra):
        return _compile_cuda90(cli, model, tmp_path / f"{name}.opv", *extra)[0]

    assert " cuda_pdl=" not in meta("default")
    assert " cuda_pdl=0 " in meta("off", "--cuda-pdl", "off")
    assert " cuda_pdl=" not in meta("on", "--cuda-pdl", "on")
    assert " cuda_pdl=2 " in meta("early", "--cuda-pdl", "early")
    assert " cuda_pdl=3 " in meta("prefetch", "--cuda-pdl", "prefetch")
    assert " cuda_pdl=4 " in meta("tail", "--cuda-pdl", "tail")
    p = cli.run("compile", model, "-o", tmp_path / "bad.opv", "--target", "cuda", "--cuda-pdl", "maybe")
    assert p.returncode != 0 and "--cuda-pdl" in p.stderr and "off, on, early, prefetch or tail" in p.stderr, describe(p)


def test_cuda_tune_option(cli, tmp_path):
    """compile --cuda-tune KEY=N (target cuda, repeatable or comma-joined): recorded in the plan
    meta (cuda_tune, in the keys' fixed order); mma_blocks moves the split-K 1x1s' launch sizes;
    an unknown key, a value out of range, a missing value or a key given twice is a usage error
    naming the option and the problem. Compile only (NVRTC, no GPU); skipped where this build has no
    cuda target or no NVRTC."""
    model = _cuda_help_and_model(cli, tmp_path, "--cuda-tune KEY=N", "ffn_blocks")

    def compiled(name, *extra):
        meta, dump = _compile_cuda90(cli, model, tmp_path / f"{name}.opv", *extra)
        mlp = [line.split("global=")[1].split()[0] for line in dump.splitlines()
               if line.startswith("  c") and "/mlp/fc" in line and "global=" in line]
        return meta, mlp

    meta_default, mlp_default = compiled("default")
    meta_tuned, mlp_tuned = compiled("tuned", "--cuda-tune", "dwpair_blocks=64", "--cuda-tune", "mma_blocks=16")
    assert "cuda_tune=" not in meta_default, meta_default
    assert " cuda_tune=mma_blocks=16,dwpair_blocks=64 " in meta_tuned, meta_tuned
    assert len(mlp_default) == len(mlp_tuned) > 0 and mlp_tuned != mlp_default, (mlp_default, mlp_tuned)
    for bad, why in ((["ffn_blocks=0"], "[1, 4096]"), (["fnn_blocks=8"], "unknown key 'fnn_blocks'"),
                     (["ffn_blocks"], "[1, 4096]"), (["ffn_blocks=8,ffn_blocks=9"], "given twice"),
                     (["ffn_blocks=8,"], "trailing"), (["mma_blocks=1e3"], "[1, 4096]")):
        p = cli.run("compile", model, "-o", tmp_path / "bad.opv", "--target", "cuda",
                    *[x for b in bad for x in ("--cuda-tune", b)])
        assert p.returncode == 2 and "--cuda-tune" in p.stderr and why in p.stderr, (bad, describe(p))
