"""opvision.replay (issue 16, deliverable 2): model replay over a dataset of drive segments on Ray
Data, against the single-process InferenceSession.run of the same frames, bit for bit.

One real local Ray (2 CPUs) is started per module (the `ray_cluster` fixture); the tests that
need it skip when Ray Data is not installed. The dataset checks and the CLI's errors run in the
driver before Ray is touched, so those tests run without Ray, as does the check that
`import opvision` does not need it."""
import os
import shutil
import subprocess
import sys
import zipfile

import numpy as np
import pytest

from opv_util import describe, readme_python_block

SMALL = ["--height", "64", "--width", "128", "--widths", "16,32,48,64", "--depths", "1,1,2,1",
         "--hidden", "64"]
FRAMES = {"seg0": 3, "seg1": 2, "seg2": 4, "seg3": 3}   # segment -> frames (uneven on purpose)


@pytest.fixture(scope="module")
def replay(opvision):
    import opvision.replay as mod
    return mod


@pytest.fixture(scope="module")
def ray_cluster(package_dir):
    ray = pytest.importorskip("ray", reason="Ray is not installed (scripts/setup.sh installs ray[data])")
    pytest.importorskip("ray.data", reason="Ray Data is not installed (pip install 'ray[data]')")
    # workers import opvision from the build tree, as this process does
    ray.init(num_cpus=2, include_dashboard=False, logging_level="WARNING",
             runtime_env={"env_vars": {"PYTHONPATH": str(package_dir)}})
    yield ray
    ray.shutdown()


@pytest.fixture(scope="module")
def model(cli, tmp_path_factory):
    root = tmp_path_factory.mktemp("replay_model")
    onnx_path, opv = root / "small.onnx", root / "small.opv"
    for args in (("make-model", onnx_path, *SMALL), ("compile", onnx_path, "-o", opv)):
        p = cli.run(*args)
        assert p.returncode == 0, describe(p)
    return opv


@pytest.fixture(scope="module")
def model_b3(cli, model):
    """The same model compiled with --batch 3: inputs and outputs [3, ...]."""
    art = model.parent / "small_b3.opv"
    p = cli.run("compile", model.parent / "small.onnx", "-o", art, "--batch", "3")
    assert p.returncode == 0, describe(p)
    return art


@pytest.fixture(scope="module")
def dataset(opvision, model, tmp_path_factory):
    """(dataset dir, {segment: {output name: (F, *shape) expected}}): the shards of FRAMES, and
    what a single-process session gives for each frame."""
    d = tmp_path_factory.mktemp("replay_ds")
    s = opvision.InferenceSession(model, backend="cpu", threads=1)
    rng = np.random.default_rng(16)
    expected = {}
    for seg, frames in FRAMES.items():
        feeds = {i.name: rng.integers(0, 256, [frames] + i.shape, dtype=np.uint8) for i in s.get_inputs()}
        np.savez(d / f"{seg}.npz", **feeds)
        runs = [s.run(None, {k: v[f] for k, v in feeds.items()}) for f in range(frames)]
        expected[seg] = {o.name: np.stack([r[j] for r in runs]) for j, o in enumerate(s.get_outputs())}
    (d / "notes.txt").write_text("not a shard: ignored\n")
    return d, expected


def test_readme_replay(package_dir, model, tmp_path):
    """The README's replay block, run as written in a fresh interpreter (which starts its own
    local Ray) where the quick start's model.opv exists. First in this file, so it runs before
    the module's Ray is up and the two do not share the 2 CPUs."""
    pytest.importorskip("ray.data", reason="Ray Data is not installed (pip install 'ray[data]')")
    shutil.copy(model, tmp_path / "model.opv")
    script = tmp_path / "readme_replay.py"
    script.write_text(readme_python_block("Replay over many drives (Ray)"))
    env = dict(os.environ, PYTHONPATH=str(package_dir) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    r = subprocess.run([sys.executable, str(script)], cwd=tmp_path, capture_output=True, text=True,
                       timeout=300, env=env)
    assert r.returncode == 0, f"stdout:\n{r.stdout}\nstderr:\n{r.stderr[-5000:]}"
    assert sorted(os.listdir(tmp_path / "outputs")) == ["drive0_seg0.npz", "drive0_seg1.npz", "drive1_seg0.npz"]


def check_outputs(replay, out_dir, expected, fmt="npz"):
    """Every segment's output equals the single-process run bit for bit; nothing else (no
    temporary file, no second copy) is in out_dir."""
    assert sorted(os.listdir(out_dir)) == sorted(f"{seg}.{fmt}" for seg in expected)
    for seg, want in expected.items():
        got = replay.read_segment(str(out_dir / f"{seg}.{fmt}"))
        assert sorted(got) == sorted(want), seg
        for name, ref in want.items():
            assert got[name].dtype == ref.dtype and got[name].shape == ref.shape, (seg, name)
            assert np.array_equal(got[name], ref), (seg, name)   # bit for bit (no NaN here)


@pytest.mark.parametrize("workers,fmt", [(1, "npz"), (2, "npz"), (2, "parquet")])
def test_replay_equals_single_process(replay, ray_cluster, model, dataset, tmp_path, workers, fmt):
    if fmt == "parquet":
        pytest.importorskip("pyarrow")
    ds, expected = dataset
    r = replay.replay(model, ds, tmp_path, workers=workers, fmt=fmt, progress=False)
    assert [row["segment"] for row in r.segments] == sorted(FRAMES)       # each exactly once
    assert all(row["status"] == "written" for row in r.segments)
    assert {row["segment"]: row["frames"] for row in r.segments} == FRAMES
    assert r.frames == sum(FRAMES.values()) and r.skipped == []
    assert len({row["pid"] for row in r.segments}) <= workers
    check_outputs(replay, tmp_path, expected, fmt)


def test_replay_cpu_precision_bf16(opvision, replay, ray_cluster, model, dataset, tmp_path):
    """cpu_precision reaches the workers' sessions: outputs equal a bf16 session's, frame by frame."""
    ds, expected = dataset
    s = opvision.InferenceSession(model, backend="cpu", threads=1, cpu_precision="bf16")
    want = {}
    for seg in FRAMES:
        shard = dict(np.load(ds / f"{seg}.npz"))
        runs = [s.run(None, {k: v[f] for k, v in shard.items()}) for f in range(FRAMES[seg])]
        want[seg] = {o.name: np.stack([r[j] for r in runs]) for j, o in enumerate(s.get_outputs())}
    r = replay.replay(model, ds, tmp_path, workers=1, progress=False, cpu_precision="bf16")
    assert all(row["status"] == "written" for row in r.segments)
    check_outputs(replay, tmp_path, want, "npz")


def test_rerun_skips_complete_segments(replay, ray_cluster, model, dataset, tmp_path):
    ds, expected = dataset
    for seg, outs in expected.items():   # as a complete earlier run leaves them
        replay.write_atomic(replay.output_path(str(tmp_path), seg, "npz"), outs, "npz")
    stamps = {p.name: p.stat().st_mtime_ns for p in tmp_path.iterdir()}
    # all complete: nothing reaches Ray, nothing is rewritten
    r = replay.replay(model, ds, tmp_path, workers=2, progress=False)
    assert r.segments == [] and r.skipped == sorted(FRAMES)
    assert {p.name: p.stat().st_mtime_ns for p in tmp_path.iterdir()} == stamps
    # one missing, one cut short by someone else's copy: only those two are replayed
    (tmp_path / "seg1.npz").unlink()
    with np.load(tmp_path / "seg2.npz") as z:
        np.savez(tmp_path / "seg2.npz", **{k: z[k][:1] for k in z.files})
    r = replay.replay(model, ds, tmp_path, workers=2, progress=False)
    assert [row["segment"] for row in r.segments] == ["seg1", "seg2"]
    assert r.skipped == ["seg0", "seg3"]
    check_outputs(replay, tmp_path, expected)
    # skip_existing=False (--no-skip): every segment replayed again, each output replaced whole
    r = replay.replay(model, ds, tmp_path, workers=2, progress=False, skip_existing=False)
    assert [row["segment"] for row in r.segments] == sorted(FRAMES) and r.skipped == []
    assert all(row["status"] == "written" for row in r.segments)
    check_outputs(replay, tmp_path, expected)


def test_killed_worker_is_retried(replay, ray_cluster, model, dataset, tmp_path):
    """The actor replaying seg2 kills its own process once (os._exit, after writing the
    temporary output, before the rename: the test-only crash_once hook); Ray restarts it and
    retries the segment. Every segment is then written once: one result row each, no temporary
    file left, outputs equal to the single-process run."""
    ds, expected = dataset
    out, marker = tmp_path / "out", tmp_path / "crashed"
    r = replay.replay(model, ds, out, workers=2, progress=False, crash_once=("seg2", str(marker)))
    assert marker.exists(), "the worker did not crash: the hook was not reached"
    dead_pid = int(marker.read_text())
    assert [row["segment"] for row in r.segments] == sorted(FRAMES)
    assert all(row["status"] == "written" for row in r.segments)
    seg2 = next(row for row in r.segments if row["segment"] == "seg2")
    assert seg2["pid"] != dead_pid, "seg2's row came from the process that died"
    check_outputs(replay, out, expected)


def test_segment_failing_in_a_worker(replay, ray_cluster, model, dataset, tmp_path):
    """A shard whose headers pass the driver's check but whose data is cut short fails in its
    worker: SegmentsFailed names it, the other segments are written (and equal), nothing of the
    failed one is left in the output directory."""
    ds, expected = dataset
    bad = tmp_path / "ds"
    bad.mkdir()
    for seg in ("seg0", "seg1"):
        shutil.copy(ds / f"{seg}.npz", bad)
    with zipfile.ZipFile(ds / "seg2.npz") as src, zipfile.ZipFile(bad / "seg2.npz", "w") as dst:
        for info in src.infolist():
            data = src.read(info)
            dst.writestr(info.filename, data[:1000] if info.filename == "big_img.npy" else data)
    with pytest.raises(replay.SegmentsFailed) as e:
        replay.replay(model, bad, tmp_path / "out", workers=1, progress=False)
    assert list(e.value.failures) == ["seg2"]
    assert "1 of 3 segments failed" in str(e.value) and "seg2.npz" in str(e.value), str(e.value)
    assert "Traceback" not in str(e.value)
    check_outputs(replay, tmp_path / "out", {k: expected[k] for k in ("seg0", "seg1")})


def design_errors(got, ref):
    """DESIGN.md's metrics: rel_l2 = ||got - ref|| / ||ref||, max_abs_rel = max|got - ref| / max|ref|."""
    d = np.abs(got.astype(np.float64) - ref.astype(np.float64))
    return (float(np.linalg.norm(d)) / (float(np.linalg.norm(ref)) or 1.0),
            float(d.max()) / (float(np.abs(ref).max()) or 1.0))


def grouped_by_hand(opvision, art, ds, n):
    """{segment: {output: (F, 1, ...)}}: the batch-n session run on each segment's frames n at a
    time, the last group zero-padded and its padding's rows dropped (what replay should do)."""
    s = opvision.InferenceSession(art, backend="cpu", threads=1)
    want = {}
    for seg, frames in FRAMES.items():
        shard = dict(np.load(ds / f"{seg}.npz"))
        rows = {o.name: [] for o in s.get_outputs()}
        for g in range(0, frames, n):
            feed = {}
            for k, v in shard.items():
                x = np.zeros((n,) + v.shape[2:], v.dtype)
                part = v[g:g + n, 0]
                x[:len(part)] = part
                feed[k] = x
            for o, y in zip(s.get_outputs(), s.run(None, feed)):
                rows[o.name].append(y)
        want[seg] = {k: np.concatenate(v)[:frames, None] for k, v in rows.items()}
    return want


@pytest.mark.parametrize("fmt", ["npz", "parquet"])
def test_batch_artifact_replays_frames_in_groups(opvision, replay, ray_cluster, model_b3, dataset, tmp_path, fmt):
    """A batch-3 artifact over the batch-1 dataset (segments of 3, 2, 4 and 3 frames: a full
    group; a padded group only; a full and a padded one): one output per frame in the batch-1
    layout, equal bit for bit to the batch-3 session run on the frames grouped by hand, and to
    the batch-1 artifact's single-process outputs within the cpu backend's fp32 tolerance
    (DESIGN.md: rel_l2 and max_abs_rel <= 1e-4)."""
    if fmt == "parquet":
        pytest.importorskip("pyarrow")
    ds, expected = dataset
    assert opvision.InferenceSession(model_b3).batch == 3
    r = replay.replay(model_b3, ds, tmp_path, workers=2, fmt=fmt, progress=False)
    assert r.batch == 3 and r.frames == sum(FRAMES.values())
    assert {row["segment"]: row["frames"] for row in r.segments} == FRAMES
    assert all(row["status"] == "written" for row in r.segments)
    check_outputs(replay, tmp_path, grouped_by_hand(opvision, model_b3, ds, 3), fmt)
    for seg, want in expected.items():
        got = replay.read_segment(str(tmp_path / f"{seg}.{fmt}"))
        for name, ref in want.items():
            assert got[name].shape == ref.shape and got[name].dtype == ref.dtype, (seg, name)
            for f in range(FRAMES[seg]):   # frame by frame: each row is its own frame's
                rel_l2, max_abs_rel = design_errors(got[name][f], ref[f])
                assert rel_l2 <= 1e-4 and max_abs_rel <= 1e-4, (seg, name, f, rel_l2, max_abs_rel)
    # the batch-1 replay's complete outputs are this one's too (same layout): nothing to redo
    r = replay.replay(model_b3, ds, tmp_path, workers=1, fmt=fmt, progress=False)
    assert r.segments == [] and r.skipped == sorted(FRAMES)


# ------------------------------------------------------------------ bad input (no Ray needed)
def write_shard(d, name, **arrays):
    d.mkdir(exist_ok=True)
    np.savez(d / f"{name}.npz", **arrays)
    return d


def frames_of(opvision, model, n=2, dtype=np.uint8):
    s = opvision.InferenceSession(model, backend="cpu", threads=1)
    return {i.name: np.zeros([n] + i.shape, dtype) for i in s.get_inputs()}


def bad_datasets(opvision, model, root):
    good = frames_of(opvision, model)
    img_shape = good["img"].shape
    cases = {
        "missing": (root / "nope", ["does not exist"]),
        "empty": (root / "empty", ["no .npz or .npy shards"]),
        "no_input": (write_shard(root / "no_input", "segA", img=good["img"]), ["segA.npz", "no member 'big_img'"]),
        "dtype": (write_shard(root / "dtype", "segB", **frames_of(opvision, model, dtype=np.float32)),
                  ["segB.npz", "float32", "uint8"]),
        "shape": (write_shard(root / "shape", "segC", img=good["img"], big_img=good["big_img"][:, 0]),
                  ["segC.npz", "'big_img'", "shape (2, 12, 64, 128)", "(F, 1, 12, 64, 128)"]),
        "frames": (write_shard(root / "frames", "segD", img=good["img"], big_img=np.zeros((3,) + img_shape[1:], np.uint8)),
                   ["segD.npz", "3 frames"]),
        "npy_two_inputs": (root / "npy", ["segE.npy", "one array", "2 inputs"]),
        "not_a_zip": (root / "junk", ["segF.npz", "cannot read"]),
    }
    (root / "empty").mkdir()
    (root / "npy").mkdir()
    np.save(root / "npy" / "segE.npy", good["img"])
    (root / "junk").mkdir()
    (root / "junk" / "segF.npz").write_bytes(b"not a zip file")
    return cases


def test_bad_dataset_errors(opvision, replay, model, tmp_path):
    for tag, (d, needles) in bad_datasets(opvision, model, tmp_path).items():
        with pytest.raises(replay.DatasetError) as e:
            replay.replay(model, d, tmp_path / f"out_{tag}", workers=1, progress=False)
        for n in needles:
            assert n in str(e.value), (tag, str(e.value))


def test_frame_specs(opvision, replay, model, model_b3):
    """frame_specs: a batch-1 model's frame is its input; a batch-3 artifact's is one sample
    [1, ...] of each input and output (3 frames per inference); an artifact whose recorded batch
    its inputs or outputs do not carry is refused naming the tensor."""
    s1, s3 = opvision.InferenceSession(model), opvision.InferenceSession(model_b3)
    assert s1.batch is None
    n, ins, outs = replay.frame_specs(s1)
    assert n == 1 and [i.shape for i in ins] == [i.shape for i in s1.get_inputs()]
    n, ins, outs = replay.frame_specs(s3)
    assert n == 3
    assert [(i.name, i.dtype, i.shape) for i in ins] == [(i.name, i.dtype, i.shape) for i in s1.get_inputs()]
    assert [(o.name, o.dtype, o.shape) for o in outs] == [(o.name, o.dtype, o.shape) for o in s1.get_outputs()]

    class Mismatched:   # what a batch-3 meta over a batch-1 output would look like
        batch = 3
        get_inputs = s3.get_inputs
        get_outputs = s1.get_outputs
    with pytest.raises(opvision.Error, match=r"batch-3 artifact .* output '.*' has shape \[1, "):
        replay.frame_specs(Mismatched())


def test_batch_artifact_bad_dataset(opvision, replay, model_b3, tmp_path):
    """A dataset whose frames are already batched ((F, 3, ...) instead of (F, 1, ...)) is refused
    before Ray starts, naming the shard, the expected per-frame shape and the artifact's batch."""
    d = write_shard(tmp_path / "prebatched", "segP", **frames_of(opvision, model_b3))   # (2, 3, ...) each
    with pytest.raises(replay.DatasetError) as e:
        replay.replay(model_b3, d, tmp_path / "out", workers=1, progress=False)
    for needle in ("segP.npz", "shape (2, 3, 12, 64, 128)", "(F, 1, 12, 64, 128)", "batch-3 artifact"):
        assert needle in str(e.value), str(e.value)
    assert not (tmp_path / "out").exists()


def run_cli(package_dir, *args, cwd=None, extra=""):
    env = dict(os.environ, PYTHONPATH=str(package_dir) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    code = extra + "import sys; from opvision.replay import main; sys.exit(main(sys.argv[1:]))"
    return subprocess.run([sys.executable, "-c", code, *map(str, args)], capture_output=True, text=True,
                          timeout=120, env=env, cwd=cwd)


def test_cli_bad_input_is_one_line(opvision, package_dir, model, tmp_path):
    """The CLI: exit 2 and one `opvision.replay: error:` line naming the shard, no traceback."""
    cases = bad_datasets(opvision, model, tmp_path)
    for tag in ("missing", "shape", "not_a_zip"):
        d, needles = cases[tag]
        p = run_cli(package_dir, model, d, tmp_path / "out")
        assert p.returncode == 2, describe(p)
        assert p.stderr.startswith("opvision.replay: error: ") and "Traceback" not in p.stderr, describe(p)
        assert all(n in p.stderr for n in needles), describe(p)
    p = run_cli(package_dir, tmp_path / "missing.opv", cases["shape"][0], tmp_path / "out")
    assert p.returncode == 2 and "missing.opv" in p.stderr and "Traceback" not in p.stderr, describe(p)
    p = run_cli(package_dir, "--help")
    assert p.returncode == 0 and "skipped" in p.stdout and "--address" in p.stdout, describe(p)
    assert "batch-N MODEL (opvision compile --batch N) replays the same dataset N frames per inference" in \
        " ".join(p.stdout.split()), describe(p)


def test_import_without_ray(opvision, package_dir, model, dataset, tmp_path):
    """With Ray absent, `import opvision` (and opvision.replay) works; replaying says what to
    install, in one line."""
    block = "import sys; sys.modules['ray'] = None\nimport opvision, opvision.replay\n"
    p = run_cli(package_dir, model, dataset[0], tmp_path / "out", extra=block)
    assert p.returncode == 2, describe(p)
    assert "pip install 'ray[data]'" in p.stderr and "Traceback" not in p.stderr, describe(p)
