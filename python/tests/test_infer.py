"""sliceops.infer and sliceops.infer_shapes against `sliceops infer --format json` and onnx.checker."""

import json

import onnx
import pytest
import sliceops
from conftest import FIXTURES, REAL_MODELS, assert_same_report, fixture_path, real_path, same_dims

ALL = [(f["name"], fixture_path(f)) for f in FIXTURES] + [(m["name"], real_path(m)) for m in REAL_MODELS]


def cli_infer(cli, path, *args):
    proc = cli("infer", path, "--format", "json", *args)
    assert proc.returncode == 0, proc.stderr
    notes = [l for l in proc.stderr.splitlines() if l.startswith(("warning: ", "note: "))]
    return json.loads(proc.stdout), notes


@pytest.mark.parametrize("name,path", ALL, ids=[n for n, _ in ALL])
def test_infer_equals_the_cli(name, path, cli):
    report, notes = cli_infer(cli, path)
    got = sliceops.infer(path)
    assert_same_report(got.report, report)
    assert got.notes == notes
    assert got.requirements == [r["requires"] for r in report["requirements"]]
    assert [v.name for v in got] == [v["name"] for v in report["values"]]
    for v, want in zip(got, report["values"]):
        if "unknown" in want:
            assert (v.dtype, v.shape) == (None, None)
            assert got.unknown[v.name] == want["unknown"]
        else:
            assert v.dtype == want["dtype"]
            assert same_dims(v.shape, want["shape"]), v.name
            assert all(isinstance(d, (int, str)) for d in v.shape)


def test_infer_takes_input_shapes_and_assumptions_like_the_cli(cli):
    path = real_path(next(m for m in REAL_MODELS if m["name"] == "gpt2_torch_legacy"))
    report, _ = cli_infer(
        cli, path, "--input-shape", "input_ids=2,S", "--input-shape", "attention_mask=2,S", "--assume", "S>=3"
    )
    got = sliceops.infer(
        onnx.load(str(path)), input_shapes={"input_ids": [2, "S"], "attention_mask": [2, "S"]}, assume=["S>=3"]
    )
    assert_same_report(got.report, report)
    assert got.shape_of("logits") == [2, "S", 100]
    assert got.shape_of("input_ids") == [2, "S"]


def test_infer_bad_shape_and_assumption_raise_the_cli_message(cli):
    path = real_path(next(m for m in REAL_MODELS if m["name"] == "gpt2_torch_legacy"))
    for args, kwargs in (
        (["--input-shape", "input_ids=2"], {"input_shapes": {"input_ids": [2]}}),
        (["--input-shape", "nope=2,3"], {"input_shapes": {"nope": [2, 3]}}),
        (["--input-shape", "input_ids=2,-3"], {"input_shapes": {"input_ids": [2, -3]}}),
        (["--assume", "S>="], {"assume": ["S>="]}),
    ):
        proc = cli("infer", path, *args)
        assert proc.returncode == 1
        message = proc.stderr.strip().splitlines()[-1][len("error: "):]
        with pytest.raises(ValueError) as e:
            sliceops.infer(path, **kwargs)
        assert str(e.value) == message
        with pytest.raises(ValueError) as e:
            sliceops.infer_shapes(path, **kwargs)
        assert str(e.value) == message


def dims_text(value_info):
    t = value_info.type.tensor_type
    return [d.dim_param if d.HasField("dim_param") else d.dim_value for d in t.shape.dim]


def passes_full_check(model):
    try:
        onnx.checker.check_model(model, full_check=True)
        return True
    except Exception:
        return False


@pytest.mark.parametrize("name,path", ALL, ids=[n for n, _ in ALL])
def test_infer_shapes_annotates_every_value_as_infer_says(name, path):
    given = onnx.load(str(path))
    annotated = sliceops.infer_shapes(given)
    assert isinstance(annotated, onnx.ModelProto)
    # Nothing but the annotations changes.
    assert annotated.graph.node == given.graph.node
    assert annotated.graph.initializer == given.graph.initializer
    assert annotated.graph.input == given.graph.input
    inferred = {v.name: v for v in sliceops.infer(path)}
    infos = {v.name: v for v in list(annotated.graph.value_info) + list(annotated.graph.output)}
    for node in annotated.graph.node:
        for out in node.output:
            if not out:
                continue
            v = inferred[out]
            if v.shape is None:
                continue
            assert out in infos, f"{out} has no value_info"
            assert same_dims(dims_text(infos[out]), v.shape), out
    if passes_full_check(given):
        onnx.checker.check_model(annotated, full_check=True)


@pytest.mark.parametrize("model", REAL_MODELS, ids=lambda m: m["name"])
def test_infer_shapes_on_real_exports_passes_the_full_check(model):
    annotated = sliceops.infer_shapes(str(real_path(model)))
    onnx.checker.check_model(annotated, full_check=True)
    # Every node output has a shape but those infer cannot know (silero's If outputs).
    infos = {v.name for v in list(annotated.graph.value_info) + list(annotated.graph.output)}
    missing = {o for n in annotated.graph.node for o in n.output if o and o not in infos}
    assert missing == set(sliceops.infer(str(real_path(model))).unknown) & missing
    if model["name"] != "silero_vad_wheel":
        assert missing == set()


def test_infer_shapes_returns_the_kind_given():
    path = fixture_path(FIXTURES[0])
    data = path.read_bytes()
    as_bytes = sliceops.infer_shapes(data)
    assert isinstance(as_bytes, bytes)
    assert onnx.load_model_from_string(as_bytes) == sliceops.infer_shapes(onnx.load(str(path)))
    assert sliceops.infer_shapes(path) == sliceops.infer_shapes(str(path))
    assert sliceops.infer_shapes(bytearray(data)) == as_bytes


def test_infer_gives_each_outcome_of_an_undecided_if():
    # silero-vad: the network is in the branches of If(sr == 16000); its decoder squeezes the time
    # axis when it is 1, and the outcome where it is not cannot run (unknown).
    path = real_path(next(m for m in REAL_MODELS if m["name"] == "silero_vad_wheel"))
    got = sliceops.infer(path)
    assert got.shape_of("output") == ["If_0_0_0", 1]
    assert got.cases["output"] == [
        sliceops.Case("sr == 16000 and (input_d1+320)/512 == 1", "float32", ["input_d0", 1]),
        sliceops.Case("sr == 16000 and (input_d1+320)/512 != 1", None, None),
        sliceops.Case("sr != 16000 and (input_d1+160)/256 == 1", "float32", ["input_d0", 1]),
        sliceops.Case("sr != 16000 and (input_d1+160)/256 != 1", None, None),
    ]
    assert "input" not in got.cases
    # An assumption that decides the frame count leaves the sample rate's two outcomes.
    decided = sliceops.infer(path, assume=["input_d1==512"])
    assert [c.when for c in decided.cases["stateN"]] == ["sr == 16000", "sr != 16000"]
    assert decided.cases["stateN"][0].shape == [2, "input_d0", 128]
