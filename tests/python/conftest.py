"""pytest configuration for the CLI-level tests: the --opvision option and shared fixtures.

Every test drives the `opvision` binary as a subprocess and compares it with onnxruntime. When
the binary is missing, every test is skipped with one message instead of failing."""
import importlib.util
import os
import pathlib
import sys

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


@pytest.fixture(scope="session")
def package_dir(pytestconfig):
    """<build>/python: where the build assembles the `opvision` Python package (python/opvision
    plus the nanobind module), next to the CLI given by --opvision. Skipped when the build has no
    module only if nanobind is not importable here (the build then skips it, saying so); with
    nanobind importable, a missing module is a failure."""
    d = _resolve(pytestconfig.getoption("--opvision")).parent / "python"
    if not list((d / "opvision").glob("_opvision*.so")):
        why = f"the opvision Python module is not built in {d / 'opvision'}"
        if importlib.util.find_spec("nanobind") is None:
            pytest.skip(f"{why} (nanobind is not installed: scripts/setup.sh installs it)")
        pytest.fail(f"{why}, although nanobind is installed: reconfigure the build (cmake -S . -B BUILD)")
    return d


@pytest.fixture(scope="session")
def opvision(package_dir):
    """The `opvision` package from the build directory (imported ahead of any installed one)."""
    sys.path.insert(0, str(package_dir))
    import opvision as pkg
    assert pathlib.Path(pkg.__file__).resolve().parent == (package_dir / "opvision").resolve(), pkg.__file__
    return pkg
