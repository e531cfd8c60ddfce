"""ONNX backend node-test conformance (tests/python/conformance.py) on the reference and cpu
backends: no wrong result, no crash, and at least PASS_FLOOR passing cases per backend; and on
the cuda backend through cudasim (the PTX simulator behind a stand-in libcuda, no GPU needed):
no wrong result, no crash, at least CUDA_PASS_FLOOR passing cases (the others are refused at
compile time: ops the cuda target has no kernel for).

Raise the floors when operators are added (issue 12). Measured with onnx 1.23, shape-carrying
inputs frozen (the runner's default): 946 passing cases on reference and cpu, 883 on cuda
(2026-12-05; 72 cases refused by the cuda target, the rest by the importer)."""
import json
import pathlib
import sys

import pytest

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent))
import conformance  # noqa: E402

PASS_FLOOR = 940
CUDA_PASS_FLOOR = 875


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


def test_onnx_node_conformance_cuda_on_cudasim(cli, tmp_path, monkeypatch):
    pytest.importorskip("onnx")
    lib = pathlib.Path(cli.path).resolve().parent / "libopv_cudasim.so"
    if not lib.is_file():
        pytest.skip(f"no {lib}: this build has no cuda target")
    monkeypatch.setenv("OPV_CUDA_DRIVER", str(lib))
    out = tmp_path / "conformance_cuda.json"
    rc = conformance.main(["--opvision", cli.path, "--backend", "cuda", "--json", str(out), "--quiet"])
    doc = json.loads(out.read_text())
    bad = [f"{name}: {r['cuda']['status']}: {r['cuda']['message']}"
           for name, r in doc["cases"].items() if r["cuda"]["status"] in ("wrong", "crash")]
    assert not bad, "wrong or crashed cases on cuda:\n" + "\n".join(bad[:50])
    assert rc == 0
    s = doc["summary"]["cuda"]
    assert s["pass"] >= CUDA_PASS_FLOOR, f"cuda: {s['pass']} cases pass, floor is {CUDA_PASS_FLOOR} ({s})"
