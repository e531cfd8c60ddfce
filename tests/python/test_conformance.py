"""ONNX backend node-test conformance (tests/python/conformance.py) on the reference and cpu
backends: no wrong result, no crash, and at least PASS_FLOOR passing cases per backend.

Raise PASS_FLOOR when operators are added (issue 12). Measured with onnx 1.23, shape-carrying
inputs frozen (the runner's default): 946 passing cases per backend."""
import json
import pathlib
import sys

import pytest

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import conformance  # noqa: E402

PASS_FLOOR = 940


def test_onnx_node_conformance(cli, tmp_path):
    pytest.importorskip("onnx")
    out = tmp_path / "conformance.json"
    rc = conformance.main(["--opvision", cli.path, "--backend", "reference,cpu", "--json", str(out), "--quiet"])
    doc = json.loads(out.read_text())
    bad = [f"{name} [{b}]: {r[b]['status']}: {r[b]['message']}"
           for name, r in doc["cases"].items() for b in doc["backends"]
           if r[b]["status"] in ("wrong", "crash")]
    assert not bad, "wrong or crashed cases:\n" + "\n".join(bad[:50])
    assert rc == 0
    for b in doc["backends"]:
        s = doc["summary"][b]
        assert s["pass"] >= PASS_FLOOR, f"{b}: {s['pass']} cases pass, floor is {PASS_FLOOR} ({s})"
