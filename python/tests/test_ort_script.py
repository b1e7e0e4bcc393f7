"""One script written for onnxruntime (ort_script.py) run on onnxruntime and on sliceops, only its import
line changed, on the fixtures (lowered to standard ONNX, which onnxruntime runs) and the real exports:
the same inputs and outputs (names, shapes, types), metadata, outputs, and errors (same exception
class names, same messages after the runtime's name)."""

import re
from pathlib import Path

import onnxruntime as ort
import pytest
import sliceops
from conftest import (
    CANNOT_RUN,
    FIXTURES,
    REAL_MODELS,
    assert_close,
    fixture_feeds,
    fixture_path,
    real_feeds,
    real_path,
)

ort.set_default_logger_severity(3)
SCRIPT = (Path(__file__).parent / "ort_script.py").read_text()
IMPORT = "import onnxruntime\n"


def load_script(module_line):
    assert SCRIPT.count(IMPORT) == 1
    namespace = {"__name__": "ort_script"}
    exec(compile(SCRIPT.replace(IMPORT, module_line, 1), "ort_script.py", "exec"), namespace)
    return namespace["report"]


ON_ORT = load_script(IMPORT)
ON_SLICEOPS = load_script("import sliceops as onnxruntime\n")


def test_the_script_imports_the_runtime_it_is_given():
    assert ON_ORT.__globals__["onnxruntime"] is ort
    assert ON_SLICEOPS.__globals__["onnxruntime"] is sliceops


def without_runtime(message):
    """An error message without the runtime's name: `[ONNXRuntimeError] : 2 : ...` -> `2 : ...`."""
    return re.sub(r"^\[(ONNXRuntimeError|sliceops)\] : ", "", message)


def same_output_shape(got, want, actual):
    """Output shapes as both runtimes declare or infer them: the same rank; a fixed dim the same; a
    dim onnxruntime names (symbol or expression) named by sliceops too (shape inference may spell an
    expression differently, `N*3` or `3*N`), or a size sliceops infers where onnxruntime cannot, then
    the size of the output the run gave; where onnxruntime knows nothing (None), anything."""
    if want is None or got is None:
        return want == got
    if len(got) != len(want) or len(got) != len(actual):
        return False
    for g, w, a in zip(got, want, actual):
        if isinstance(w, int) and g != w:
            return False
        if isinstance(w, str) and not (isinstance(g, str) or g == a):
            return False
    return True


def compare(path, feeds):
    want = ON_ORT(str(path), feeds)
    got = ON_SLICEOPS(str(path), feeds)
    assert got["inputs"] == want["inputs"]
    assert [(n, t) for n, _, t in got["outputs"]] == [(n, t) for n, _, t in want["outputs"]]
    for (name, g, _), (_, w, _), a in zip(got["outputs"], want["outputs"], want["all"]):
        assert same_output_shape(g, w, a.shape), f"output {name}: {g} where onnxruntime says {w}"
    assert got["meta"] == want["meta"]
    assert got["providers"] == want["providers"] == ["CPUExecutionProvider"]
    assert got["threads"] == want["threads"] == 2
    assert got["subset_names"] == want["subset_names"]
    for key in ("all", "subset", "from_bytes"):
        assert len(got[key]) == len(want[key])
        for k, (g, w) in enumerate(zip(got[key], want[key])):
            assert_close(g, w, f"{path} {key} #{k}")
    assert got["errors"].keys() == want["errors"].keys()
    for what, w in want["errors"].items():
        g = got["errors"][what]
        assert w is not None and g is not None, f"{what}: {g} / {w}"
        assert g[0] == w[0], f"{what}: {g} where onnxruntime raises {w}"
        assert without_runtime(g[1]) == without_runtime(w[1]), f"{what}: {g[1]!r} where onnxruntime says {w[1]!r}"


@pytest.mark.parametrize("fixture", FIXTURES, ids=lambda f: f["name"])
def test_fixture(fixture, tmp_path):
    lowered = tmp_path / "lowered.onnx"
    lowered.write_bytes(sliceops.lower(fixture_path(fixture).read_bytes()))
    compare(lowered, fixture_feeds(fixture))


@pytest.mark.parametrize("model", [m for m in REAL_MODELS if m["name"] not in CANNOT_RUN], ids=lambda m: m["name"])
def test_real_export(model):
    compare(real_path(model), real_feeds(model, "a"))
