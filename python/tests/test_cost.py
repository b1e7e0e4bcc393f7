"""sliceops.cost against `sliceops cost --format json`, and its figures on a model built here."""

import json

import numpy as np
import onnx
import pytest
import sliceops
from conftest import REAL_MODELS, real_path
from onnx import TensorProto, helper, numpy_helper


def small_model():
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 8])
    z = helper.make_tensor_value_info("z", TensorProto.FLOAT, None)
    w = numpy_helper.from_array(np.zeros((8, 2), np.float32), "w")
    nodes = [helper.make_node("MatMul", ["x", "w"], ["y"], name="mm"), helper.make_node("Relu", ["y"], ["z"], name="relu")]
    graph = helper.make_graph(nodes, "g", [x], [z], [w])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


@pytest.mark.parametrize("name", [m["name"] for m in REAL_MODELS[:4]])
def test_cost_equals_the_cli(name, cli):
    path = real_path(next(m for m in REAL_MODELS if m["name"] == name))
    proc = cli("cost", path, "--format", "json")
    assert proc.returncode == 0, proc.stderr
    assert sliceops.cost(path) == json.loads(proc.stdout)


def test_figures_as_expressions_and_at_sizes():
    report = sliceops.cost(small_model())
    total = report["total"]
    assert total["macs"]["expr"] == "18*batch"
    assert total["macs"]["tree"] == {"mul": [18, {"sym": "batch"}]}
    assert total["params"]["expr"] == 16
    assert [n["name"] for n in report["nodes"]] == ["mm", "relu"]
    at = sliceops.cost(small_model().SerializeToString(), at={"batch": 3})
    assert at["total"]["macs"]["at"] == 54
    assert at["total"]["bytes_read"]["at"] == (3 * 8 + 16) * 4 + 3 * 2 * 4
    assert at["peak"]["candidates"] == [{"bytes": {"expr": 48, "tree": 48}, "after": "relu"}]
    pinned = sliceops.cost(small_model(), input_shapes={"x": [5, 8]})
    assert pinned["total"]["macs"]["expr"] == 90


def test_bad_sizes_are_value_errors():
    with pytest.raises(ValueError, match="seq is not a symbol of this model's sizes"):
        sliceops.cost(small_model(), at={"seq": 3})
    with pytest.raises(ValueError, match="outside its bounds"):
        sliceops.cost(small_model(), at={"batch": -1})
