#!/usr/bin/env python3
"""Writes tests/data_dependent/<case>/: small models whose sizes depend on data (NonZero counts, TopK
with a run-time k, shapes of data-dependent tensors) or whose dims and dtypes exporters compute in
ways the analysis must follow exactly, each with inputs at two sizes (`inputs/a`, `inputs/b`) and
onnxruntime's outputs (`expected/a`, `expected/b`).

    python3 tests/data_dependent/generate.py [CASE ...]

tests/data_dependent.rs runs each model through sliceops (the original, and the model `fold`
writes) and compares with the outputs recorded here; it also checks what `infer` says of them.
Inputs are drawn from a seeded generator, so the files are reproducible.
"""

import os
import shutil
import sys

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
CASES = []


def case(fn):
    CASES.append(fn)
    return fn


def const(name, array):
    return numpy_helper.from_array(np.asarray(array), name)


def model(name, nodes, inputs, outputs, initializers=(), opset=17):
    graph = helper.make_graph(nodes, name, inputs, outputs, list(initializers))
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], producer_name="sliceops-tests")
    m.ir_version = 8
    onnx.checker.check_model(m)
    return m


def out(name, elem, rank=1):
    """A graph output of known rank, its dims left unnamed."""
    return helper.make_tensor_value_info(name, elem, [None] * rank)


def write(name, m, feeds_a, feeds_b):
    folder = os.path.join(HERE, name)
    shutil.rmtree(folder, ignore_errors=True)
    os.makedirs(folder)
    onnx.save(m, os.path.join(folder, "model.onnx"))
    session = ort.InferenceSession(m.SerializeToString(), providers=["CPUExecutionProvider"])
    names = [o.name for o in session.get_outputs()]
    for size, feeds in (("a", feeds_a), ("b", feeds_b)):
        os.makedirs(os.path.join(folder, "inputs", size))
        os.makedirs(os.path.join(folder, "expected", size))
        for k, v in feeds.items():
            np.save(os.path.join(folder, "inputs", size, f"{k}.npy"), v)
        for k, v in zip(names, session.run(None, feeds)):
            np.save(os.path.join(folder, "expected", size, f"{k}.npy"), v)


def scores(seed, n, above):
    """`n` distinct scores in [0, 1), exactly `above` of them above 0.5."""
    r = np.random.default_rng(seed)
    hi = 0.5 + r.permutation(np.arange(1, above + 1)) / (2.0 * (above + 1))
    lo = r.permutation(np.arange(0, n - above)) / (2.0 * (n - above + 1))
    x = np.concatenate([hi, lo])
    return r.permutation(x).astype(np.float32)


@case
def ssd_topk_min():
    """torchvision SSDlite's post-processing: the scores above a threshold, then the best
    `min(count, 4)` of them (SSDlite keeps `min(count, 300)`): `k` is a NonZero count capped by a
    constant, bigger than the count at one size, smaller at the other."""
    nodes = [
        helper.make_node("Greater", ["scores", "threshold"], ["mask"], name="/m/Greater"),
        helper.make_node("NonZero", ["mask"], ["nz"], name="/m/NonZero"),
        helper.make_node("Reshape", ["nz", "flat"], ["idx"], name="/m/Reshape"),
        helper.make_node("Gather", ["scores", "idx"], ["kept"], name="/m/Gather", axis=0),
        helper.make_node("Shape", ["nz"], ["nz_shape"], name="/m/Shape"),
        helper.make_node("Gather", ["nz_shape", "one"], ["count"], name="/m/Gather_1", axis=0),
        helper.make_node("Unsqueeze", ["count", "axes0"], ["count1"], name="/m/Unsqueeze"),
        helper.make_node("Min", ["count1", "cap"], ["k"], name="/m/Min"),
        helper.make_node("TopK", ["kept", "k"], ["best", "best_pos"], name="/m/TopK", axis=0),
        helper.make_node("Gather", ["idx", "best_pos"], ["best_idx"], name="/m/Gather_2", axis=0),
        helper.make_node("Cast", ["k"], ["k_out"], name="/m/Cast", to=TensorProto.INT64),
    ]
    inits = [const("threshold", np.float32(0.5)), const("flat", np.array([-1], np.int64)),
             const("one", np.int64(1)), const("axes0", np.array([0], np.int64)),
             const("cap", np.array([4], np.int64))]
    m = model("ssd_topk_min", nodes, [helper.make_tensor_value_info("scores", TensorProto.FLOAT, ["N"])],
              [out("best", TensorProto.FLOAT), out("best_idx", TensorProto.INT64), out("k_out", TensorProto.INT64)],
              inits)
    write("ssd_topk_min", m, {"scores": scores(1, 12, 7)}, {"scores": scores(2, 9, 2)})


@case
def nonzero_counts_arithmetic():
    """Two NonZero counts: the values above 0.5 and below -0.5 concatenated, the best `max(K1, K2)`
    of them, and the shape of the concatenation (`K1 + K2`) and `K1 - min(K1, K2)` as outputs."""
    nodes = [
        helper.make_node("Greater", ["x", "half"], ["pos"], name="pos"),
        helper.make_node("Less", ["x", "neg_half"], ["neg"], name="neg"),
        helper.make_node("NonZero", ["pos"], ["nz_pos"], name="nz_pos"),
        helper.make_node("NonZero", ["neg"], ["nz_neg"], name="nz_neg"),
        helper.make_node("Reshape", ["nz_pos", "flat"], ["i_pos"], name="i_pos"),
        helper.make_node("Reshape", ["nz_neg", "flat"], ["i_neg"], name="i_neg"),
        helper.make_node("Gather", ["x", "i_pos"], ["v_pos"], name="v_pos", axis=0),
        helper.make_node("Gather", ["x", "i_neg"], ["v_neg"], name="v_neg", axis=0),
        helper.make_node("Concat", ["v_pos", "v_neg"], ["both"], name="both", axis=0),
        helper.make_node("Shape", ["i_pos"], ["k1"], name="k1"),
        helper.make_node("Shape", ["i_neg"], ["k2"], name="k2"),
        helper.make_node("Max", ["k1", "k2"], ["k"], name="k"),
        helper.make_node("TopK", ["both", "k"], ["best", "best_pos"], name="topk", axis=0, largest=0),
        helper.make_node("Shape", ["both"], ["both_shape"], name="both_shape"),
        helper.make_node("Min", ["k1", "k2"], ["kmin"], name="kmin"),
        helper.make_node("Sub", ["k1", "kmin"], ["excess"], name="excess"),
    ]
    inits = [const("half", np.float32(0.5)), const("neg_half", np.float32(-0.5)),
             const("flat", np.array([-1], np.int64))]
    r = np.random.default_rng(3)
    a = np.round(r.uniform(-1, 1, 11) * 64).astype(np.float32) / 64
    b = np.round(r.uniform(-1, 1, 6) * 64).astype(np.float32) / 64
    m = model("nonzero_counts_arithmetic", nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N"])],
              [out("best", TensorProto.FLOAT), out("best_pos", TensorProto.INT64), out("both_shape", TensorProto.INT64),
               out("excess", TensorProto.INT64)], inits)
    write("nonzero_counts_arithmetic", m, {"x": a}, {"x": b})


@case
def nonzero_shape():
    """The shape of a NonZero as the graph output (issue 34's minimal case)."""
    nodes = [
        helper.make_node("NonZero", ["x"], ["nz"], name="nz"),
        helper.make_node("Shape", ["nz"], ["shp"], name="shp"),
    ]
    m = model("nonzero_shape", nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N"])],
              [out("shp", TensorProto.INT64)])
    write("nonzero_shape", m, {"x": np.array([0, 1, 0, 2, 3], np.float32)},
          {"x": np.array([0, 0, 0, 7], np.float32)})


@case
def nonzero_count_expanded():
    """Only values built from a NonZero's count are outputs: an Expand and a ConstantOfShape to
    `[count]`, and a Range up to it; the NonZero itself is needed by nothing but a Shape."""
    nodes = [
        helper.make_node("NonZero", ["x"], ["nz"], name="nz"),
        helper.make_node("Shape", ["nz"], ["nz_shape"], name="nz_shape"),
        helper.make_node("Slice", ["nz_shape", "one", "two"], ["count"], name="count"),
        helper.make_node("Expand", ["seven", "count"], ["expanded"], name="expanded"),
        helper.make_node("ConstantOfShape", ["count"], ["zeros"], name="zeros",
                         value=numpy_helper.from_array(np.array([2.5], np.float32))),
        helper.make_node("Squeeze", ["count", "axes0"], ["count0"], name="count0"),
        helper.make_node("Range", ["zero", "count0", "one0"], ["positions"], name="positions"),
    ]
    inits = [const("one", np.array([1], np.int64)), const("two", np.array([2], np.int64)),
             const("seven", np.array([7.0], np.float32)), const("axes0", np.array([0], np.int64)),
             const("zero", np.int64(0)), const("one0", np.int64(1))]
    m = model("nonzero_count_expanded", nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 2])],
              [out("expanded", TensorProto.FLOAT), out("zeros", TensorProto.FLOAT),
               out("positions", TensorProto.INT64)], inits)
    write("nonzero_count_expanded", m, {"x": np.array([[0, 1], [2, 0], [0, 0]], np.float32)},
          {"x": np.array([[1, 1], [2, 3], [0, 5], [4, 0], [6, 7]], np.float32)})


@case
def tf2onnx_int32_where():
    """tf2onnx's strided_slice over a dynamic dim: the end is `Where(cond, int32 constant,
    Cast<int32>(Max(Cast<float>(shape arithmetic), -1e9)))`, an int32 value the analysis carries as
    a dim; the Slice reads it."""
    nodes = [
        helper.make_node("Shape", ["x"], ["s"], name="s"),
        helper.make_node("Cast", ["s"], ["s32"], name="s32", to=TensorProto.INT32),
        helper.make_node("Slice", ["s32", "zero1", "one1"], ["n32"], name="n32"),
        helper.make_node("Sub", ["n32", "two32"], ["m32"], name="m32"),
        helper.make_node("Cast", ["m32"], ["mf"], name="mf", to=TensorProto.FLOAT),
        helper.make_node("Max", ["mf", "lower"], ["clamped"], name="clamped"),
        helper.make_node("Cast", ["clamped"], ["c32"], name="c32", to=TensorProto.INT32),
        helper.make_node("Less", ["c32", "zero32"], ["cond"], name="cond"),
        helper.make_node("Where", ["cond", "big32", "c32"], ["end"], name="end"),
        helper.make_node("Slice", ["x", "zero32v", "end", "zero32v"], ["y"], name="y"),
    ]
    inits = [const("zero1", np.array([0], np.int64)), const("one1", np.array([1], np.int64)),
             const("two32", np.array([2], np.int32)), const("lower", np.array([-1e9], np.float32)),
             const("zero32", np.array([0], np.int32)), const("big32", np.array([2147483647], np.int32)),
             const("zero32v", np.array([0], np.int32))]
    m = model("tf2onnx_int32_where", nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 3])],
              [out("y", TensorProto.FLOAT, 2), out("end", TensorProto.INT32)], inits)
    r = np.random.default_rng(5)
    write("tf2onnx_int32_where", m, {"x": r.standard_normal((6, 3)).astype(np.float32)},
          {"x": r.standard_normal((3, 3)).astype(np.float32)})


@case
def wav2vec2_group_norm():
    """wav2vec2's feature extractor starts with a strided Conv1d and a GroupNorm the legacy exporter
    writes as `Reshape(x, [0, 32, -1])`, InstanceNormalization, `Reshape` back to `Shape(x)`, then the
    affine: the `-1` is `samples/5-1`, exactly."""
    r = np.random.default_rng(7)
    w = (np.round(r.standard_normal((32, 1, 10)) * 16) / 16).astype(np.float32)
    nodes = [
        helper.make_node("Unsqueeze", ["audio", "axes1"], ["a3"], name="/fe/Unsqueeze"),
        helper.make_node("Conv", ["a3", "w"], ["conv"], name="/fe/conv", kernel_shape=[10], strides=[5]),
        helper.make_node("Reshape", ["conv", "groups"], ["grouped"], name="/fe/norm/Reshape"),
        helper.make_node("InstanceNormalization", ["grouped", "ones", "zeros"], ["normed"],
                         name="/fe/norm/InstanceNormalization", epsilon=1e-5),
        helper.make_node("Shape", ["conv"], ["conv_shape"], name="/fe/norm/Shape"),
        helper.make_node("Reshape", ["normed", "conv_shape"], ["back"], name="/fe/norm/Reshape_1"),
        helper.make_node("Mul", ["back", "gamma"], ["scaled"], name="/fe/norm/Mul"),
        helper.make_node("Add", ["scaled", "beta"], ["y"], name="/fe/norm/Add"),
    ]
    inits = [const("axes1", np.array([1], np.int64)), const("w", w),
             const("groups", np.array([0, 32, -1], np.int64)), const("ones", np.ones(32, np.float32)),
             const("zeros", np.zeros(32, np.float32)),
             const("gamma", (np.arange(32, dtype=np.float32) / 8 + 0.5).reshape(32, 1)),
             const("beta", (np.arange(32, dtype=np.float32) / 16 - 1).reshape(32, 1))]
    m = model("wav2vec2_group_norm", nodes,
              [helper.make_tensor_value_info("audio", TensorProto.FLOAT, ["batch", "samples"])],
              [out("y", TensorProto.FLOAT, 3)], inits)
    write("wav2vec2_group_norm", m, {"audio": r.standard_normal((2, 60)).astype(np.float32)},
          {"audio": r.standard_normal((1, 83)).astype(np.float32)})


@case
def partial_dims():
    """Dims known in part: a Resize to `Concat(Shape(x)[0:2], size)` with `size` a run-time value is
    `[N, 3, ?, ?]`; a Conv over a tensor whose channel count is known only at run time (reshaped to a
    run-time target) still has the kernel's output channels and the input's batch."""
    r = np.random.default_rng(11)
    w = (np.round(r.standard_normal((5, 4, 3, 3)) * 16) / 16).astype(np.float32)
    nodes = [
        helper.make_node("Shape", ["x"], ["xs"], name="/m/Shape"),
        helper.make_node("Slice", ["xs", "zero1", "two1"], ["nc"], name="/m/Slice"),
        helper.make_node("Concat", ["nc", "size"], ["sizes"], name="/m/Concat", axis=0),
        helper.make_node("Resize", ["x", "", "", "sizes"], ["resized"], name="/m/Resize", mode="nearest"),
        helper.make_node("Reshape", ["x", "target"], ["reshaped"], name="/m/Reshape"),
        helper.make_node("Conv", ["reshaped", "w"], ["conv"], name="/m/Conv", pads=[1, 1, 1, 1]),
    ]
    inits = [const("zero1", np.array([0], np.int64)), const("two1", np.array([2], np.int64)), const("w", w)]
    m = model("partial_dims", nodes,
              [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 3, "H", "W"]),
               helper.make_tensor_value_info("size", TensorProto.INT64, [2]),
               helper.make_tensor_value_info("target", TensorProto.INT64, [4])],
              [out("resized", TensorProto.FLOAT, 4), out("conv", TensorProto.FLOAT, 4)], inits)
    xa = (np.round(r.standard_normal((2, 3, 4, 4)) * 16) / 16).astype(np.float32)
    xb = (np.round(r.standard_normal((1, 3, 4, 8)) * 16) / 16).astype(np.float32)
    write("partial_dims", m,
          {"x": xa, "size": np.array([6, 3], np.int64), "target": np.array([6, 4, 2, 2], np.int64)},
          {"x": xb, "size": np.array([2, 5], np.int64), "target": np.array([2, 4, 3, 4], np.int64)})


@case
def two_stage_topk():
    """Two rounds of SSD-style selection, as a two-stage detector's proposals then boxes: the best
    `min(count, 4)` scores above 0.5, then of those the ones above 0.7 and the best `min(count2, 2)` of
    them. The second NonZero's count is at most the first TopK's `min(count, 4)`: a bound holding a
    min (tract proving terms against such an assertion recursed until the stack overflowed)."""
    nodes = [
        helper.make_node("Greater", ["scores", "threshold"], ["mask"], name="/m/Greater"),
        helper.make_node("NonZero", ["mask"], ["nz"], name="/m/NonZero"),
        helper.make_node("Reshape", ["nz", "flat"], ["idx"], name="/m/Reshape"),
        helper.make_node("Gather", ["scores", "idx"], ["kept"], name="/m/Gather", axis=0),
        helper.make_node("Shape", ["nz"], ["nz_shape"], name="/m/Shape"),
        helper.make_node("Gather", ["nz_shape", "one"], ["count"], name="/m/Gather_1", axis=0),
        helper.make_node("Unsqueeze", ["count", "axes0"], ["count1"], name="/m/Unsqueeze"),
        helper.make_node("Min", ["count1", "cap"], ["k"], name="/m/Min"),
        helper.make_node("TopK", ["kept", "k"], ["best", "best_pos"], name="/m/TopK", axis=0),
        helper.make_node("Greater", ["best", "threshold2"], ["mask2"], name="/m/Greater_1"),
        helper.make_node("NonZero", ["mask2"], ["nz2"], name="/m/NonZero_1"),
        helper.make_node("Reshape", ["nz2", "flat"], ["idx2"], name="/m/Reshape_1"),
        helper.make_node("Gather", ["best", "idx2"], ["kept2"], name="/m/Gather_2", axis=0),
        helper.make_node("Shape", ["nz2"], ["nz2_shape"], name="/m/Shape_1"),
        helper.make_node("Gather", ["nz2_shape", "one"], ["count2"], name="/m/Gather_3", axis=0),
        helper.make_node("Unsqueeze", ["count2", "axes0"], ["count2_1"], name="/m/Unsqueeze_1"),
        helper.make_node("Min", ["count2_1", "cap2"], ["k2"], name="/m/Min_1"),
        helper.make_node("TopK", ["kept2", "k2"], ["best2", "best2_pos"], name="/m/TopK_1", axis=0),
        helper.make_node("Shape", ["best2"], ["best2_shape"], name="/m/Shape_2"),
    ]
    inits = [const("threshold", np.float32(0.5)), const("threshold2", np.float32(0.7)),
             const("flat", np.array([-1], np.int64)), const("one", np.int64(1)),
             const("axes0", np.array([0], np.int64)), const("cap", np.array([4], np.int64)),
             const("cap2", np.array([2], np.int64))]
    m = model("two_stage_topk", nodes, [helper.make_tensor_value_info("scores", TensorProto.FLOAT, ["N"])],
              [out("best2", TensorProto.FLOAT), out("best2_pos", TensorProto.INT64),
               out("best2_shape", TensorProto.INT64)],
              inits)
    write("two_stage_topk", m, {"scores": scores(3, 12, 7)}, {"scores": scores(4, 9, 2)})


@case
def partial_dims_windows():
    """Dims known in part through ConvTranspose, MaxPool, AveragePool and Gemm: their inputs reshaped
    to run-time targets (channel counts and sizes known only when the model runs). The output
    channels of a ConvTranspose are its kernel's (times its groups), its batch the input's, its
    spatial dims follow from the input's; a pool keeps batch and channels; a Gemm's rows are A's and
    its columns B's."""
    r = np.random.default_rng(12)
    wt = (np.round(r.standard_normal((4, 2, 3, 3)) * 16) / 16).astype(np.float32)
    b = (np.round(r.standard_normal((6, 5)) * 16) / 16).astype(np.float32)
    nodes = [
        helper.make_node("Reshape", ["x", "target"], ["reshaped"], name="/m/Reshape"),
        helper.make_node("ConvTranspose", ["reshaped", "wt"], ["deconv"], name="/m/ConvTranspose",
                         strides=[2, 2], pads=[1, 1, 1, 1], output_padding=[1, 1]),
        helper.make_node("MaxPool", ["reshaped"], ["maxpool"], name="/m/MaxPool", kernel_shape=[2, 2],
                         strides=[2, 2]),
        helper.make_node("AveragePool", ["reshaped"], ["avgpool"], name="/m/AveragePool", kernel_shape=[3, 3],
                         pads=[1, 1, 1, 1], count_include_pad=1),
        helper.make_node("Reshape", ["x", "rows"], ["a"], name="/m/Reshape_1"),
        helper.make_node("Gemm", ["a", "b"], ["gemm"], name="/m/Gemm"),
    ]
    m = model("partial_dims_windows", nodes,
              [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 3, "H", "W"]),
               helper.make_tensor_value_info("target", TensorProto.INT64, [4]),
               helper.make_tensor_value_info("rows", TensorProto.INT64, [2])],
              [out("deconv", TensorProto.FLOAT, 4), out("maxpool", TensorProto.FLOAT, 4),
               out("avgpool", TensorProto.FLOAT, 4), out("gemm", TensorProto.FLOAT, 2)],
              [const("wt", wt), const("b", b)])
    xa = (np.round(r.standard_normal((2, 3, 4, 4)) * 16) / 16).astype(np.float32)
    xb = (np.round(r.standard_normal((1, 3, 4, 8)) * 16) / 16).astype(np.float32)
    write("partial_dims_windows", m,
          {"x": xa, "target": np.array([2, 4, 3, 4], np.int64), "rows": np.array([16, 6], np.int64)},
          {"x": xb, "target": np.array([1, 4, 4, 6], np.int64), "rows": np.array([16, 6], np.int64)})


def nms_boxes(seed, n):
    """`n` boxes [y1, x1, y2, x2] on a 100x100 image, sides 5 to 30, many overlapping; either corner first."""
    r = np.random.default_rng(seed)
    y, x = r.uniform(0, 100, (2, n))
    h, w = r.uniform(5, 30, (2, n))
    boxes = np.stack([y, x, y + h, x + w], -1)
    flip = r.uniform(size=n) < 0.3
    boxes[flip] = boxes[flip][:, [2, 3, 0, 1]]
    return boxes[None].astype(np.float32)


def nms_model(name, max_per_class):
    nodes = [helper.make_node("NonMaxSuppression", ["boxes", "scores", "max_out", "iou", "score_threshold"],
                              ["selected"], name="/m/NonMaxSuppression")]
    inits = [const("max_out", np.array([max_per_class], np.int64)), const("iou", np.array([0.5], np.float32)),
             const("score_threshold", np.array([0.05], np.float32))]
    return model(name, nodes,
                 [helper.make_tensor_value_info("boxes", TensorProto.FLOAT, [1, "N", 4]),
                  helper.make_tensor_value_info("scores", TensorProto.FLOAT, [1, 2, "N"])],
                 [out("selected", TensorProto.INT64, 2)], inits)


def nms_scores(seed, n):
    """Two classes of scores on a coarse grid (many equal: ties go to the lower box index)."""
    return (np.random.default_rng(seed).integers(0, 20, (1, 2, n)) / 20).astype(np.float32)


@case
def nms_many_boxes():
    """NonMaxSuppression keeping many boxes of many (a detector's box head at a low threshold), with
    equal scores and boxes given by either corner."""
    write("nms_many_boxes", nms_model("nms_many_boxes", 1000),
          {"boxes": nms_boxes(5, 600), "scores": nms_scores(6, 600)},
          {"boxes": nms_boxes(7, 900), "scores": nms_scores(8, 900)})


@case
def nms_no_output():
    """max_output_boxes_per_class = 0 selects nothing (ONNX: "0, which means no output")."""
    write("nms_no_output", nms_model("nms_no_output", 0),
          {"boxes": nms_boxes(5, 60), "scores": nms_scores(6, 60)},
          {"boxes": nms_boxes(7, 90), "scores": nms_scores(8, 90)})


@case
def many_class_selections():
    """torchvision SSD's post-processing over many classes: for each of 120 classes the scores above
    a threshold (a NonZero count), the best `min(count, 3)` of them (TopK), their boxes and labels;
    then the 120 selections concatenated (boxes, scores, labels: one length, the sum of 120 sizes
    known only at run time) and the best `min(total, 10)` of all. Some classes keep nothing, some
    more than 3."""
    classes, cap, best = 120, 3, 10
    nodes, inits = [], [const("threshold", np.float32(0.5)), const("flat", np.array([-1], np.int64)),
                        const("cap", np.array([cap], np.int64)), const("best", np.array([best], np.int64))]
    boxes, kept, labels = [], [], []
    for c in range(classes):
        p = f"/m/c{c}/"
        inits.append(const(f"class{c}", np.int64(c)))
        nodes += [
            helper.make_node("Gather", ["scores", f"class{c}"], [p + "s"], name=p + "Gather", axis=0),
            helper.make_node("Greater", [p + "s", "threshold"], [p + "mask"], name=p + "Greater"),
            helper.make_node("NonZero", [p + "mask"], [p + "nz"], name=p + "NonZero"),
            helper.make_node("Reshape", [p + "nz", "flat"], [p + "idx"], name=p + "Reshape"),
            helper.make_node("Gather", [p + "s", p + "idx"], [p + "kept"], name=p + "Gather_1", axis=0),
            helper.make_node("Shape", [p + "idx"], [p + "count"], name=p + "Shape"),
            helper.make_node("Concat", [p + "count", "cap"], [p + "both"], name=p + "Concat", axis=0),
            helper.make_node("ReduceMin", [p + "both"], [p + "k"], name=p + "ReduceMin", keepdims=1),
            helper.make_node("TopK", [p + "kept", p + "k"], [p + "top", p + "pos"], name=p + "TopK", axis=0),
            helper.make_node("Gather", [p + "idx", p + "pos"], [p + "at"], name=p + "Gather_2", axis=0),
            helper.make_node("Gather", ["boxes", p + "at"], [p + "boxes"], name=p + "Gather_3", axis=0),
            helper.make_node("Shape", [p + "top"], [p + "n"], name=p + "Shape_1"),
            helper.make_node("Expand", [f"class{c}", p + "n"], [p + "labels"], name=p + "Expand"),
        ]
        boxes.append(p + "boxes")
        kept.append(p + "top")
        labels.append(p + "labels")
    nodes += [
        helper.make_node("Concat", boxes, ["boxes_kept"], name="/m/boxes", axis=0),
        helper.make_node("Concat", kept, ["scores_kept"], name="/m/scores", axis=0),
        helper.make_node("Concat", labels, ["labels_kept"], name="/m/labels", axis=0),
        helper.make_node("Shape", ["scores_kept"], ["total"], name="/m/Shape"),
        helper.make_node("Concat", ["total", "best"], ["total_best"], name="/m/Concat", axis=0),
        helper.make_node("ReduceMin", ["total_best"], ["k"], name="/m/ReduceMin", keepdims=1),
        helper.make_node("TopK", ["scores_kept", "k"], ["top_scores", "top_pos"], name="/m/TopK", axis=0),
        helper.make_node("Gather", ["boxes_kept", "top_pos"], ["top_boxes"], name="/m/Gather", axis=0),
        helper.make_node("Gather", ["labels_kept", "top_pos"], ["top_labels"], name="/m/Gather_1", axis=0),
    ]
    m = model("many_class_selections", nodes,
              [helper.make_tensor_value_info("scores", TensorProto.FLOAT, [classes, "N"]),
               helper.make_tensor_value_info("boxes", TensorProto.FLOAT, ["N", 4])],
              [out("boxes_kept", TensorProto.FLOAT, 2), out("scores_kept", TensorProto.FLOAT),
               out("labels_kept", TensorProto.INT64), out("top_scores", TensorProto.FLOAT),
               out("top_boxes", TensorProto.FLOAT, 2), out("top_labels", TensorProto.INT64)], inits)

    def feeds(seed, n):
        # Distinct scores (no ties for TopK to order), about a quarter of them above the threshold.
        r = np.random.default_rng(seed)
        s = r.permutation(np.arange(classes * n)).reshape(classes, n) / (classes * n)
        s = (0.5 + (s - 0.75) * 2 / 3).astype(np.float32)
        return {"scores": s, "boxes": r.uniform(0, 100, (n, 4)).astype(np.float32)}

    write("many_class_selections", m, feeds(11, 9), feeds(12, 4))


def main():
    # With names, only those cases are written.
    wanted = set(sys.argv[1:])
    for fn in CASES:
        if wanted and fn.__name__ not in wanted:
            continue
        fn()
        print("wrote", fn.__name__)


if __name__ == "__main__":
    main()
