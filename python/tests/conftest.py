"""Shared helpers: the shipped fixtures (models/*) and real exports (models/real/*), the CLI to compare
with (SLICEOPS_BIN, else target/release/sliceops), and exact comparisons."""

import copy
import json
import os
import random
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[2]
MODELS = ROOT / "models"
REAL = MODELS / "real"

FIXTURES = json.loads((MODELS / "manifest.json").read_text())["fixtures"]
REAL_MODELS = json.loads((REAL / "manifest.json").read_text())["models"]
# Models that do not run yet, and the op that stops them (tests/real_models.py lists the same).
CANNOT_RUN = {}  # every real export runs
SIZES = ("a", "b")


def escape(name):
    """A value name as a file name: '%' is '%25', '/' is '%2F'."""
    return name.replace("%", "%25").replace("/", "%2F")


def fixture_path(fixture):
    return MODELS / fixture["name"] / "model.onnx"


def real_path(model):
    return REAL / model["name"] / "model.onnx"


def fixture_feeds(fixture):
    return {
        n: np.load(MODELS / fixture["name"] / "inputs" / f"{escape(n)}.npy", allow_pickle=False)
        for n in fixture["inputs"]
    }


def fixture_expected(fixture):
    return [
        np.load(MODELS / fixture["name"] / "expected" / f"{escape(n)}.npy", allow_pickle=False)
        for n in fixture["outputs"]
    ]


def real_feeds(model, size):
    folder = REAL / model["name"] / "inputs" / size
    return {n: np.load(folder / f"{escape(n)}.npy", allow_pickle=False) for n in model["inputs"]}


def real_expected(model, size):
    folder = REAL / model["name"] / "expected" / size
    return [np.load(folder / f"{escape(n)}.npy", allow_pickle=False) for n in model["outputs"]]


def assert_same(got, want, what=""):
    """Same dtype, shape and bits (-0.0 and NaN payloads included)."""
    got = np.asarray(got)
    assert got.dtype == want.dtype, f"{what}: dtype {got.dtype}, expected {want.dtype}"
    assert got.shape == want.shape, f"{what}: shape {got.shape}, expected {want.shape}"
    assert np.ascontiguousarray(got).tobytes() == np.ascontiguousarray(want).tobytes(), f"{what}: values differ"


def assert_close(got, want, what=""):
    """Same dtype and shape; exact for integers and booleans, rtol 1e-3 / atol 1e-4 for floats (the
    same model on two runtimes, as tests/real_models.py compares)."""
    got = np.asarray(got)
    assert got.dtype == want.dtype, f"{what}: dtype {got.dtype}, expected {want.dtype}"
    assert got.shape == want.shape, f"{what}: shape {got.shape}, expected {want.shape}"
    if np.issubdtype(want.dtype, np.floating):
        np.testing.assert_allclose(got, want, rtol=1e-3, atol=1e-4, err_msg=what)
    else:
        np.testing.assert_array_equal(got, want, err_msg=what)


@pytest.fixture(scope="session")
def cli():
    """Runs the sliceops binary; returns the CompletedProcess (text)."""
    binary = os.environ.get("SLICEOPS_BIN") or str(ROOT / "target" / "release" / "sliceops")
    if not Path(binary).is_file():
        pytest.fail(f"the sliceops binary is not at {binary}: build it or set SLICEOPS_BIN")

    def run(*args):
        return subprocess.run([binary, *map(str, args)], capture_output=True, text=True, timeout=600)

    return run


def cli_error(proc):
    """The message of the CLI's `error: ...` line."""
    assert proc.returncode == 1, proc.stderr
    lines = [l for l in proc.stderr.splitlines() if l.startswith("error: ")]
    assert len(lines) == 1, proc.stderr
    return lines[0][len("error: "):]


# The analysis may write the same dim in either of two equal forms from one run to the next
# (`(u+3)/4` or `((u+1)/2+1)/2`; seen with the CLI alone too): reports are compared up to equal forms,
# each pair checked equal by evaluating both at many bindings of their symbols (tests/real_models.py's
# evaluator).
sys.path.insert(0, str(ROOT / "tests"))
from real_models import evaluate, symbols_in  # noqa: E402


def same_dim(a, b):
    if a == b:
        return True
    if isinstance(a, int) and isinstance(b, int):
        return False
    names = symbols_in(str(a)) | symbols_in(str(b))
    rng = random.Random(0)
    for _ in range(50):
        values = {n: rng.randint(1, 500) for n in names}
        if evaluate(str(a), values) != evaluate(str(b), values):
            return False
    return True


def same_dims(a, b):
    return a is not None and b is not None and len(a) == len(b) and all(map(same_dim, a, b))


def assert_same_report(got, want):
    """`sliceops infer --format json` reports equal, a dim's form aside (see same_dim)."""
    got = copy.deepcopy(got)
    for g, w in zip(got["values"], want["values"]):
        if g.get("name") == w.get("name") and same_dims(g.get("shape"), w.get("shape")):
            g["shape"], g["dims"] = w["shape"], w["dims"]
            if same_dims(g.get("value"), w.get("value")):
                g["value"] = w["value"]
    assert got == want
