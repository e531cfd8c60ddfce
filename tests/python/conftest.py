"""pytest configuration for the CLI-level tests: the --opvision option and shared fixtures.

Every test drives the `opvision` binary as a subprocess and compares it with onnxruntime. When
the binary is missing, every test is skipped with one message instead of failing."""
import os
import pathlib

import pytest

from opv_util import Cli

REPO = pathlib.Path(__file__).resolve().parents[2]


def pytest_addoption(parser):
    parser.addoption("--opvision", action="store", default="./build/opvision",
                     help="path of the opvision binary under test (default ./build/opvision, "
                          "relative paths from the current directory, then the repository root)")


def _resolve(path):
    p = pathlib.Path(path)
    if p.is_absolute():
        return p
    for base in (pathlib.Path.cwd(), REPO):
        if (base / p).exists():
            return (base / p).resolve()
    return (pathlib.Path.cwd() / p).resolve()


def pytest_collection_modifyitems(config, items):
    binary = _resolve(config.getoption("--opvision"))
    if binary.is_file() and os.access(binary, os.X_OK):
        return
    skip = pytest.mark.skip(reason=f"opvision binary not found at {binary}: build it "
                                   "(make opvision) or pass --opvision PATH")
    for item in items:
        item.add_marker(skip)


@pytest.fixture(scope="session")
def cli(pytestconfig):
    return Cli(str(_resolve(pytestconfig.getoption("--opvision"))))


@pytest.fixture(scope="session")
def shared_models():
    """<repo>/../shared/models, where the fixture ONNX models live (skip when absent)."""
    d = REPO.parent / "shared" / "models"
    if not d.is_dir():
        pytest.skip(f"shared fixture directory {d} is absent")
    return d


FIXTURE = "opvision_t12_fp16"


@pytest.fixture(scope="session")
def fixture_paths(shared_models):
    """The shared fixture model and its onnxruntime reference (skip when absent)."""
    model = shared_models / f"{FIXTURE}.onnx"
    ref = shared_models / f"{FIXTURE}_ref.npz"
    if not model.exists() or not ref.exists():
        pytest.skip(f"fixture {model} or {ref} missing")
    return model, ref
