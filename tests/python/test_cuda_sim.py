"""The `cuda` backend on a machine without an NVIDIA GPU: `opvision --backend cuda` with the driver
stand-in libopv_cudasim.so (OPV_CUDA_DRIVER), which runs the generated kernels' PTX on the PTX
simulator (src/backend/cuda/sim/ptx.h) with every memory access checked. The kernels, the launch
dimensions, the argument binding, the CUDA graph and the input/output copies are the ones a GPU
would get; only the execution is simulated.

- every op case of test_ops.py on cuda against onnxruntime (a case the cuda target refused would
  be listed in REFUSED with the reason, so a new refusal or a newly supported case both show);
- the fp16 fixture at compute_90 (thread-block clusters) verified against its onnxruntime
  reference, and byte-identical on the same random inputs to compute_80 (global-memory split
  forms) and to compute_90 with clusters off;
- the fixture with every sizing target of --cuda-tune moved (other splits and bands: other
  summation orders) against onnxruntime;
- make-model variants (widths, depths, heads, fp32 and fp16) against onnxruntime.

Skipped where the build has no cuda target (no libopv_cudasim.so next to the binary)."""
import os
import pathlib

import numpy as np
import pytest

from opv_util import Cli, assert_verify_ok, describe, load_npz, save_case
from test_ops import CASES, built  # noqa: F401 (built: the op cases' models and references, a fixture)

# Cases the cuda target refuses at compile time, with the reason its error names (none today:
# every case of test_ops.py runs on cuda).
REFUSED = {}


@pytest.fixture(scope="module")
def sim(cli):
    """The CLI with OPV_CUDA_DRIVER naming the simulator (skipped where the build has none)."""
    lib = pathlib.Path(cli.path).resolve().parent / "libopv_cudasim.so"
    if not lib.is_file():
        pytest.skip(f"no {lib}: this build has no cuda target")
    return Cli(cli.path, env=dict(os.environ, OPV_CUDA_DRIVER=str(lib)))


def test_refusals_name_real_cases():
    assert set(REFUSED) <= set(CASES), sorted(set(REFUSED) - set(CASES))


@pytest.mark.parametrize("name", sorted(CASES))
def test_op_on_cudasim(sim, built, name):
    mpath, rpath, _ = built(name)
    if name in REFUSED:
        p = sim.run("verify", mpath, "--ref", rpath, "--backend", "cuda")
        assert p.returncode == 2, "the cuda target now runs this case: drop it from REFUSED\n" + describe(p)
        assert REFUSED[name] in p.stderr, describe(p)
        return
    assert_verify_ok(sim, mpath, rpath, "cuda")


@pytest.fixture(scope="module")
def fixture_artifacts(sim, fixture_paths, tmp_path_factory):
    model, ref = fixture_paths
    d = tmp_path_factory.mktemp("cudasim_fixture")
    arts = {}
    for name, extra in (("compute_80", ["--cuda-arch", "compute_80"]),
                        ("compute_90", ["--cuda-arch", "compute_90"]),
                        ("compute_90_no_cluster", ["--cuda-arch", "compute_90", "--cuda-cluster", "off"]),
                        # (12-block clusters: the workspace forms' 12-way split, as before the portable limit)
                        ("compute_90_c16", ["--cuda-arch", "compute_90", "--cuda-tune", "ffn_cluster_max=16"]),
                        ("compute_90_pair_all", ["--cuda-arch", "compute_90", "--cuda-ffn-pair", "all",
                                                 "--cuda-tune", "ffn_cluster_max=16"])):
        out = d / f"{name}.opv"
        p = sim.run("compile", model, "-o", out, "--target", "cuda", *extra)
        assert p.returncode == 0, describe(p)
        arts[name] = out
    return arts, ref, d


def test_fixture_kernels_do_not_spill(sim, fixture_artifacts):
    """ptxas's report of every fixture kernel's SASS (compile --cuda-sass auto, inspect): a row per
    kernel, and no register spills in the forms compiled above but the opt-in --cuda-ffn-pair (its
    ffn_128 with the pair inside spills 32 bytes at 64 registers, session 41; that form is slower
    and off)."""
    arts, _, _ = fixture_artifacts
    for name, art in arts.items():
        if "pair" in name:
            continue
        p = sim.run("inspect", art)
        assert p.returncode == 0, describe(p)
        lines = p.stdout.splitlines()
        kernels = int(next(l for l in lines if l.startswith("calls ")).split()[3])
        head = next(i for i, l in enumerate(lines) if "kernel (SASS, ptxas -v)" in l)
        rows = lines[head + 1:head + 1 + kernels]
        assert all(len(r.split()) == 6 for r in rows), (name, rows)
        assert lines[head + 1 + kernels].strip() == "kernels that spill registers: 0", (name, rows)


def test_fixture_on_cudasim(sim, fixture_artifacts):
    """compute_90 (clusters) against onnxruntime; the other two forms give the same bytes (below)."""
    arts, ref, _ = fixture_artifacts
    rel, mx = assert_verify_ok(sim, arts["compute_90"], ref, "cuda")
    assert rel < 1e-2 and mx < 1e-2


def test_fixture_stage_kernels_on_cudasim(sim, fixture_paths, tmp_path):
    """compile --cuda-stage on (compute_90): stage 2's six FastViT blocks and stage 3's two (its fc1
    and fc2 unfused) each become one kernel on a thread-block cluster (43 -> 27 launches), recorded
    in the plan, and the outputs still match onnxruntime."""
    model, ref = fixture_paths
    art = tmp_path / "stage.opv"
    p = sim.run("compile", model, "-o", art, "--target", "cuda", "--cuda-arch", "compute_90", "--cuda-stage", "on")
    assert p.returncode == 0, describe(p)
    d = sim.run("inspect", art, "--dump")
    assert d.returncode == 0, describe(d)
    assert "cuda_stage=1" in d.stdout.split("calls ")[0], d.stdout[:1500]
    assert "stage_256_768_dw3x3_7x7_x6_f16" in d.stdout and "stage_512_1536_dw3x3_7x7_x2_f16" in d.stdout
    assert "calls 27 " in d.stdout, d.stdout[:400]
    rel, mx = assert_verify_ok(sim, art, ref, "cuda")
    assert rel < 1e-2 and mx < 1e-2


def test_fixture_tuned_on_cudasim(sim, fixture_paths, tmp_path):
    """--cuda-tune moves the generators' block targets: the fused ConvFFN's hidden split, the 1x1s'
    split-K and the depthwise pairs' row bands all change shape (launch sizes differ from the
    default artifact's), and the outputs still match onnxruntime."""
    model, ref = fixture_paths
    grids = {}
    for name, extra in (("default", []),
                        ("tuned", ["--cuda-tune", "ffn_blocks=48,mma_blocks=32", "--cuda-tune", "dwpair_blocks=512"])):
        art = tmp_path / f"{name}.opv"
        p = sim.run("compile", model, "-o", art, "--target", "cuda", "--cuda-arch", "compute_90", *extra)
        assert p.returncode == 0, describe(p)
        d = sim.run("inspect", art, "--dump")
        assert d.returncode == 0, describe(d)
        grids[name] = {ln.split()[0]: ln.split("global=")[1].split()[0] for ln in d.stdout.splitlines()
                       if ln.startswith("  c") and "global=" in ln}
        if name == "tuned":
            assert "cuda_tune=ffn_blocks=48,mma_blocks=32,dwpair_blocks=512" in d.stdout, d.stdout[:2000]
            rel, mx = assert_verify_ok(sim, art, ref, "cuda")
            assert rel < 1e-2 and mx < 1e-2
    changed = [c for c in grids["default"] if grids["default"][c] != grids["tuned"].get(c)]
    assert len(changed) >= 10, changed  # ConvFFNs, depthwise pairs and split 1x1s resized


def test_fixture_split_forms_are_bit_identical_on_cudasim(sim, fixture_artifacts):
    """The split layers' three forms (global workspace at compute_80, clusters at compute_90, and
    compute_90 with clusters off) add the same partials in the same order: same bytes out. At
    compute_90 the heads' three GEMV layers and the output Concat are one cluster launch
    (heads.cpp), at compute_80 and with clusters off four launches: the same bytes too. At
    compute_90 with --cuda-ffn-pair all (opt-in) every depthwise pair before a fused ConvFFN runs
    inside it (stages 1-2 split over clusters, stage 0 unsplit): the same bytes again. And
    compute_90 run with its inputs read and its outputs written in mapped host memory
    (--cuda-inputs auto, --cuda-outputs auto: the frames are read once, by the input pack; no call
    reads the output), the inputs written there in place (--staged-inputs): the same bytes as
    copies; and with the inputs kept in device memory (--cuda-inputs device): the same bytes. (These compute_90 forms split stage 2's ConvFFN 12 ways on 12-block clusters,
    ffn_cluster_max=16, as the workspace forms do; the default's 6-way split on 6-block clusters
    adds other partials: its outputs match within fp16 rounding.)"""
    arts, _, d = fixture_artifacts
    for name, launches in (("compute_80", 46), ("compute_90", 43), ("compute_90_no_cluster", 46),
                           ("compute_90_c16", 43), ("compute_90_pair_all", 33)):
        s = sim.run("inspect", arts[name])
        assert s.returncode == 0, describe(s)
        assert f"calls {launches} " in s.stdout, (name, s.stdout[:400])
        assert ("heads_14x3_f16" in s.stdout) == (name in ("compute_90", "compute_90_c16", "compute_90_pair_all")), \
            (name, s.stdout[:1500])
        kernel_list = s.stdout.split("\ncuda code:")[0]  # (the SASS table after it names them again)
        assert kernel_list.count("_dw3x3_7x7_f16") == (3 if name == "compute_90_pair_all" else 0), \
            (name, s.stdout[:1500])
    outs = {}
    for name, art in arts.items():
        o = d / f"{name}_out.npz"
        p = sim.run("run", art, "--seed", "5", "-o", o)
        assert p.returncode == 0, describe(p)
        outs[name] = load_npz(o)
    o = d / "compute_90_mapped_staged_out.npz"
    p = sim.run("run", arts["compute_90_c16"], "--seed", "5", "--cuda-inputs", "auto", "--cuda-outputs", "auto",
                "--staged-inputs", "-o", o)
    assert p.returncode == 0, describe(p)
    assert "2 input(s) read in mapped host memory; 1 output(s) written in mapped host memory" in p.stderr, describe(p)
    outs["compute_90_mapped_staged"] = load_npz(o)
    o = d / "compute_90_device_out.npz"
    p = sim.run("run", arts["compute_90_c16"], "--seed", "5", "--cuda-inputs", "device", "-o", o)
    assert p.returncode == 0, describe(p)
    assert "2 input(s) kept in device memory" in p.stderr, describe(p)
    outs["compute_90_device"] = load_npz(o)
    first = outs["compute_80"]
    for name, o in outs.items():
        assert o.keys() == first.keys()
        for k in o:
            assert np.isfinite(o[k]).all()
            if name == "compute_90":  # the 6-way split: another summation order
                a, b = o[k].astype(np.float64), first[k].astype(np.float64)
                assert np.linalg.norm(a - b) <= 1e-3 * np.linalg.norm(b), f"{name}: output {k}"
            else:
                assert o[k].tobytes() == first[k].tobytes(), f"{name}: output {k} differs from compute_80"


VARIANTS = [
    ("narrow_fp32", ["--widths", "16,32,48,64", "--depths", "1,1,2,1", "--hidden", "64", "--heads", "7,5,3"]),
    ("narrow_fp16", ["--widths", "16,32,48,64", "--depths", "1,2,1,1", "--hidden", "96", "--heads", "4,12", "--fp16"]),
    ("deep_fp16", ["--widths", "24,48,72,96", "--depths", "2,1,3,1", "--hidden", "64", "--heads", "6", "--fp16",
                   "--seed", "3"]),
]


@pytest.mark.parametrize("name,args", VARIANTS, ids=[v[0] for v in VARIANTS])
def test_make_model_variant_on_cudasim(sim, tmp_path, name, args):
    import onnx
    model = tmp_path / "m.onnx"
    p = sim.run("make-model", model, "--height", "32", "--width", "64", *args)
    assert p.returncode == 0, describe(p)
    m = onnx.load(str(model))
    rng = np.random.default_rng(7)
    feeds = {}
    for i in m.graph.input:
        shape = [d.dim_value for d in i.type.tensor_type.shape.dim]
        feeds[i.name] = rng.integers(0, 256, size=shape, dtype=np.uint8)
    mpath, rpath, _ = save_case(tmp_path, m, feeds, name=name)
    rel, mx = assert_verify_ok(sim, mpath, rpath, "cuda")
    assert rel < 1e-2, (rel, mx)


def test_driver_named_by_env_must_exist(sim, fixture_artifacts):
    """OPV_CUDA_DRIVER naming no library is an error that says where the name came from."""
    arts, _, _ = fixture_artifacts
    env = dict(sim.env, OPV_CUDA_DRIVER="/nonexistent/libcuda-stand-in.so")
    p = Cli(sim.path, env=env).run("run", arts["compute_90"], "--backend", "cuda", timeout=120)
    assert p.returncode == 2, describe(p)
    assert "no CUDA driver" in p.stderr and "named by OPV_CUDA_DRIVER" in p.stderr, describe(p)


def test_sass_beside_the_ptx_on_cudasim(sim, small_model, tmp_path):
    """compile --cuda-sass: inspect counts each GPU's cubins; `run` on cudasim (which refuses cubins)
    falls back to the PTX and says so, with --cuda-code ptx it does not try; --cuda-sass none stores
    PTX alone."""
    model, sm90 = small_model
    art, bare = tmp_path / "sass.opv", tmp_path / "bare.opv"
    p = sim.run("compile", model, "--target", "cuda", "--cuda-arch", "compute_80", "--cuda-sass", "sm_80,sm_89",
                "-o", art)
    assert p.returncode == 0, describe(p)
    p = sim.run("inspect", art)
    assert p.returncode == 0, describe(p)
    assert "cuda_sass=sm_80,sm_89" in p.stdout, describe(p)
    line = next(l for l in p.stdout.splitlines() if l.startswith("cuda code:"))
    kernels = int(next(l for l in p.stdout.splitlines() if l.startswith("calls ")).split()[3])
    for sm in ("sm_80", "sm_89"):
        assert f"SASS for {sm}: {kernels} of {kernels} kernels" in line, line
    assert "kernels that spill registers: 0" in p.stdout, describe(p)
    p = sim.run("compile", model, "--target", "cuda", "--cuda-arch", "compute_80", "--cuda-sass", "none", "-o", bare)
    assert p.returncode == 0, describe(p)
    bare_inspect = sim.run("inspect", bare).stdout
    assert "no SASS" in bare_inspect and "ptxas -v" not in bare_inspect, bare_inspect
    # cudasim is an sm_90 device: sm_89's SASS does not run there (another major), so the PTX.
    p = sim.run("run", art, "--backend", "cuda", timeout=300)
    assert p.returncode == 0, describe(p)
    assert f"cuda code: {kernels} modules, 0 from SASS" in p.stderr and "refused" not in p.stderr, describe(p)
    p = sim.run("run", sm90, "--backend", "cuda", timeout=300)
    assert p.returncode == 0, describe(p)
    assert "0 from SASS" in p.stderr and "the driver refused a stored cubin" in p.stderr, describe(p)
    assert "the simulator runs PTX only" in p.stderr, describe(p)
    p = sim.run("run", sm90, "--backend", "cuda", "--cuda-code", "ptx", timeout=300)
    assert p.returncode == 0, describe(p)
    assert "0 from SASS" in p.stderr and "refused" not in p.stderr, describe(p)


@pytest.fixture(scope="module")
def small_model(sim, tmp_path_factory):
    """A small generated fp16 model (6 input channels, 32x64) and its compute_90 artifact."""
    d = tmp_path_factory.mktemp("cudasim_small")
    model, art = d / "m.onnx", d / "m.opv"
    p = sim.run("make-model", model, "--height", "32", "--width", "64", "--in-chans", "6", "--widths", "16,32,32,64",
                "--depths", "1,1,1,1", "--hidden", "32", "--heads", "4,2", "--fp16")
    assert p.returncode == 0, describe(p)
    p = sim.run("compile", model, "--target", "cuda", "--cuda-arch", "compute_90", "-o", art)
    assert p.returncode == 0, describe(p)
    return model, art


def test_bench_replay_prefixes_on_cudasim(sim, small_model):
    """`bench --replay-prefixes`: one row per call, each the graph cut after that call, in JSON one
    time per call; refused with several inferences in flight."""
    import json
    _, art = small_model
    p = sim.run("bench", art, "--iters", "2", "--warmup", "1", "--replay-prefixes", "--json", timeout=300)
    assert p.returncode == 0, describe(p)
    out = json.loads(p.stdout)
    times = out["replay_prefixes_us"]
    assert len(times) == out["calls"] and all(t > 0 for t in times), out
    assert len(out["replay_prefix_kernels"]) == out["calls"] and "conv2d_1x1_s1_f16_gelu" in out["replay_prefix_kernels"], out
    p = sim.run("bench", art, "--iters", "2", "--warmup", "1", "--replay-prefixes", timeout=300)
    assert p.returncode == 0, describe(p)
    assert "replay cut after each call" in p.stdout and p.stdout.count("conv2d_1x1") >= 3, describe(p)
    p = sim.run("bench", art, "--iters", "2", "--inflight", "2", "--replay-prefixes", timeout=300)
    assert p.returncode == 2 and "--replay-prefixes is for --backend cuda" in p.stderr, describe(p)


def test_bench_probe_on_cudasim(sim, small_model, tmp_path):
    """`bench --probe N` on an artifact compiled with `--cuda-tune probe=1`: per call its blocks (the
    grid's count), the SMs and the open/entry/end times in order; --probe-csv has every block of every
    replay; an artifact without the probe is refused naming the compile flag, as are other targets."""
    import csv
    import json
    import re
    model, plain = small_model
    art, table = tmp_path / "m.opv", tmp_path / "p.csv"
    p = sim.run("compile", model, "--target", "cuda", "--cuda-arch", "compute_90", "-o", art, "--cuda-tune", "probe=1")
    assert p.returncode == 0, describe(p)
    p = sim.run("bench", art, "--iters", "1", "--warmup", "0", "--probe", "2", "--probe-csv", table, "--json", timeout=300)
    assert p.returncode == 0, describe(p)
    out = json.loads(p.stdout)
    rows = out["probe"]
    assert [r["call"] for r in rows] == list(range(out["calls"])), out
    for r in rows:
        assert r["blocks"] >= 1 and 1 <= r["sms"] <= r["blocks"] and r["per_sm"] >= 1, r
        assert 0 <= r["open_us"] <= r["entry_us"] <= r["entry_last_us"] <= r["end_last_us"], r
        assert r["end_median_us"] <= r["end_last_us"] <= out["probe_span_us"], r
        assert r["work_cycles"] >= 0, r
    with open(table) as f:
        recs = list(csv.DictReader(f))
    assert len(recs) == 2 * sum(r["blocks"] for r in rows), len(recs)
    first = [r for r in recs if r["replay"] == "0" and r["call"] == "0"]
    assert sorted(int(r["block"]) for r in first) == list(range(rows[0]["blocks"])), first[:3]
    assert all(float(r["open_us"]) <= float(r["entry_us"]) <= float(r["end_us"]) for r in recs)
    assert all(0 <= int(r["entry_cycles"]) <= int(r["end_cycles"]) for r in recs) and any(int(r["end_cycles"]) > 0 for r in recs)
    p = sim.run("bench", art, "--iters", "1", "--warmup", "0", "--probe", "1", timeout=300)
    assert p.returncode == 0 and "probe: the replay of median span" in p.stdout, describe(p)
    assert re.search(r"sums over the calls: gaps -?[0-9.]+ us, tails [0-9.]+ us", p.stdout), describe(p)
    p = sim.run("bench", plain, "--iters", "1", "--warmup", "0", "--probe", "1", timeout=300)
    assert p.returncode != 0 and "compile with --cuda-tune probe=1" in p.stderr, describe(p)
    p = sim.run("bench", plain, "--iters", "1", "--probe-csv", table, timeout=300)
    assert p.returncode == 2 and "--probe-csv needs --probe N" in p.stderr, describe(p)


def test_bench_device_inputs_on_cudasim(sim, small_model, tmp_path):
    """`bench --cuda-inputs device --staged-inputs` runs (the inputs uploaded once, then every timed
    and profiled run on them in device memory); `run --cuda-inputs device` gives the bytes of a run
    with copies; device is refused for outputs, and a misspelt mode names the four."""
    import json
    _, art = small_model
    p = sim.run("bench", art, "--iters", "2", "--warmup", "1", "--cuda-inputs", "device", "--staged-inputs", "--json",
                timeout=300)
    assert p.returncode == 0, describe(p)
    out = json.loads(p.stdout)
    assert out["median_ms"] > 0 and len(out["kernels"]) >= 3 and out["inputs"] == "device", out
    p = sim.run("bench", art, "--iters", "1", "--warmup", "0", "--staged-inputs", timeout=300)
    assert p.returncode == 0 and "inputs: written once where the backend reads them" in p.stdout, describe(p)
    outs = {}
    for mode in ("copy", "device"):
        o = tmp_path / f"{mode}.npz"
        p = sim.run("run", art, "--seed", "3", "--cuda-inputs", mode, "--staged-inputs", "-o", o)
        assert p.returncode == 0, describe(p)
        outs[mode] = load_npz(o)
    for k in outs["copy"]:
        assert outs["device"][k].tobytes() == outs["copy"][k].tobytes(), k
    p = sim.run("run", art, "--cuda-outputs", "device")
    assert p.returncode == 2 and "--cuda-outputs must be copy, mapped or auto, not 'device'" in p.stderr, describe(p)
    p = sim.run("run", art, "--cuda-inputs", "devices")
    assert p.returncode == 2 and "--cuda-inputs must be copy, mapped, auto or device" in p.stderr, describe(p)


def test_compile_help_names_every_tune_key(sim):
    """`compile --help` describes every key --cuda-tune takes (the keys as the refusal of an unknown
    one lists them)."""
    import re
    p = sim.run("compile", "x.onnx", "--target", "cuda", "--cuda-tune", "no_such_key=1", "-o", "x.opv")
    assert p.returncode == 2, describe(p)
    m = re.search(r"unknown key 'no_such_key' \(known: ([a-z0-9_, ]+)\)", p.stderr)
    assert m, describe(p)
    keys = m.group(1).split(", ")
    assert len(keys) >= 18 and "probe" in keys, keys
    p = sim.run("compile", "--help")
    assert p.returncode == 0, describe(p)
    text = " ".join(p.stdout.split())
    missing = [k for k in keys if not re.search(rf"\b{k} \(", text)]
    assert not missing, f"compile --help does not describe {missing}"
