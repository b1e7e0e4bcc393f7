#!/usr/bin/env python3
"""Generate the ONNX fixture models of sliceops, with their inputs and expected outputs.

Run from anywhere:  python3 models/generate.py
(numpy and onnx pinned in models/requirements.txt; onnxruntime is optional and, when
installed, is used to cross-check every fixture made of standard ONNX operators only.)

For every fixture it writes, next to this script:

    <fixture>/model.onnx
    <fixture>/inputs/<escaped graph input name>.npy      one per graph input (not initializers)
    <fixture>/expected/<escaped graph output name>.npy   computed with numpy

and rewrites manifest.json. Name escaping in file names: '%' -> '%25', '/' -> '%2F'.

Expected outputs are computed by the small reference helpers below, written straight from
the semantics the README states (StridedSlice = numpy indexing; ONNX/Paddle Slice =
the ONNX opset-13 clamping rule, which differs from Python slicing for a negative step
whose start is below -dim; AsStrided = np.lib.stride_tricks.as_strided over the flattened
input). Each fixture also carries the numpy expression it encodes; the generator evaluates
that expression independently and asserts it gives the same array, bit for bit.

The generator is idempotent: no timestamps, fixed producer fields, fixed data. It only
deletes and rewrites the directories of its own fixtures; fixtures made by
export_torch.py (names starting with "torch_") are kept, with their manifest entries.
"""

import json
import os
import shutil
import sys

import numpy as np
import onnx
from onnx import AttributeProto, TensorProto, helper, numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
PRODUCER_NAME = "sliceops/models/generate.py"
PRODUCER_VERSION = "1"
IR_VERSION = 8  # ONNX 1.10+: every opset used here (<= 13) is allowed, and onnxruntime reads it
CUSTOM_DOMAIN = "ai.sliceops"
ATEN_DOMAIN = "org.pytorch.aten"
INT64_MAX = np.iinfo(np.int64).max
INT64_MIN = np.iinfo(np.int64).min
INT32_MAX = np.iinfo(np.int32).max
INT32_MIN = np.iinfo(np.int32).min
EXTERNAL_PREFIX = "torch_"  # fixtures owned by export_torch.py
# fixtures where onnxruntime is known to disagree with the ONNX specification
KNOWN_ORT_DEVIATIONS = {
    "onnx_slice_opset13_reverse_int_max_empty":
        "onnxruntime special-cases ends=INT64_MAX with a negative step and returns the whole "
        "axis reversed; the ONNX opset-13 clamping rule gives an empty axis",
}


def escape(name):
    """File-name escaping shared with the Rust side: '%' -> '%25', '/' -> '%2F'."""
    return name.replace("%", "%25").replace("/", "%2F")


# ---------------------------------------------------------------------------------------
# Reference semantics (numpy)
# ---------------------------------------------------------------------------------------


def strided_slice_spec(begin, end, strides=None, begin_mask=0, end_mask=0, ellipsis_mask=0,
                       new_axis_mask=0, shrink_axis_mask=0):
    """The numpy index tuple a StridedSlice node denotes."""
    n = len(begin)
    strides = [1] * n if strides is None else list(strides)
    assert len(end) == n and len(strides) == n
    assert min(begin_mask, end_mask, ellipsis_mask, new_axis_mask, shrink_axis_mask) >= 0
    bit = lambda mask, i: (mask >> i) & 1
    assert sum(bit(ellipsis_mask, i) for i in range(n)) <= 1, "more than one ellipsis"
    spec = []
    for i in range(n):
        if bit(ellipsis_mask, i):
            spec.append(Ellipsis)
        elif bit(new_axis_mask, i):
            spec.append(None)
        elif bit(shrink_axis_mask, i):
            assert strides[i] > 0, "negative stride on a shrunk axis is an error"
            spec.append(int(begin[i]))
        else:
            assert strides[i] != 0, "stride 0"
            b = None if bit(begin_mask, i) else int(begin[i])
            e = None if bit(end_mask, i) else int(end[i])
            spec.append(slice(b, e, int(strides[i])))
    return tuple(spec)


def strided_slice_ref(x, *args, **kwargs):
    return np.array(x[strided_slice_spec(*args, **kwargs)], copy=True)


def onnx_slice_ref(x, starts, ends, axes=None, steps=None):
    """ONNX Slice (opset 13 text) clamping; also Paddle's slice / strided_slice."""
    r = x.ndim
    assert r >= 1
    n = len(starts)
    axes = list(range(n)) if axes is None else [int(a) for a in axes]
    steps = [1] * n if steps is None else [int(s) for s in steps]
    assert len(ends) == n and len(axes) == n and len(steps) == n
    axes = [a + r if a < 0 else a for a in axes]
    assert all(0 <= a < r for a in axes) and len(set(axes)) == n
    out = x
    for s, e, a, st in zip(starts, ends, axes, steps):
        s, e, d = int(s), int(e), x.shape[a]
        assert st != 0
        s = s + d if s < 0 else s
        e = e + d if e < 0 else e
        if st > 0:
            s = min(max(s, 0), d)
            e = min(max(e, 0), d)
        else:
            s = min(max(s, 0), d - 1)
            e = min(max(e, -1), d - 1)
        out = np.take(out, np.arange(s, e, st, dtype=np.int64), axis=a)
    return np.array(out, copy=True)


def as_strided_ref(x, size, stride, offset=0):
    """out[j] = flat[offset + sum j_k * stride_k] (element strides) over row-major x."""
    size, stride = [int(v) for v in size], [int(v) for v in stride]
    assert len(size) == len(stride) and min(size + stride + [offset]) >= 0
    flat = np.ascontiguousarray(x).reshape(-1)
    if all(s > 0 for s in size):
        top = offset + sum((n - 1) * t for n, t in zip(size, stride))
        assert top < flat.size, "view out of bounds"
    base = flat[offset:] if offset <= flat.size else flat[flat.size:]
    out = np.lib.stride_tricks.as_strided(
        base, shape=tuple(size), strides=tuple(t * flat.itemsize for t in stride)).copy()
    # independent index-by-index check
    check = np.empty(tuple(size), dtype=x.dtype)
    for j in np.ndindex(*size):
        check[j] = flat[offset + sum(a * b for a, b in zip(j, stride))]
    assert np.array_equal(out, check) and out.dtype == check.dtype
    return out


# ---------------------------------------------------------------------------------------
# Model building helpers
# ---------------------------------------------------------------------------------------

NP_TO_ONNX = {
    np.dtype(np.float16): TensorProto.FLOAT16,
    np.dtype(np.float32): TensorProto.FLOAT,
    np.dtype(np.float64): TensorProto.DOUBLE,
    np.dtype(np.bool_): TensorProto.BOOL,
    np.dtype(np.int8): TensorProto.INT8,
    np.dtype(np.uint8): TensorProto.UINT8,
    np.dtype(np.int16): TensorProto.INT16,
    np.dtype(np.uint16): TensorProto.UINT16,
    np.dtype(np.int32): TensorProto.INT32,
    np.dtype(np.uint32): TensorProto.UINT32,
    np.dtype(np.int64): TensorProto.INT64,
    np.dtype(np.uint64): TensorProto.UINT64,
}


def ints_attr(name, values):
    """An INTS attribute, also when empty (make_node cannot infer the type of [])."""
    return helper.make_attribute(name, [int(v) for v in values], attr_type=AttributeProto.INTS)


def node(op_type, inputs, outputs, name, domain="", **attrs):
    n = helper.make_node(op_type, inputs, outputs, name=name, domain=domain or None)
    for k, v in attrs.items():
        if isinstance(v, (list, tuple)) and all(isinstance(e, (int, np.integer)) for e in v):
            n.attribute.append(ints_attr(k, v))
        else:
            n.attribute.append(helper.make_attribute(k, v))
    return n


def i64(*v):
    return np.array(v, dtype=np.int64)


def i32(*v):
    return np.array(v, dtype=np.int32)


class Fixture:
    def __init__(self, name, description, expression, nodes, inputs, outputs,
                 initializers=None, opsets=None, symbolic=None, env=None, lowerable=True,
                 output_shapes=None):
        self.name = name
        self.description = description
        self.expression = expression
        self.nodes = nodes
        self.inputs = inputs  # list of (name, np array)
        self.outputs = outputs  # list of (name, expected np array)
        self.initializers = initializers or {}
        self.opsets = opsets or {"": 13}
        self.symbolic = symbolic or {}  # input name -> [int | symbol]
        self.env = env  # names for evaluating `expression` (default: the graph inputs)
        self.lowerable = lowerable
        # declared graph output shapes (a hint); default: the exact concrete shape, or with
        # symbolic inputs, every dim unknown (None) except those given here
        self.output_shapes = output_shapes or {}

    @property
    def standard_only(self):
        return all(n.domain in ("", "ai.onnx") for n in self.nodes)

    def model(self):
        graph_inputs = []
        for name, arr in self.inputs:
            shape = self.symbolic.get(name, list(arr.shape))
            graph_inputs.append(helper.make_tensor_value_info(name, NP_TO_ONNX[arr.dtype], shape))
        graph_outputs = []
        for name, arr in self.outputs:
            if name in self.output_shapes:
                shape = self.output_shapes[name]
            else:
                shape = [None] * arr.ndim if self.symbolic else list(arr.shape)
            graph_outputs.append(helper.make_tensor_value_info(name, NP_TO_ONNX[arr.dtype], shape))
        inits = [numpy_helper.from_array(np.asarray(v), name=k) for k, v in self.initializers.items()]
        graph = helper.make_graph(self.nodes, self.name, graph_inputs, graph_outputs, inits,
                                  doc_string=self.description)
        opset_imports = [helper.make_opsetid(d, v) for d, v in self.opsets.items()]
        model = helper.make_model(graph, opset_imports=opset_imports, ir_version=IR_VERSION,
                                  producer_name=PRODUCER_NAME, producer_version=PRODUCER_VERSION,
                                  doc_string="sliceops fixture %s: %s" % (self.name, self.expression))
        return model


FIXTURES = []


def fixture(fn):
    FIXTURES.append(fn)
    return fn


def ss_node(inputs, output, name="strided_slice", **masks):
    return node("StridedSlice", inputs, [output], name, domain=CUSTOM_DOMAIN, **masks)


CUSTOM = {"": 13, CUSTOM_DOMAIN: 1}


def ss_fixture(name, description, expression, x, begin, end, strides=None, masks=None,
               input_name="x", output_name="y", runtime=False, env=None, lowerable=True):
    """One StridedSlice node over one input; begin/end/strides as initializers or inputs.

    `lowerable=False` marks a model that `sliceops lower` must refuse with an error naming the node
    (none today: runtime parameters with masks and negative strides are lowered with computed bounds)."""
    masks = masks or {}
    params = {"begin": begin, "end": end}
    if strides is not None:
        params["strides"] = strides
    names = list(params)
    expected = strided_slice_ref(x, begin, end, strides, **masks)
    inputs = [(input_name, x)]
    inits = {}
    if runtime:
        inputs += [(k, v) for k, v in params.items()]
    else:
        inits = params
    return Fixture(name, description, expression,
                   [ss_node([input_name] + names, output_name, **masks)],
                   inputs, [(output_name, expected)], initializers=inits, opsets=CUSTOM,
                   env=env, lowerable=lowerable)


def onnx_slice_fixture(name, description, expression, x, starts, ends, axes=None, steps=None,
                       opset=13, runtime=False, int_type=np.int64):
    expected = onnx_slice_ref(x, starts, ends, axes, steps)
    if opset < 10:
        attrs = {"starts": list(starts), "ends": list(ends)}
        if axes is not None:
            attrs["axes"] = list(axes)
        assert steps is None
        nodes = [node("Slice", ["x"], ["y"], "slice", **attrs)]
        return Fixture(name, description, expression, nodes, [("x", x)], [("y", expected)],
                       opsets={"": opset})
    params = {"starts": starts, "ends": ends}
    if axes is not None:
        params["axes"] = axes
    if steps is not None:
        assert axes is not None
        params["steps"] = steps
    params = {k: np.array(v, dtype=int_type) for k, v in params.items()}
    nodes = [node("Slice", ["x"] + list(params), ["y"], "slice")]
    inputs = [("x", x)]
    inits = {}
    if runtime:
        inputs += list(params.items())
    else:
        inits = params
    return Fixture(name, description, expression, nodes, inputs, [("y", expected)],
                   initializers=inits, opsets={"": opset})


def paddle_fixture(name, description, expression, x, axes, starts, ends, strides=None,
                   tensor_inputs=None, attr_overrides=None, symbolic=None):
    """Paddle form: Slice in ai.sliceops, attributes axes/starts/ends/strides; any of
    starts/ends/strides may come as node inputs 1..3 instead (tensor_inputs)."""
    tensor_inputs = tensor_inputs or {}
    attr_overrides = attr_overrides or {}
    expected = onnx_slice_ref(x, starts, ends, axes, strides)
    attrs = {"axes": list(axes)}
    values = {"starts": starts, "ends": ends, "strides": strides}
    for k in ("starts", "ends", "strides"):
        if k in attr_overrides:
            attrs[k] = list(attr_overrides[k])
        elif k not in tensor_inputs and values[k] is not None:
            attrs[k] = list(values[k])
    node_inputs = ["x"]
    inputs = [("x", x)]
    for k in ("starts", "ends", "strides"):
        if k in tensor_inputs:
            node_inputs.append(k)
            inputs.append((k, np.array(values[k], dtype=tensor_inputs[k])))
        else:
            node_inputs.append("")
    while node_inputs[-1] == "":
        node_inputs.pop()
    nodes = [node("Slice", node_inputs, ["y"], "paddle_slice", domain=CUSTOM_DOMAIN, **attrs)]
    return Fixture(name, description, expression, nodes, inputs, [("y", expected)],
                   opsets=CUSTOM, symbolic=symbolic)


def as_strided_fixture(name, description, expression, x, size, stride, offset=None,
                       offset_as_ints=False):
    attrs = {"size": list(size), "stride": list(stride)}
    if offset is not None:
        attrs["offset"] = [offset] if offset_as_ints else offset
    expected = as_strided_ref(x, size, stride, offset or 0)
    nodes = [node("AsStrided", ["x"], ["y"], "as_strided", domain=CUSTOM_DOMAIN, **attrs)]
    return Fixture(name, description, expression, nodes, [("x", x)], [("y", expected)],
                   opsets=CUSTOM)


def ast(base, size, stride, offset=0):
    """Expression text for an as_strided view over `base` flattened (element strides)."""
    flat = "%s.ravel()" % base + ("[%d:]" % offset if offset else "")
    strides = tuple("%d * %s.itemsize" % (t, base) for t in stride)
    strides = "(%s)" % (strides[0] + "," if len(strides) == 1 else ", ".join(strides))
    return "np.lib.stride_tricks.as_strided(%s, %r, %s)" % (flat, tuple(size), strides)


def arange(shape, dtype=np.float32, start=0):
    n = int(np.prod(shape))
    return (np.arange(n) + start).astype(dtype).reshape(shape)


# ---------------------------------------------------------------------------------------
# Seed examples: MindSpore, MXNet, Paddle, Ascend
# ---------------------------------------------------------------------------------------

MS_X = np.array([[[1, 1, 1], [2, 2, 2]], [[3, 3, 3], [4, 4, 4]], [[5, 5, 5], [6, 6, 6]]],
                dtype=np.float32)


@fixture
def ms_strided_slice_example_1():
    f = ss_fixture(
        "ms_strided_slice_example_1",
        "MindSpore ops.strided_slice doc example: strided_slice(input_x, (1, 0, 2), (3, 1, 3), "
        "(1, 1, 1)) on the 3x2x3 tensor = [[[3.]], [[5.]]]. Output named like MindSpore's "
        "exporter (contains '/', escaped in the file name).",
        "x[1:3, 0:1, 2:3]", MS_X, i64(1, 0, 2), i64(3, 1, 3), i64(1, 1, 1),
        output_name="1-Default/StridedSlice-op0")
    assert f.outputs[0][1].tolist() == [[[3.0]], [[5.0]]]
    return f


@fixture
def ms_strided_slice_example_2():
    f = ss_fixture(
        "ms_strided_slice_example_2",
        "MindSpore ops.strided_slice doc example: strided_slice(input_x, (1, 0, 0), (2, 1, 3), "
        "(1, 1, 1)) = [[[3., 3., 3.]]]; int32 parameters; input and output names contain "
        "'/' and '%' (escaped in the file names).",
        "x[1:2, 0:1, 0:3]", MS_X, i32(1, 0, 0), i32(2, 1, 3), i32(1, 1, 1),
        input_name="Default/network-input_x", output_name="2-Default/StridedSlice-op1%0",
        env={"x": MS_X})
    assert f.outputs[0][1].tolist() == [[[3.0, 3.0, 3.0]]]
    return f


@fixture
def ms_doc_5x6x7():
    return ss_fixture(
        "ms_doc_5x6x7",
        "MindSpore doc: begin (1, 3, 2), end (3, 5, 6), strides (1, 1, 2) on a (5, 6, 7) tensor.",
        "x[1:3, 3:5, 2:6:2]", arange((5, 6, 7)), i64(1, 3, 2), i64(3, 5, 6), i64(1, 1, 2))


@fixture
def ms_doc_short_spec():
    return ss_fixture(
        "ms_doc_short_spec",
        "MindSpore doc: a spec shorter than the rank, begin (1, 3), end (3, 5), strides (1, 1) "
        "on (5, 6, 7): the missing trailing dims are taken whole (implicit trailing ...).",
        "x[1:3, 3:5, 0:7]", arange((5, 6, 7)), i64(1, 3), i64(3, 5), i64(1, 1))


@fixture
def ms_doc_ellipsis():
    return ss_fixture(
        "ms_doc_ellipsis",
        "MindSpore doc ellipsis example x[2:, ..., :6] (on a (5, 3, 2, 8) tensor to stay small): "
        "ellipsis_mask=0b010, begin_mask=0b100, end_mask=0b001.",
        "x[2:, ..., :6]", arange((5, 3, 2, 8)), i64(2, 0, 0), i64(0, 0, 6), i64(1, 1, 1),
        masks=dict(ellipsis_mask=0b010, begin_mask=0b100, end_mask=0b001))


@fixture
def ms_doc_shrink():
    return ss_fixture(
        "ms_doc_shrink",
        "MindSpore doc shrink example x[:, 5, :] on (5, 6, 7): shrink_axis_mask=0b010 -> (5, 7).",
        "x[:, 5, :]", arange((5, 6, 7)), i64(0, 5, 0), i64(0, 6, 0), i64(1, 1, 1),
        masks=dict(begin_mask=0b101, end_mask=0b101, shrink_axis_mask=0b010))


@fixture
def ms_doc_new_axis():
    return ss_fixture(
        "ms_doc_new_axis",
        "MindSpore doc new-axis example on (5, 6, 7) with new_axis_mask=0b010: output (5, 1, 6, 7); "
        "the new-axis entry's begin/end/stride (here 0, 0, 1) are ignored.",
        "x[0:5, None, 0:6]", arange((5, 6, 7)), i64(0, 0, 0), i64(5, 0, 6), i64(1, 1, 1),
        masks=dict(new_axis_mask=0b010))


MX_X = arange((3, 4), start=1)


@fixture
def mxnet_slice_example_1():
    f = ss_fixture(
        "mxnet_slice_example_1",
        "MXNet slice doc example: slice(x, begin=(0, 1), end=(2, 4)) = [[2, 3, 4], [6, 7, 8]] "
        "(no step: strides input omitted).",
        "x[0:2, 1:4]", MX_X, i64(0, 1), i64(2, 4))
    assert f.outputs[0][1].tolist() == [[2, 3, 4], [6, 7, 8]]
    return f


@fixture
def mxnet_slice_example_2():
    f = ss_fixture(
        "mxnet_slice_example_2",
        "MXNet slice doc example: slice(x, begin=(None, 0), end=(None, 3), step=(-1, 2)) = "
        "[[9, 11], [5, 7], [1, 3]]; MXNet's None bounds are begin_mask=1, end_mask=1.",
        "x[::-1, 0:3:2]", MX_X, i64(0, 0), i64(0, 3), i64(-1, 2),
        masks=dict(begin_mask=1, end_mask=1))
    assert f.outputs[0][1].tolist() == [[9, 11], [5, 7], [1, 3]]
    return f


PADDLE_X = np.array([[1, 2, 3, 4], [5, 6, 7, 8]], dtype=np.float32)


@fixture
def paddle_strided_slice_example_1():
    f = paddle_fixture(
        "paddle_strided_slice_example_1",
        "Paddle strided_slice doc example 1: axes [0, 1], starts [1, 0], ends [2, 3], "
        "strides [1, 1] -> [[5, 6, 7]].",
        "x[1:2, 0:3]", PADDLE_X, [0, 1], [1, 0], [2, 3], [1, 1])
    assert f.outputs[0][1].tolist() == [[5, 6, 7]]
    return f


@fixture
def paddle_strided_slice_example_2():
    f = paddle_fixture(
        "paddle_strided_slice_example_2",
        "Paddle strided_slice doc example 2: axes [0, 1], starts [1, 3], ends [2, 0], "
        "strides [1, -1] -> [[8, 7, 6]].",
        "x[1:2, 3:0:-1]", PADDLE_X, [0, 1], [1, 3], [2, 0], [1, -1])
    assert f.outputs[0][1].tolist() == [[8, 7, 6]]
    return f


@fixture
def paddle_strided_slice_example_3():
    f = paddle_fixture(
        "paddle_strided_slice_example_3",
        "Paddle strided_slice doc example 3: axes [0, 1], starts [0, 1], ends [-1, 1000], "
        "strides [1, 3] -> [[2]].",
        "x[0:-1, 1:1000:3]", PADDLE_X, [0, 1], [0, 1], [-1, 1000], [1, 3])
    assert f.outputs[0][1].tolist() == [[2]]
    return f


@fixture
def paddle_slice_case_1():
    f = paddle_fixture(
        "paddle_slice_case_1",
        "paddle.slice doc Case1: axes [0, 1], starts [1, 0], ends [2, 3] (no strides "
        "attribute) -> [[5, 6, 7]].",
        "x[1:2, 0:3]", PADDLE_X, [0, 1], [1, 0], [2, 3])
    assert f.outputs[0][1].tolist() == [[5, 6, 7]]
    return f


@fixture
def paddle_slice_case_2():
    f = paddle_fixture(
        "paddle_slice_case_2",
        "paddle.slice doc Case2: axes [0, 1], starts [0, 1], ends [-1, 1000] -> [[2, 3, 4]].",
        "x[0:-1, 1:1000]", PADDLE_X, [0, 1], [0, 1], [-1, 1000])
    assert f.outputs[0][1].tolist() == [[2, 3, 4]]
    return f


def paddle_int32_max_end_fixture(name, how, tensor_inputs=None, symbolic=None):
    f = paddle_fixture(
        name,
        "Paddle-form Slice axes [1], starts [1], ends [INT32_MAX], strides [-2] on a [2, 3, 5] "
        "input, %s: the end clamps to d-1 = 2, so the axis is EMPTY (2, 0, 5). onnxruntime reads an "
        "end of exactly INT32_MAX (or INT64_MAX) with a negative step as 'through the first "
        "element' and returns one row: the lowered model must never hand it that end." % how,
        "x[:, 1:2147483647:-2]", arange((2, 3, 5)), [1], [1], [INT32_MAX], [-2],
        tensor_inputs=tensor_inputs, symbolic=symbolic)
    assert f.outputs[0][1].shape == (2, 0, 5)
    return f


@fixture
def paddle_slice_int32_max_end_negative_step():
    return paddle_int32_max_end_fixture(
        "paddle_slice_int32_max_end_negative_step", "every dim known")


@fixture
def paddle_slice_int32_max_end_negative_step_symbolic():
    return paddle_int32_max_end_fixture(
        "paddle_slice_int32_max_end_negative_step_symbolic", "its dims declared [N, C, 5]",
        symbolic={"x": ["N", "C", 5]})


@fixture
def paddle_slice_int32_max_runtime_end_negative_step():
    return paddle_int32_max_end_fixture(
        "paddle_slice_int32_max_runtime_end_negative_step",
        "its dims declared [N, C, 5] and ends given at run time (int32)",
        tensor_inputs={"ends": np.int32}, symbolic={"x": ["N", "C", 5]})


@fixture
def paddle_strided_slice_code_example_1():
    return paddle_fixture(
        "paddle_strided_slice_code_example_1",
        "Paddle strided_slice code example 1 on a [3, 4, 5, 6] input: axes [0, 1, 2], starts "
        "[-3, 0, 2], ends [3, 2, 4], strides [1, 1, 1]. (The doc's comment writes "
        "input[:, 0:3:1, 0:2:1, 2:4:1], which has one index too many; the numpy meaning of the "
        "parameters is x[0:3, 0:2, 2:4].)",
        "x[-3:3, 0:2, 2:4]", arange((3, 4, 5, 6)), [0, 1, 2], [-3, 0, 2], [3, 2, 4], [1, 1, 1])


@fixture
def paddle_strided_slice_tensor_starts():
    return paddle_fixture(
        "paddle_strided_slice_tensor_starts",
        "Paddle strided_slice code example 2: starts given as a runtime int32 tensor "
        "(node input 1) [-3, 0, 2], strides [1, 1, 2]; the node also carries a stale starts "
        "attribute [0, 0, 0], which the present input overrides.",
        "x[-3:3, 0:2, 2:4:2]", arange((3, 4, 5, 6)), [0, 1, 2], [-3, 0, 2], [3, 2, 4], [1, 1, 2],
        tensor_inputs={"starts": np.int32}, attr_overrides={"starts": [0, 0, 0]})


@fixture
def paddle_slice_tensor_starts():
    return paddle_fixture(
        "paddle_slice_tensor_starts",
        "paddle.slice code example 2 on a [4, 5, 6] input: starts as a runtime int32 tensor "
        "[-3, 0, 2] (no starts attribute), ends [3, 2, 4] -> input[1:3, 0:2, 2:4].",
        "x[1:3, 0:2, 2:4]", arange((4, 5, 6)), [0, 1, 2], [-3, 0, 2], [3, 2, 4],
        tensor_inputs={"starts": np.int32})


@fixture
def paddle_strided_slice_all_tensors():
    return paddle_fixture(
        "paddle_strided_slice_all_tensors",
        "Paddle form with starts, ends and strides all runtime int64 tensors, axes [1, 0] "
        "(unsorted); ends -7 on a dim of 6 with a negative stride clamps to -1 (runs through "
        "index 0).",
        "x[0:5:2, -1:-7:-2]", arange((5, 6)), [1, 0], [-1, 0], [-7, 5], [-2, 2],
        tensor_inputs={"starts": np.int64, "ends": np.int64, "strides": np.int64})


@fixture
def paddle_slice_empty_input_slot():
    return paddle_fixture(
        "paddle_slice_empty_input_slot",
        "Paddle form with node inputs [x, '', ends]: starts from the attribute (input 1 is "
        "absent), ends from a runtime int32 tensor [3, 1000] overriding a stale ends "
        "attribute [0, 0], strides attribute [1, 2].",
        "x[1:3, 0:1000:2]", arange((4, 6)), [0, 1], [1, 0], [3, 1000], [1, 2],
        tensor_inputs={"ends": np.int32}, attr_overrides={"ends": [0, 0]})


ASCEND_X = np.arange(1, 10).reshape(3, 3)


@fixture
def ascend_as_strided_offset_0():
    f = as_strided_fixture(
        "ascend_as_strided_offset_0",
        "Ascend AsStridedOperation doc example: 3x3 [1..9] (float16), size [2, 2], stride "
        "[2, 3], offset [0] (ints attribute, as Ascend writes it) -> [[1, 4], [3, 6]].",
        ast("x", [2, 2], [2, 3]), ASCEND_X.astype(np.float16), [2, 2], [2, 3], 0,
        offset_as_ints=True)
    assert f.outputs[0][1].tolist() == [[1, 4], [3, 6]]
    return f


@fixture
def ascend_as_strided_offset_2():
    f = as_strided_fixture(
        "ascend_as_strided_offset_2",
        "Ascend AsStridedOperation doc example with offset [2]: 3x3 [1..9] (int64), size "
        "[2, 2], stride [2, 3] -> [[3, 6], [5, 8]].",
        ast("x", [2, 2], [2, 3], 2), ASCEND_X.astype(np.int64), [2, 2], [2, 3], 2,
        offset_as_ints=True)
    assert f.outputs[0][1].tolist() == [[3, 6], [5, 8]]
    return f


# ---------------------------------------------------------------------------------------
# StridedSlice masks (TensorFlow / MindSpore), bounds, parameter types, runtime parameters
# ---------------------------------------------------------------------------------------


@fixture
def ss_masks_negative_strides():
    return ss_fixture(
        "ss_masks_negative_strides",
        "begin/end masks with negative strides: an omitted begin runs from the last element, "
        "an omitted end runs to index 0 inclusive. begin_mask=0b101, end_mask=0b110.",
        "x[:1:-1, 3::-2, ::-1]", arange((4, 5, 6)), i64(0, 3, 0), i64(1, 0, 0), i64(-1, -2, -1),
        masks=dict(begin_mask=0b101, end_mask=0b110))


@fixture
def ss_ellipsis_new_axis_shrink():
    return ss_fixture(
        "ss_ellipsis_new_axis_shrink",
        "x[..., None, 1]: ellipsis_mask=0b001, new_axis_mask=0b010, shrink_axis_mask=0b100.",
        "x[..., None, 1]", arange((3, 4, 5)), i64(0, 0, 1), i64(0, 0, 2), i64(1, 1, 1),
        masks=dict(ellipsis_mask=0b001, new_axis_mask=0b010, shrink_axis_mask=0b100))


@fixture
def ss_shrink_ellipsis_new_axis_reverse():
    return ss_fixture(
        "ss_shrink_ellipsis_new_axis_reverse",
        "x[1, ..., None, ::-1]: shrink_axis_mask=0b0001, ellipsis_mask=0b0010, "
        "new_axis_mask=0b0100, begin_mask=end_mask=0b1000.",
        "x[1, ..., None, ::-1]", arange((3, 4, 5)), i64(1, 0, 0, 0), i64(2, 0, 0, 0),
        i64(1, 1, 1, -1),
        masks=dict(shrink_axis_mask=0b0001, ellipsis_mask=0b0010, new_axis_mask=0b0100,
                   begin_mask=0b1000, end_mask=0b1000))


@fixture
def ss_new_axis_shrink_new_axis():
    return ss_fixture(
        "ss_new_axis_shrink_new_axis",
        "x[None, 1, None]: new_axis_mask=0b101, shrink_axis_mask=0b010, implicit trailing "
        "ellipsis -> (1, 1, 4).",
        "x[None, 1, None]", arange((3, 4)), i64(0, 1, 0), i64(0, 2, 0), i64(1, 1, 1),
        masks=dict(new_axis_mask=0b101, shrink_axis_mask=0b010))


@fixture
def ss_out_of_range_bounds():
    return ss_fixture(
        "ss_out_of_range_bounds",
        "Bounds far outside the dims clamp like Python: [0, d] for a positive stride, "
        "[-1, d-1] for a negative one. int32 parameters.",
        "x[-100:100:2, 10:-100:-3]", arange((6, 7)), i32(-100, 10), i32(100, -100), i32(2, -3))


@fixture
def ss_mask_bits_past_spec():
    return ss_fixture(
        "ss_mask_bits_past_spec",
        "A 2-entry spec on a rank-3 input whose masks have bits past the spec's length "
        "(begin_mask=0b1101, end_mask=0b1100, shrink_axis_mask=0b1000, new_axis_mask=0b10000, "
        "ellipsis_mask=0b100000): only bit 0 of begin_mask counts.",
        "x[:3, 1:4]", arange((4, 5, 6)), i64(2, 1), i64(3, 4), i64(1, 1),
        masks=dict(begin_mask=0b1101, end_mask=0b1100, shrink_axis_mask=0b1000,
                   new_axis_mask=0b10000, ellipsis_mask=0b100000))


@fixture
def ss_shrink_negative_index():
    return ss_fixture(
        "ss_shrink_negative_index",
        "Shrunk axes with negative indices (end ignored there): x[-1, :, -2].",
        "x[-1, :, -2]", arange((3, 4, 5)), i64(-1, 0, -2), i64(0, 0, 0), i64(1, 1, 1),
        masks=dict(shrink_axis_mask=0b101, begin_mask=0b010, end_mask=0b010))


@fixture
def ss_rank0_all_shrunk():
    return ss_fixture(
        "ss_rank0_all_shrunk",
        "Every axis shrunk: a rank-0 output. shrink_axis_mask=0b111.",
        "x[1, 2, 3]", arange((3, 4, 5)), i64(1, 2, 3), i64(2, 3, 4), i64(1, 1, 1),
        masks=dict(shrink_axis_mask=0b111))


@fixture
def ss_empty_output():
    return ss_fixture(
        "ss_empty_output",
        "An empty slice (begin > end with a positive stride): output shape (0, 3).",
        "x[3:1, ::2]", arange((4, 5)), i64(3, 0), i64(1, 0), i64(1, 2),
        masks=dict(begin_mask=0b10, end_mask=0b10))


@fixture
def ss_params_int32():
    return ss_fixture(
        "ss_params_int32",
        "begin/end/strides as int32 initializers.",
        "x[1:5:2, ::-1]", arange((6, 4)), i32(1, 0), i32(5, 0), i32(2, -1),
        masks=dict(begin_mask=0b10, end_mask=0b10))


@fixture
def ss_params_int64():
    return ss_fixture(
        "ss_params_int64",
        "begin/end/strides as int64 initializers (same spec as ss_params_int32).",
        "x[1:5:2, ::-1]", arange((6, 4)), i64(1, 0), i64(5, 0), i64(2, -1),
        masks=dict(begin_mask=0b10, end_mask=0b10))


@fixture
def ss_runtime_bounds():
    return ss_fixture(
        "ss_runtime_bounds",
        "begin/end/strides as runtime int64 graph inputs (begin [1, -1, 5], end [4, 0, 0], "
        "strides [2, 1, -2]) with a shrunk entry (shrink_axis_mask=0b010) at index -1.",
        "x[1:4:2, -1, 5:0:-2]", arange((4, 6, 5)), i64(1, -1, 5), i64(4, 0, 0), i64(2, 1, -2),
        masks=dict(shrink_axis_mask=0b010), runtime=True)


@fixture
def ss_runtime_negative_start_below_neg_dim():
    return ss_fixture(
        "ss_runtime_negative_start_below_neg_dim",
        "Runtime int32 begin/end/strides (begin [-10, 5], end [0, 0], strides [-1, -2], "
        "end_mask=0b01): a negative stride whose begin is below -dim gives an EMPTY axis in "
        "numpy (ONNX Slice would give one element): output (0, 3).",
        "x[-10::-1, 5:0:-2]", arange((6, 7)), i32(-10, 5), i32(0, 0), i32(-1, -2),
        masks=dict(end_mask=0b01), runtime=True)


# one fixture per data type, same slice
DTYPE_DATA = {
    "float16": lambda: (arange((4, 5)) / 4 - 2).astype(np.float16),
    "float32": lambda: arange((4, 5)) * 0.5 - 3,
    "float64": lambda: arange((4, 5), np.float64) / 3 - 1e10,
    "bool": lambda: (np.arange(20) % 3 == 0).reshape(4, 5),
    "int8": lambda: arange((4, 5), np.int8, start=-10) * 6,
    "uint8": lambda: (np.arange(20) * 13 % 256).astype(np.uint8).reshape(4, 5),
    "int16": lambda: arange((4, 5), np.int16, start=-10) * 3000,
    "uint16": lambda: (np.arange(20, dtype=np.uint16) * 3001).reshape(4, 5),
    "int32": lambda: arange((4, 5), np.int32, start=-10) * 200_000_001,
    "uint32": lambda: (np.arange(20, dtype=np.uint32) * 200_000_001).reshape(4, 5),
    "int64": lambda: arange((4, 5), np.int64, start=-10) * (1 << 59),
    "uint64": lambda: np.arange(20, dtype=np.uint64).reshape(4, 5) + np.uint64(1 << 63),
}


def dtype_fixture(dtype_name):
    def build():
        x = DTYPE_DATA[dtype_name]()
        assert x.dtype == np.dtype(dtype_name)
        return ss_fixture(
            "ss_dtype_%s" % dtype_name,
            "StridedSlice x[1:, ::-2] over a (4, 5) %s tensor." % dtype_name,
            "x[1:, ::-2]", x, i64(1, 0), i64(0, 0), i64(1, -2),
            masks=dict(begin_mask=0b10, end_mask=0b11))
    build.__name__ = "ss_dtype_%s" % dtype_name
    return build


for _dt in DTYPE_DATA:
    fixture(dtype_fixture(_dt))


# ---------------------------------------------------------------------------------------
# ONNX Slice (default domain), every opset family
# ---------------------------------------------------------------------------------------


@fixture
def onnx_slice_opset1():
    return onnx_slice_fixture(
        "onnx_slice_opset1",
        "ONNX Slice-1 (opset 1): attributes starts [1, -4], ends [3, 1000], axes [0, 1].",
        "x[1:3, -4:1000]", arange((4, 6)), [1, -4], [3, 1000], [0, 1], opset=1)


@fixture
def onnx_slice_opset1_below_neg_dim():
    return onnx_slice_fixture(
        "onnx_slice_opset1_below_neg_dim",
        "ONNX Slice-1 (opset 1), no axes attribute, starts [-10, -100] below -dim clamp to 0; "
        "ends [-1, 3].",
        "x[-10:-1, -100:3]", arange((4, 6)), [-10, -100], [-1, 3], opset=1)


@fixture
def onnx_slice_opset10():
    return onnx_slice_fixture(
        "onnx_slice_opset10",
        "ONNX Slice-10 (opset 10): starts/ends/axes/steps as int64 initializers, starts "
        "[4, 1], ends [0, 6], axes [0, 1], steps [-2, 2].",
        "x[4:0:-2, 1:6:2]", arange((5, 6)), [4, 1], [0, 6], [0, 1], [-2, 2], opset=10)


@fixture
def onnx_slice_opset11_negative_axes():
    return onnx_slice_fixture(
        "onnx_slice_opset11_negative_axes",
        "ONNX Slice-11 (opset 11) with negative axes [-1, -3]: starts [1, -2], ends [-1, 3], "
        "steps [2, 1].",
        "x[-2:3, :, 1:-1:2]", arange((3, 4, 5)), [1, -2], [-1, 3], [-1, -3], [2, 1], opset=11)


@fixture
def onnx_slice_opset13_negative_steps():
    return onnx_slice_fixture(
        "onnx_slice_opset13_negative_steps",
        "ONNX Slice-13 with negative steps: starts [-1, 100], ends [INT64_MIN, 0], steps "
        "[-1, -2]: start 100 clamps to d-1, end INT64_MIN clamps to -1 (through index 0).",
        "x[::-1, 5:0:-2]", arange((5, 6)), [-1, 100], [INT64_MIN, 0], [0, 1], [-1, -2])


@fixture
def onnx_slice_opset13_int64_extremes():
    return onnx_slice_fixture(
        "onnx_slice_opset13_int64_extremes",
        "ONNX Slice-13 with INT64_MIN / INT64_MAX bounds and positive steps: starts "
        "[INT64_MIN, 1], ends [INT64_MAX, INT64_MAX], steps [2, 3].",
        "x[::2, 1::3]", arange((5, 6)), [INT64_MIN, 1], [INT64_MAX, INT64_MAX], [0, 1], [2, 3])


@fixture
def onnx_slice_opset13_reverse_int_max_empty():
    return onnx_slice_fixture(
        "onnx_slice_opset13_reverse_int_max_empty",
        "ONNX Slice-13 starts=[-1], ends=[INT64_MAX], steps=[-1]: INT64_MAX is an ordinary "
        "number (clamps to d-1 = the start), so the result is EMPTY (0, 3) (tract and old "
        "onnxruntime special-case INT_MAX and get this wrong).",
        "x[-1:9223372036854775807:-1]", arange((5, 3)), [-1], [INT64_MAX], [0], [-1])


@fixture
def onnx_slice_opset13_negative_step_start_below_neg_dim():
    return onnx_slice_fixture(
        "onnx_slice_opset13_negative_step_start_below_neg_dim",
        "ONNX Slice-13 starts=[-100], ends=[INT64_MIN], steps=[-1] on a dim of 5: ONNX clamps "
        "the start to 0, so the result is ONE row, x[0:1]. (Python's x[-100::-1] would be "
        "empty: this is where ONNX clamping differs from Python slicing.)",
        "x[0:1]", arange((5, 3)), [-100], [INT64_MIN], [0], [-1])


@fixture
def onnx_slice_opset13_runtime():
    return onnx_slice_fixture(
        "onnx_slice_opset13_runtime",
        "ONNX Slice-13 with starts [5, 1], ends [0, 7], axes [0, 1], steps [-2, 3] all "
        "runtime int64 graph inputs.",
        "x[5:0:-2, 1:7:3]", arange((6, 7)), [5, 1], [0, 7], [0, 1], [-2, 3], runtime=True)


@fixture
def onnx_slice_opset13_int32_params():
    return onnx_slice_fixture(
        "onnx_slice_opset13_int32_params",
        "ONNX Slice-13 with int32 starts/ends/axes initializers and no steps: starts [1], "
        "ends [-1], axes [1].",
        "x[:, 1:-1]", arange((4, 6)), [1], [-1], [1], int_type=np.int32)


@fixture
def onnx_slice_opset13_default_axes():
    return onnx_slice_fixture(
        "onnx_slice_opset13_default_axes",
        "ONNX Slice-13 with only starts [1, 2] and ends [3, 5] (axes and steps omitted).",
        "x[1:3, 2:5]", arange((4, 6)), [1, 2], [3, 5])


# ---------------------------------------------------------------------------------------
# AsStrided and the ATen fallback
# ---------------------------------------------------------------------------------------


@fixture
def as_strided_sliding_windows():
    return as_strided_fixture(
        "as_strided_sliding_windows",
        "Overlapping sliding windows over a 1-D input (torch unfold(0, 4, 2)): size [4, 4], "
        "stride [2, 1], no offset attribute (default 0).",
        ast("x", [4, 4], [2, 1]), arange((10,)), [4, 4], [2, 1])


@fixture
def as_strided_image_patches():
    return as_strided_fixture(
        "as_strided_image_patches",
        "Overlapping 3x3 patches with step 2 of a 5x5 image: size [2, 2, 3, 3], stride "
        "[10, 2, 5, 1], offset 0 as an int attribute; output rank 4 > input rank 2.",
        ast("x", [2, 2, 3, 3], [10, 2, 5, 1]), arange((5, 5)), [2, 2, 3, 3], [10, 2, 5, 1], 0)


@fixture
def as_strided_broadcast():
    return as_strided_fixture(
        "as_strided_broadcast",
        "Broadcast with a zero stride: the (2, 4) input repeated 3 times, size [3, 2, 4], "
        "stride [0, 4, 1].",
        ast("x", [3, 2, 4], [0, 4, 1]), arange((2, 4)), [3, 2, 4], [0, 4, 1])


@fixture
def as_strided_zero_strides_offset():
    return as_strided_fixture(
        "as_strided_zero_strides_offset",
        "All strides zero with offset 5 (int attribute): a (2, 3) int32 tensor filled with "
        "flat[5].",
        ast("x", [2, 3], [0, 0], 5), arange((2, 4), np.int32), [2, 3], [0, 0], 5)


@fixture
def as_strided_empty():
    return as_strided_fixture(
        "as_strided_empty",
        "An empty view, size [3, 0], stride [1000, 1]: no element is read, so no bounds "
        "apply (the same strides with a non-empty size would be out of bounds).",
        ast("x", [3, 0], [1000, 1]), arange((2, 3)), [3, 0], [1000, 1])


@fixture
def as_strided_rank0():
    return as_strided_fixture(
        "as_strided_rank0",
        "A rank-0 view: size [], stride [], offset 7 -> the scalar flat[7].",
        "np.lib.stride_tricks.as_strided(x.ravel()[7:], (), ())", arange((3, 4)), [], [], 7)


@fixture
def aten_as_strided():
    x = arange((3, 4))
    expected = as_strided_ref(x, [2, 3], [1, 4], 1)
    nodes = [node("ATen", ["x", "size", "stride", "storage_offset"], ["y"], "aten_as_strided",
                  domain=ATEN_DOMAIN, operator="as_strided", overload_name="")]
    inits = {"size": i64(2, 3), "stride": i64(1, 4), "storage_offset": np.array(1, np.int64)}
    return Fixture(
        "aten_as_strided",
        "PyTorch's ATen fallback form of as_strided (op_type ATen, domain org.pytorch.aten, "
        "operator='as_strided'): size [2, 3], stride [1, 4], storage_offset 1, all int64 "
        "initializers (a transposed view shifted by one).",
        ast("x", [2, 3], [1, 4], 1), nodes, [("x", x)], [("y", expected)], initializers=inits,
        opsets={"": 13, ATEN_DOMAIN: 1})


# ---------------------------------------------------------------------------------------
# Symbolic batch dim, chains, folding, exporter patterns
# ---------------------------------------------------------------------------------------


@fixture
def sym_batch_strided_slice():
    x = arange((5, 3))
    y1 = strided_slice_ref(x, i64(1), i64(-1), i64(1))
    y2 = strided_slice_ref(x, i64(0), i64(0), i64(2), begin_mask=1, end_mask=1)
    nodes = [
        ss_node(["x", "b1", "e1", "s1"], "inner", name="ss_inner"),
        ss_node(["x", "b2", "e2", "s2"], "even", name="ss_even", begin_mask=1, end_mask=1),
    ]
    inits = {"b1": i64(1), "e1": i64(-1), "s1": i64(1), "b2": i64(0), "e2": i64(0), "s2": i64(2)}
    return Fixture(
        "sym_batch_strided_slice",
        "StridedSlice along a symbolic batch dim N (input declared [N, 3], run with N=5): "
        "inner = x[1:-1] (N-2 rows), even = x[::2] ((N+1)/2 rows).",
        "(x[1:-1], x[::2])", nodes, [("x", x)], [("inner", y1), ("even", y2)],
        initializers=inits, opsets=CUSTOM, symbolic={"x": ["N", 3]},
        output_shapes={"inner": [None, 3], "even": [None, 3]})


@fixture
def sym_batch_onnx_slice():
    x = arange((5, 3))
    y1 = onnx_slice_ref(x, [1], [-1], [0])
    y2 = onnx_slice_ref(x, [0], [INT64_MAX], [0], [2])
    nodes = [
        node("Slice", ["x", "st1", "en1", "ax"], ["inner"], "slice_inner"),
        node("Slice", ["x", "st2", "en2", "ax", "sp2"], ["even"], "slice_even"),
    ]
    inits = {"st1": i64(1), "en1": i64(-1), "ax": i64(0), "st2": i64(0), "en2": i64(INT64_MAX),
             "sp2": i64(2)}
    return Fixture(
        "sym_batch_onnx_slice",
        "ONNX Slice-13 along a symbolic batch dim N (input declared [N, 3], run with N=5): "
        "inner = x[1:-1], even = x[0:INT64_MAX:2].",
        "(x[1:-1], x[::2])", nodes, [("x", x)], [("inner", y1), ("even", y2)],
        initializers=inits, symbolic={"x": ["N", 3]},
        output_shapes={"inner": [None, 3], "even": [None, 3]})


@fixture
def chain_slice_strided_slice_as_strided():
    x = arange((6, 8))
    a = onnx_slice_ref(x, [1], [5], [0])
    b = strided_slice_ref(a, i64(0, 0), i64(0, 0), i64(1, -2), begin_mask=3, end_mask=3)
    y = as_strided_ref(b, [3, 2], [4, 1], 1)
    nodes = [
        node("Slice", ["x", "starts", "ends", "axes"], ["a"], "slice"),
        ss_node(["a", "begin", "end", "strides"], "b", begin_mask=3, end_mask=3),
        node("AsStrided", ["b"], ["y"], "as_strided", domain=CUSTOM_DOMAIN, size=[3, 2],
             stride=[4, 1], offset=1),
    ]
    inits = {"starts": i64(1), "ends": i64(5), "axes": i64(0), "begin": i64(0, 0),
             "end": i64(0, 0), "strides": i64(1, -2)}
    return Fixture(
        "chain_slice_strided_slice_as_strided",
        "A chain Slice (x[1:5]) -> StridedSlice ([:, ::-2]) -> AsStrided (size [3, 2], stride "
        "[4, 1], offset 1 over the row-major buffer of the (4, 4) intermediate): composes "
        "into one view.",
        "np.lib.stride_tricks.as_strided(x[1:5][:, ::-2].copy().ravel()[1:], (3, 2), "
        "(4 * x.itemsize, 1 * x.itemsize))", nodes, [("x", x)],
        [("y", y)], initializers=inits, opsets=CUSTOM)


@fixture
def const_fold_strided_slice_initializer():
    x = arange((2, 3)) * 100
    c = arange((4, 6))
    y = x + strided_slice_ref(c, i64(1, 5), i64(5, 0), i64(2, -2))
    nodes = [
        ss_node(["c", "begin", "end", "strides"], "c_sliced"),
        node("Add", ["x", "c_sliced"], ["y"], "add"),
    ]
    inits = {"c": c, "begin": i64(1, 5), "end": i64(5, 0), "strides": i64(2, -2)}
    return Fixture(
        "const_fold_strided_slice_initializer",
        "A StridedSlice over an initializer (c[1:5:2, 5:0:-2], all inputs constant: folds to "
        "a constant) added to the graph input.",
        "x + c[1:5:2, 5:0:-2]", nodes, [("x", x)], [("y", y)], initializers=inits,
        opsets=CUSTOM, env={"x": x, "c": c})


@fixture
def shape_slice_concat_reshape():
    x = arange((3, 4, 6))
    flat = x.reshape(x.shape[0], -1)
    y = onnx_slice_ref(flat, [2], [flat.shape[1] - 2], [1], [3])
    nodes = [
        node("Shape", ["x"], ["x_shape"], "shape_x"),
        node("Slice", ["x_shape", "zero", "one", "zero"], ["batch"], "slice_batch"),
        node("Concat", ["batch", "minus_one"], ["new_shape"], "concat_shape", axis=0),
        node("Reshape", ["x", "new_shape"], ["flat"], "reshape"),
        node("Shape", ["flat"], ["flat_shape"], "shape_flat"),
        node("Slice", ["flat_shape", "one", "two", "zero"], ["width"], "slice_width"),
        node("Sub", ["width", "two"], ["end"], "sub"),
        node("Slice", ["flat", "two", "end", "one", "three"], ["y"], "slice_y"),
    ]
    inits = {"zero": i64(0), "one": i64(1), "two": i64(2), "three": i64(3), "minus_one": i64(-1)}
    return Fixture(
        "shape_slice_concat_reshape",
        "Exporters' dynamic-shape pattern: Shape -> Slice -> Concat([N, -1]) -> Reshape "
        "flattens x [N, 4, 6] (run with N=3) to [N, 24]; then a Slice whose end comes from "
        "Shape -> Slice -> Sub (width - 2), step 3.",
        "x.reshape(x.shape[0], -1)[:, 2:22:3]", nodes, [("x", x)], [("y", y)],
        initializers=inits, symbolic={"x": ["N", 4, 6]}, output_shapes={"y": [None, 7]})


@fixture
def tf2onnx_style_int32_sentinels():
    x = arange((2, 5, 6))
    s = onnx_slice_ref(x, [-1, 1, 0], [INT32_MIN, 2, INT32_MAX], [0, 1, 2], [-1, 1, 2])
    y = np.expand_dims(np.squeeze(s, axis=1), 0)
    nodes = [
        node("Slice", ["x", "starts", "ends", "axes", "steps"], ["sliced"], "StridedSlice"),
        node("Squeeze", ["sliced", "squeeze_axes"], ["squeezed"], "StridedSlice__squeeze"),
        node("Unsqueeze", ["squeezed", "unsqueeze_axes"], ["y"], "StridedSlice__unsqueeze"),
    ]
    inits = {"starts": i32(-1, 1, 0), "ends": i32(INT32_MIN, 2, INT32_MAX),
             "axes": i32(0, 1, 2), "steps": i32(-1, 1, 2),
             "squeeze_axes": i64(1), "unsqueeze_axes": i64(0)}
    return Fixture(
        "tf2onnx_style_int32_sentinels",
        "What tf2onnx writes for tf.strided_slice x[None, ::-1, 1, ::2]: one standard Slice "
        "with all-int32 parameters and INT32_MIN / INT32_MAX sentinels for masked bounds, the "
        "shrunk axis as [1, 2) then Squeeze, the new axis as Unsqueeze.",
        "x[None, ::-1, 1, ::2]", nodes, [("x", x)], [("y", y)], initializers=inits)


@fixture
def tf2onnx_style_1e9_sentinels():
    x = arange((3, 4, 5), np.int64)
    s = onnx_slice_ref(x, [1, -1, -1], [10**9, -10**9, 10**9], [0, 1, 2], [1, -1, 10**9])
    y = np.squeeze(s, axis=2)
    nodes = [
        node("Slice", ["x", "starts", "ends", "axes", "steps"], ["sliced"], "strided_slice"),
        node("Squeeze", ["sliced", "squeeze_axes"], ["y"], "strided_slice__squeeze"),
    ]
    inits = {"starts": i64(1, -1, -1), "ends": i64(10**9, -10**9, 10**9), "axes": i64(0, 1, 2),
             "steps": i64(1, -1, 10**9), "squeeze_axes": i64(2)}
    return Fixture(
        "tf2onnx_style_1e9_sentinels",
        "Exporter form of x[1:, ::-1, -1] with +-1e9 sentinels for masked bounds and the "
        "shrunk axis written as start -1, end 1e9, step 1e9 (exactly one element whatever the "
        "sign of the index), then Squeeze.",
        "x[1:, ::-1, -1]", nodes, [("x", x)], [("y", y)], initializers=inits)


@fixture
def pytorch_style_as_strided_gather():
    x = arange((3, 8))
    size, stride = [3, 3, 3], [8, 2, 1]
    idx = np.zeros(size, dtype=np.int64)
    for j in np.ndindex(*size):
        idx[j] = sum(a * b for a, b in zip(j, stride))
    y = x.reshape(-1)[idx]
    assert np.array_equal(y, as_strided_ref(x, size, stride, 0))
    nodes = [
        node("Reshape", ["x", "minus_one"], ["flat"], "/Reshape"),
        node("Gather", ["flat", "indices"], ["y"], "/Gather", axis=0),
    ]
    inits = {"minus_one": i64(-1), "indices": idx}
    return Fixture(
        "pytorch_style_as_strided_gather",
        "What torch.onnx writes for x.unfold(1, 3, 2) / x.as_strided((3, 3, 3), (8, 2, 1)): "
        "Reshape(x, [-1]) then Gather over a constant int64 index table that is affine "
        "(index = 8*i + 2*j + k): an AsStrided in disguise.",
        ast("x", size, stride), nodes, [("x", x)], [("y", y)], initializers=inits)


@fixture
def mxnet_style_reverse():
    x = arange((2, 3, 4))
    axis = 1
    perm = list(range(8))
    perm[0], perm[axis] = axis, 0
    y = np.flip(x, axis).copy()
    nodes = [
        node("Shape", ["x"], ["rev_shape"], "rev_shape"),
        node("Shape", ["rev_shape"], ["rev_dim"], "rev_dim"),
        node("Sub", ["rev_8", "rev_dim"], ["rev_sub"], "rev_sub"),
        node("Concat", ["rev_0", "rev_sub"], ["rev_concat"], "rev_concat", axis=0),
        node("Pad", ["rev_shape", "rev_concat", "rev_1"], ["rev_shape_8_dim"], "rev_pad"),
        node("Reshape", ["x", "rev_shape_8_dim"], ["rev_data_8_dim"], "rev_reshape_8"),
        node("Transpose", ["rev_data_8_dim"], ["rev_data_t"], "rev_transpose", perm=perm),
        node("Slice", ["rev_shape", "rev_axis", "rev_axis_p1"], ["rev_axis_len"], "rev_slice"),
        node("Sub", ["rev_axis_len", "rev_1"], ["rev_axis_len_m1"], "rev_sub_1"),
        node("Squeeze", ["rev_axis_len_m1", "rev_0"], ["rev_axis_len_m1_s"], "rev_squeeze"),
        node("Range", ["rev_axis_len_m1_s", "rev_m1_s", "rev_m1_s"], ["rev_indices"], "rev_range"),
        node("Gather", ["rev_data_t", "rev_indices"], ["rev_gather"], "rev_gather"),
        node("Transpose", ["rev_gather"], ["rev_data_reversed"], "rev_transpose_back", perm=perm),
        node("Reshape", ["rev_data_reversed", "rev_shape"], ["y"], "rev"),
    ]
    inits = {"rev_8": i64(8), "rev_0": i64(0), "rev_1": i64(1), "rev_axis": i64(axis),
             "rev_axis_p1": i64(axis + 1), "rev_m1_s": np.array(-1, np.int64)}
    return Fixture(
        "mxnet_style_reverse",
        "What MXNet's mx2onnx (opset 13) writes for reverse(x, axis=1): the shape is padded to "
        "8 dims by a Pad whose pads come from Shape -> Shape -> Sub -> Concat, Reshape to 8-D, "
        "Transpose the axis to the front, Gather over Range(len-1, -1, -1) (len from "
        "Shape -> Slice), Transpose back, Reshape.",
        "x[:, ::-1]", nodes, [("x", x)], [("y", y)], initializers=inits)


# ---------------------------------------------------------------------------------------
# Writing, checking
# ---------------------------------------------------------------------------------------


def check_expression(f):
    env = dict(f.env) if f.env is not None else {n: a for n, a in f.inputs}
    env["np"] = np
    got = eval(f.expression, {"__builtins__": {}}, env)  # noqa: S307 - our own literal text
    got = got if isinstance(got, tuple) else (got,)
    assert len(got) == len(f.outputs), f.name
    for g, (name, want) in zip(got, f.outputs):
        g = np.asarray(g)
        assert g.dtype == want.dtype and g.shape == want.shape, \
            (f.name, name, g.dtype, g.shape, want.dtype, want.shape)
        assert g.tobytes() == want.tobytes(), (f.name, name)


def check_model(f, model):
    onnx.checker.check_model(model, full_check=f.standard_only)
    if f.standard_only:
        onnx.shape_inference.infer_shapes(model, check_type=True, strict_mode=True)


def run_onnxruntime(f, model):
    """Cross-check standard-only fixtures with onnxruntime, when it is installed."""
    try:
        import onnxruntime as ort
    except ImportError:
        return None
    m = onnx.ModelProto()
    m.CopyFrom(model)
    for op in m.opset_import:
        if op.domain in ("", "ai.onnx") and op.version < 7:
            op.version = 9  # onnxruntime needs opset >= 7; Slice-1 is the Slice of opsets 1..9
    so = ort.SessionOptions()
    so.log_severity_level = 3
    sess = ort.InferenceSession(m.SerializeToString(), so, providers=["CPUExecutionProvider"])
    got = sess.run([n for n, _ in f.outputs], {n: a for n, a in f.inputs})
    bad = []
    for g, (name, want) in zip(got, f.outputs):
        if not (g.dtype == want.dtype and g.shape == want.shape and g.tobytes() == want.tobytes()):
            bad.append("%s: onnxruntime %s %s vs expected %s %s" % (
                name, g.dtype, g.shape, want.dtype, want.shape))
    return bad


def write_fixture(f):
    d = os.path.join(HERE, f.name)
    if os.path.isdir(d):
        shutil.rmtree(d)
    os.makedirs(os.path.join(d, "inputs"))
    os.makedirs(os.path.join(d, "expected"))
    model = f.model()
    check_model(f, model)
    with open(os.path.join(d, "model.onnx"), "wb") as fh:
        fh.write(model.SerializeToString())
    for name, arr in f.inputs:
        np.save(os.path.join(d, "inputs", escape(name) + ".npy"), arr, allow_pickle=False)
    for name, arr in f.outputs:
        np.save(os.path.join(d, "expected", escape(name) + ".npy"), arr, allow_pickle=False)
    return model


def manifest_entry(f):
    e = {
        "name": f.name,
        "description": f.description,
        "expression": f.expression,
        "inputs": [n for n, _ in f.inputs],
        "outputs": [n for n, _ in f.outputs],
    }
    if f.symbolic:
        e["symbolic_inputs"] = f.symbolic
    e["lowerable"] = f.lowerable
    return e


def main():
    fixtures = [build() for build in FIXTURES]
    names = [f.name for f in fixtures]
    assert len(set(names)) == len(names), "duplicate fixture names"
    ort_report = []
    entries = []
    for f in fixtures:
        assert f.name == f.name.lower() and f.name.replace("_", "").isalnum(), f.name
        assert not f.name.startswith(EXTERNAL_PREFIX), f.name
        check_expression(f)
        model = write_fixture(f)
        if f.standard_only:
            bad = run_onnxruntime(f, model)
            if bad is None:
                ort_report.append("%s: onnxruntime not installed, not cross-checked" % f.name)
            elif bad and f.name in KNOWN_ORT_DEVIATIONS:
                ort_report.append("%s: onnxruntime differs, known onnxruntime bug (%s): %s" % (
                    f.name, KNOWN_ORT_DEVIATIONS[f.name], "; ".join(bad)))
            elif bad:
                ort_report.append("%s: MISMATCH %s" % (f.name, "; ".join(bad)))
            else:
                ort_report.append("%s: onnxruntime agrees" % f.name)
        entries.append(manifest_entry(f))

    # keep fixtures produced by export_torch.py
    manifest_path = os.path.join(HERE, "manifest.json")
    if os.path.exists(manifest_path):
        with open(manifest_path) as fh:
            old = json.load(fh)
        kept = [e for e in old.get("fixtures", []) if e["name"].startswith(EXTERNAL_PREFIX)
                and os.path.isfile(os.path.join(HERE, e["name"], "model.onnx"))]
        entries += sorted(kept, key=lambda e: e["name"])
    with open(manifest_path, "w") as fh:
        json.dump({"fixtures": entries}, fh, indent=2, ensure_ascii=False)
        fh.write("\n")

    print("wrote %d fixtures (+%d kept from export_torch.py)" % (
        len(fixtures), len(entries) - len(fixtures)))
    for line in ort_report:
        print("  " + line)
    if any("MISMATCH" in line for line in ort_report):
        print("error: onnxruntime disagrees with the expected outputs (MISMATCH above)",
              file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
