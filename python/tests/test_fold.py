"""sliceops.fold and sliceops.lower against the CLI's `fold` and `lower`, and onnxruntime."""

import numpy as np
import onnx
import onnxruntime as ort
import pytest
import sliceops
from conftest import same_dims, CANNOT_RUN, FIXTURES, REAL_MODELS, SIZES, assert_close, fixture_path, real_expected, real_feeds, real_path

ort.set_default_logger_severity(3)
ALL = [(f["name"], fixture_path(f)) for f in FIXTURES] + [(m["name"], real_path(m)) for m in REAL_MODELS]


def dims_of(value_info):
    return [d.dim_param if d.HasField("dim_param") else d.dim_value for d in value_info.type.tensor_type.shape.dim]


def assert_same_model(got, want):
    """Equal models, a dim's form aside (see conftest.same_dim): byte-equal, or equal once every
    value_info and output dim is checked equal and replaced by the expected form."""
    if isinstance(got, bytes):
        got, want = onnx.load_model_from_string(got), onnx.load_model_from_string(want)
    if got == want:
        return
    got = onnx.ModelProto.FromString(got.SerializeToString())
    for g, w in zip(list(got.graph.value_info) + list(got.graph.output), list(want.graph.value_info) + list(want.graph.output)):
        if g.name == w.name and same_dims(dims_of(g), dims_of(w)):
            g.type.CopyFrom(w.type)
    assert got == want


def cli_report(stdout):
    lines = stdout.splitlines()
    before, after = lines[0][len("nodes: "):].split(" -> ")
    all_before, all_after = before, after
    changes, unshaped, kept = {}, [], []
    for line in lines[1:]:
        if line.startswith("  "):
            kind, n = line.strip().rsplit(": ", 1)
            changes[kind] = int(n)
        elif line.startswith("values without a type and shape: "):
            unshaped = line[len("values without a type and shape: "):].split(", ")
        elif line.startswith("nodes with those of subgraphs: "):
            all_before, all_after = line[len("nodes with those of subgraphs: "):].split(" -> ")
        elif line.startswith("subgraph left as it was: "):
            kept.append(line[len("subgraph left as it was: "):])
    return int(before), int(after), changes, unshaped, int(all_before), int(all_after), kept


@pytest.mark.parametrize("name,path", ALL, ids=[n for n, _ in ALL])
def test_fold_equals_the_cli(name, path, cli, tmp_path):
    out = tmp_path / "folded.onnx"
    proc = cli("fold", path, "-o", out)
    assert proc.returncode == 0, proc.stderr
    folded, report = sliceops.fold(path.read_bytes())
    assert_same_model(folded, out.read_bytes())
    assert tuple(report) == cli_report(proc.stdout)
    assert report.every_value_shaped == (report.unshaped == [])


@pytest.mark.parametrize("name,path", ALL[::7], ids=[n for n, _ in ALL[::7]])
def test_fold_exact_equals_the_cli(name, path, cli, tmp_path):
    out = tmp_path / "folded.onnx"
    proc = cli("fold", path, "-o", out, "--exact")
    assert proc.returncode == 0, proc.stderr
    folded, _ = sliceops.fold(onnx.load(str(path)), exact=True)
    assert_same_model(folded, onnx.load(str(out)))


def test_fold_specialized_equals_the_cli(cli, tmp_path):
    path = real_path(next(m for m in REAL_MODELS if m["name"] == "gpt2_torch_legacy"))
    out = tmp_path / "folded.onnx"
    proc = cli("fold", path, "-o", out, "--input-shape", "input_ids=1,7", "--input-shape", "attention_mask=1,7")
    assert proc.returncode == 0, proc.stderr
    folded, report = sliceops.fold(str(path), input_shapes={"input_ids": [1, 7], "attention_mask": [1, 7]})
    assert_same_model(folded, onnx.load(str(out)))
    assert report.nodes_after < report.nodes_before


@pytest.mark.parametrize("model", [m for m in REAL_MODELS if m["name"] not in CANNOT_RUN], ids=lambda m: m["name"])
def test_folded_real_exports_run_in_onnxruntime(model):
    folded, report = sliceops.fold(onnx.load(str(real_path(model))))
    onnx.checker.check_model(folded, full_check=True)
    session = ort.InferenceSession(folded.SerializeToString(), providers=["CPUExecutionProvider"])
    for size in SIZES:
        got = session.run(None, real_feeds(model, size))
        for name, g, w in zip(model["outputs"], got, real_expected(model, size)):
            assert_close(g, w, f"{model['name']} {size} {name}")


@pytest.mark.parametrize("fixture", FIXTURES, ids=lambda f: f["name"])
def test_lower_equals_the_cli(fixture, cli, tmp_path):
    out = tmp_path / "lowered.onnx"
    proc = cli("lower", fixture_path(fixture), "-o", out)
    assert proc.returncode == 0, proc.stderr
    assert sliceops.lower(fixture_path(fixture).read_bytes()) == out.read_bytes()
    lowered = sliceops.lower(str(fixture_path(fixture)))
    assert all(n.domain in ("", "ai.onnx") for n in lowered.graph.node)
