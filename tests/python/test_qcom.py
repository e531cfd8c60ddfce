"""The qcom backend on the simulated a630: a capture (tests/data/ir3) submitted as ONE PM4 stream
per inference through the virtual KGSL device (`opvision qcom run --device sim`), which decodes
the stream, runs every CP_EXEC_CS on the IR3 simulator and checks the ordering between
dispatches. Outputs must be bit-identical to `ir3 replay` and match onnxruntime; a stream with a
required barrier removed must be refused; `qcom decode` prints the dumped stream by name."""
import re

import numpy as np
import pytest

from opv_util import assert_error, describe, ort_run
from test_ir3_capture import DATA, SMALL_ARGS, reference


@pytest.fixture(scope="module")
def small(cli, tmp_path_factory):
    root = tmp_path_factory.mktemp("qcom")
    model = root / "ir3_small_fp16.onnx"
    p = cli.run("make-model", model, *SMALL_ARGS)
    assert p.returncode == 0, describe(p)
    return model, reference(model, root / "ref.npz", 7), root


def counts(stdout):
    line = [l for l in stdout.splitlines() if l.startswith("per inference:")]
    assert line, stdout
    return {k: int(v) for k, v in re.findall(r"(\w+)=(\d+)", line[0])}


def test_small_capture_bit_identical_to_replay_and_matches_onnxruntime(cli, small):
    model, ref, root = small
    q, r = root / "q.npz", root / "r.npz"
    p = cli.run("qcom", "run", DATA / "small_fp16", "--model", model, "--inputs", ref, "--ref", ref, "-o", q,
                "--device", "sim", "--runs", "2", "--dump-stream", root / "small.pm4")
    assert p.returncode == 0, describe(p)
    assert "repeat runs bit-identical: yes" in p.stdout
    c = counts(p.stdout)
    assert c["submissions"] == 1 and c["dispatches"] == 44
    assert c["barriers"] < c["dispatches"]  # only dependency edges
    assert c["bytes"] == (root / "small.pm4").stat().st_size
    print(p.stdout)
    p = cli.run("ir3", "replay", DATA / "small_fp16", "--model", model, "--inputs", ref, "-o", r, "--quiet")
    assert p.returncode == 0, describe(p)
    a, b = np.load(q), np.load(r)
    for name in b.files:
        assert a[name].tobytes() == b[name].tobytes(), name


def test_per_dispatch_stream_has_one_barrier_per_dispatch(cli, small):
    model, ref, _ = small
    p = cli.run("qcom", "run", DATA / "small_fp16", "--model", model, "--inputs", ref, "--ref", ref,
                "--barriers", "per-dispatch")
    assert p.returncode == 0, describe(p)
    c = counts(p.stdout)
    assert c["barriers"] == c["dispatches"] - 1 and c["cache_flushes"] == c["dispatches"]


def test_removed_barrier_is_caught(cli, small):
    model, ref, _ = small
    p = cli.run("qcom", "run", DATA / "small_fp16", "--model", model, "--inputs", ref, "--drop-barrier", "0")
    assert_error(p, "read-after-write hazard")
    # without the check the same stream runs (the simulator is sequential): the check is what catches it
    p = cli.run("qcom", "run", DATA / "small_fp16", "--model", model, "--inputs", ref, "--drop-barrier", "0", "--no-check")
    assert p.returncode == 0, describe(p)


def test_decode_names_packets_and_refuses_bad_streams(cli, small, tmp_path):
    _, _, root = small
    stream = root / "small.pm4"
    if not stream.exists():
        pytest.skip("needs the stream of the first test")
    p = cli.run("qcom", "decode", stream)
    assert p.returncode == 0, describe(p)
    for name in ["CP_EXEC_CS", "CP_LOAD_STATE6_FRAG", "SP_CS_NDRANGE_0", "SP_CS_CNTL_0", "FULLREGFOOTPRINT",
                 "CP_WAIT_FOR_IDLE", "STATE_BLOCK=0xd", "SP_CS_UAV_BASE"]:
        assert name in p.stdout, name
    data = stream.read_bytes()
    for bad, what in [(data[:-4], "truncated"), (data[:-2], "whole number of dwords"),
                      (b"\x00\x80\x7f\x70", "unknown opcode"), (b"\x78\x56\x34\x12", "not a type-4 or type-7")]:
        f = tmp_path / "bad.pm4"
        f.write_bytes(bad)
        assert_error(cli.run("qcom", "decode", f), what)


def test_fixture_capture_through_qcom_matches_onnxruntime(cli, fixture_paths):
    model, ref = fixture_paths
    p = cli.run("qcom", "run", DATA / "t12_fp16", "--model", model, "--inputs", ref, "--ref", ref, timeout=900)
    assert p.returncode == 0, describe(p)
    print(p.stdout)
    c = counts(p.stdout)
    assert c["submissions"] == 1 and c["dispatches"] == 109
