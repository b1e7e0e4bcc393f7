#!/usr/bin/env python3
"""Writes tests/standard_ops/cases.json: small single-node models of the standard ops sliceops adds
to tract (src/ops/, listed in src/ops/added.rs), their inputs and the outputs onnx's reference implementation gives.

    python3 tests/standard_ops/generate.py

tests/standard_ops.rs builds each model from its entry (op, opset, attributes, inputs, outputs), runs
it and compares with the outputs recorded here. Inputs are drawn from a seeded generator, so the file
is reproducible; floats are written exactly (a float32 value as the shortest decimal that reads back
to it), non-finite ones as the strings "nan", "inf", "-inf".
"""

import json
import os

import numpy as np
import onnx
from onnx import helper
from onnx.reference import ReferenceEvaluator
from onnx.reference.ops.op_dropout import _dropout

HERE = os.path.dirname(os.path.abspath(__file__))
CASES = []


def case(name, op, opset, inputs, outputs, domain="", oracle="reference", rtol=None, atol=None, expected=None,
         exact=False, symbolic=None, **attrs):
    """inputs: [(name, array or None)]; None or an empty name is an omitted optional input. `oracle`
    is onnx's reference implementation, or onnxruntime where the reference is known to be wrong.
    `rtol`: the relative tolerance of float outputs where the oracle rounds at every step (the test's
    default is two float32 ulps); `atol`: an absolute tolerance added to it, where sums cancel.
    `exact`: float outputs must equal the oracle's bit for bit. `symbolic`: {input name: [dim name or
    None per axis]}, the model's input declared with those dims symbolic (the values keep their shapes)."""
    entry = dict(name=name, op=op, opset=opset, inputs=inputs, outputs=outputs, attrs=attrs, domain=domain,
                 oracle=oracle)
    if rtol is not None:
        entry["rtol"] = rtol
    if atol is not None:
        entry["atol"] = atol
    if expected is not None:
        entry["expected"] = expected
    if exact:
        entry["exact"] = True
    if symbolic is not None:
        entry["symbolic"] = symbolic
    CASES.append(entry)


def rng(seed):
    return np.random.default_rng(seed)


def f32(r, *shape, scale=1.0):
    """Normal values rounded to multiples of 1/16: short and exact in JSON."""
    return (np.round(r.standard_normal(shape) * scale * 16) / 16).astype(np.float32)


# --- Attention -------------------------------------------------------------------------------------

def attention_cases():
    r = rng(23)
    q4, k4, v4 = f32(r, 2, 3, 4, 8), f32(r, 2, 3, 6, 8), f32(r, 2, 3, 6, 5)
    case("attention_4d", "Attention", 23, [("Q", q4), ("K", k4), ("V", v4)], ["Y"])
    case("attention_4d_causal_scaled", "Attention", 23, [("Q", q4), ("K", k4), ("V", v4)], ["Y"], is_causal=1, scale=0.25)
    qg = f32(r, 2, 6, 4, 8)
    case("attention_4d_gqa_causal", "Attention", 23, [("Q", qg), ("K", k4), ("V", v4)], ["Y"], is_causal=1)
    mask_b = r.random((4, 6)) > 0.3
    mask_b[1] = False  # a row with nothing to attend
    case("attention_4d_bool_mask_masked_row", "Attention", 23,
         [("Q", q4), ("K", k4), ("V", v4), ("attn_mask", mask_b)], ["Y", "", "", "qk"], qk_matmul_output_mode=3)
    mask_f = f32(r, 2, 1, 4, 4)
    case("attention_4d_short_float_mask_bias", "Attention", 23,
         [("Q", q4), ("K", k4), ("V", v4), ("attn_mask", mask_f)], ["Y", "", "", "qk"], qk_matmul_output_mode=2)
    case("attention_4d_softcap_mode1", "Attention", 23,
         [("Q", f32(r, 1, 2, 3, 4, scale=4.0)), ("K", f32(r, 1, 2, 5, 4, scale=4.0)), ("V", f32(r, 1, 2, 5, 4))],
         ["Y", "", "", "qk"], softcap=2.0, qk_matmul_output_mode=1)
    q3, k3, v3 = f32(r, 2, 3, 16), f32(r, 2, 5, 8), f32(r, 2, 5, 6)
    pk, pv = f32(r, 2, 2, 4, 4), f32(r, 2, 2, 4, 3)
    case("attention_3d_gqa_past_present_causal", "Attention", 23,
         [("Q", q3), ("K", k3), ("V", v3), ("attn_mask", None), ("past_key", pk), ("past_value", pv)],
         ["Y", "present_key", "present_value", "qk"], q_num_heads=4, kv_num_heads=2, is_causal=1)
    nonpad = np.array([3, 6], dtype=np.int64)
    case("attention_24_nonpad_causal", "Attention", 24,
         [("Q", q4), ("K", k4), ("V", v4), ("", None), ("", None), ("", None), ("nonpad_kv_seqlen", nonpad)],
         ["Y"], is_causal=1)
    case("attention_25_window", "Attention", 25, [("Q", q4), ("K", k4), ("V", v4)], ["Y"],
         left_window_size=1, right_window_size=2)
    case("attention_4d_fp64_precision", "Attention", 23,
         [("Q", q4.astype(np.float64)), ("K", k4.astype(np.float64)), ("V", v4.astype(np.float64))], ["Y"],
         softmax_precision=11)
    # Float16 throughout: every step rounded where the reference rounds, compared bit for bit (rows of
    # 20 keys: pairwise float32 sums; the soft cap; float16 and boolean masks; the extra outputs).
    h = np.float16
    qh, kh, vh = f32(r, 2, 3, 5, 8).astype(h), f32(r, 2, 3, 20, 8).astype(h), f32(r, 2, 3, 20, 4).astype(h)
    case("attention_4d_fp16_causal", "Attention", 23, [("Q", qh), ("K", kh), ("V", vh)], ["Y"], exact=True,
         is_causal=1)
    case("attention_4d_fp16_softcap_mode1", "Attention", 23,
         [("Q", (qh * 4).astype(h)), ("K", kh), ("V", vh)], ["Y", "", "", "qk"], exact=True, softcap=3.0,
         qk_matmul_output_mode=1)
    case("attention_4d_fp16_softcap_precision_float16", "Attention", 23,
         [("Q", (qh * 4).astype(h)), ("K", kh), ("V", vh)], ["Y"], exact=True, softcap=3.0,
         softmax_precision=onnx.TensorProto.FLOAT16)
    case("attention_4d_fp16_float_mask_mode2", "Attention", 23,
         [("Q", qh), ("K", kh), ("V", vh), ("attn_mask", f32(r, 2, 1, 5, 17).astype(h))], ["Y", "", "", "qk"],
         exact=True, qk_matmul_output_mode=2)
    case("attention_4d_fp16_softmax_precision_float", "Attention", 23, [("Q", qh), ("K", kh), ("V", vh)], ["Y"],
         exact=True, softmax_precision=1)
    mask_h = r.random((5, 20)) > 0.4
    mask_h[2] = False
    case("attention_4d_fp16_bool_mask_mode3", "Attention", 23,
         [("Q", qh), ("K", kh), ("V", vh), ("attn_mask", mask_h)], ["Y", "", "", "qk"], exact=True,
         qk_matmul_output_mode=3)
    # The default scale over a head size known only at run time (Q's and K's last dim a symbol `e`),
    # computed from Q's shape when run, at two head sizes; float16 bit for bit.
    for e in (8, 5):
        qe, ke, ve = f32(r, 1, 2, 3, e), f32(r, 1, 2, 4, e), f32(r, 1, 2, 4, 3)
        sym = {"Q": ["b", None, "l", "e"], "K": ["b", None, "s", "e"], "V": ["b", None, "s", None]}
        case(f"attention_symbolic_head_size_{e}", "Attention", 23, [("Q", qe), ("K", ke), ("V", ve)], ["Y"],
             symbolic=sym)
        case(f"attention_symbolic_head_size_{e}_float16", "Attention", 23,
             [("Q", qe.astype(h)), ("K", ke.astype(h)), ("V", ve.astype(h))], ["Y"], exact=True, symbolic=sym)


# --- FlexAttention ---------------------------------------------------------------------------------

def modifier(name, nodes, dtype=onnx.TensorProto.FLOAT, inits=()):
    """A one-input, one-output modifier graph `x -> y` over `(B, H, L, S)`."""
    x = helper.make_tensor_value_info("x", dtype, ["B", "H", "L", "S"])
    y = helper.make_tensor_value_info("y", dtype, ["B", "H", "L", "S"])
    return helper.make_graph(nodes, name, [x], [y], list(inits))


def flex_attention_cases():
    r = rng(29)
    P = "ai.onnx.preview"
    q, k, v = f32(r, 2, 4, 3, 8), f32(r, 2, 4, 5, 8), f32(r, 2, 4, 5, 6)
    case("flex_attention_default", "FlexAttention", 1, [("Q", q), ("K", k), ("V", v)], ["Y"], domain=P)
    kg, vg = f32(r, 2, 2, 5, 8), f32(r, 2, 2, 5, 6)
    case("flex_attention_gqa_scaled", "FlexAttention", 1, [("Q", q), ("K", kg), ("V", vg)], ["Y"], domain=P,
         scale=0.3)
    h = lambda a: a.astype(np.float16)  # noqa: E731
    case("flex_attention_float16", "FlexAttention", 1, [("Q", h(q)), ("K", h(kg)), ("V", h(vg))], ["Y"], domain=P)
    d = lambda a: a.astype(np.float64)  # noqa: E731
    case("flex_attention_double", "FlexAttention", 1, [("Q", d(q)), ("K", d(k)), ("V", d(v))], ["Y"], domain=P)
    case("flex_attention_float_in_double_precision", "FlexAttention", 1, [("Q", q), ("K", k), ("V", v)], ["Y"],
         domain=P, softmax_precision=onnx.TensorProto.DOUBLE, scale=0.5)
    # float16 softmax: rounded at every step as numpy rounds it (HalfSoftmax), the product with V summed
    # in float32 and rounded once; bit for bit.
    case("flex_attention_float16_precision", "FlexAttention", 1, [("Q", h(q)), ("K", h(k)), ("V", h(v))], ["Y"],
         domain=P, softmax_precision=onnx.TensorProto.FLOAT16, exact=True)
    # The default scale over a head size known only at run time (Q's and K's last dim a symbol `e`):
    # computed from Q's shape when run, rounded as the reference (1/sqrt(e) in double, its square root
    # in float32), at two head sizes; float16 bit for bit (float32 sums in other orders than numpy).
    for e in (8, 5):
        qe, ke, ve = f32(r, 1, 2, 3, e), f32(r, 1, 2, 4, e), f32(r, 1, 2, 4, 3)
        sym = {"Q": ["b", None, "l", "e"], "K": ["b", None, "s", "e"], "V": ["b", None, "s", None]}
        case(f"flex_attention_symbolic_head_size_{e}", "FlexAttention", 1, [("Q", qe), ("K", ke), ("V", ve)], ["Y"],
             domain=P, symbolic=sym)
        case(f"flex_attention_symbolic_head_size_{e}_float16", "FlexAttention", 1,
             [("Q", h(qe)), ("K", h(ke)), ("V", h(ve))], ["Y"], domain=P, exact=True, symbolic=sym)
    t = helper.make_tensor
    F, D = onnx.TensorProto.FLOAT, onnx.TensorProto.DOUBLE
    # score_mod: a soft cap plus a bias; prob_mod: the probabilities squared.
    cap = modifier("cap", [helper.make_node("Div", ["x", "c"], ["a"]), helper.make_node("Tanh", ["a"], ["b"]),
                           helper.make_node("Mul", ["b", "c"], ["m"]), helper.make_node("Add", ["m", "bias"], ["y"])],
                   inits=[t("c", F, [], [2.0]), t("bias", F, [], [0.25])])
    square = modifier("square", [helper.make_node("Mul", ["x", "x"], ["y"])])
    case("flex_attention_score_and_prob_mod_gqa", "FlexAttention", 1, [("Q", q), ("K", kg), ("V", vg)], ["Y"],
         domain=P, score_mod=cap, prob_mod=square)
    # A mask from the scores' own shape (causal, bottom-right aligned: key j <= query i + S - L), in double.
    causal = modifier("causal", [
        helper.make_node("Shape", ["x"], ["shape"]),
        helper.make_node("Gather", ["shape", "two"], ["L"], axis=0),
        helper.make_node("Gather", ["shape", "three"], ["S"], axis=0),
        helper.make_node("Range", ["zero", "L", "one"], ["i"]),
        helper.make_node("Range", ["zero", "S", "one"], ["j"]),
        helper.make_node("Sub", ["S", "L"], ["offset"]),
        helper.make_node("Add", ["i", "offset"], ["last"]),
        helper.make_node("Unsqueeze", ["last", "one_axis"], ["column"]),
        helper.make_node("LessOrEqual", ["j", "column"], ["mask"]),
        helper.make_node("Where", ["mask", "x", "minus_inf"], ["y"]),
    ], dtype=D, inits=[t("zero", onnx.TensorProto.INT64, [], [0]), t("one", onnx.TensorProto.INT64, [], [1]),
                       t("two", onnx.TensorProto.INT64, [], [2]), t("three", onnx.TensorProto.INT64, [], [3]),
                       t("one_axis", onnx.TensorProto.INT64, [1], [1]), t("minus_inf", D, [], [-np.inf])])
    case("flex_attention_causal_score_mod_double", "FlexAttention", 1, [("Q", d(q)), ("K", d(k)), ("V", d(v))],
         ["Y"], domain=P, score_mod=causal)
    # A query row with every key masked: the softmax of -inf everywhere is NaN, as onnx's Softmax.
    rows = np.ones((3, 5), dtype=bool)
    rows[1] = False
    masked = modifier("masked_row", [helper.make_node("Where", ["keep", "x", "minus_inf"], ["y"])],
                      inits=[helper.make_tensor("keep", onnx.TensorProto.BOOL, [3, 5], rows.ravel().tolist()),
                             t("minus_inf", F, [], [-np.inf])])
    case("flex_attention_fully_masked_row", "FlexAttention", 1, [("Q", q), ("K", k), ("V", v)], ["Y"], domain=P,
         score_mod=masked)


# --- the smaller ops ------------------------------------------------------------------------------

def other_cases():
    r = rng(26)
    x = f32(r, 3, 4)
    case("cumprod_axis1", "CumProd", 26, [("x", x), ("axis", np.array(1, dtype=np.int64))], ["y"])
    case("cumprod_exclusive_reverse_axis0", "CumProd", 26, [("x", x), ("axis", np.array(-2, dtype=np.int32))], ["y"],
         exclusive=1, reverse=1)
    ints = np.array([[3, -2, 1 << 20], [5, 7, 1 << 20]], dtype=np.int32)  # the last column wraps around
    case("cumprod_int32_wraps", "CumProd", 26, [("x", ints), ("axis", np.array(0, dtype=np.int64))], ["y"])
    seq = np.arange(4 * 3 * 2, dtype=np.int64).reshape(4, 3, 2)
    case("reverse_sequence_time_major", "ReverseSequence", 10,
         [("x", seq), ("lens", np.array([4, 0, 2], dtype=np.int64))], ["y"], batch_axis=1, time_axis=0)
    case("reverse_sequence_batch_major", "ReverseSequence", 10,
         [("x", f32(r, 2, 5)), ("lens", np.array([3, 5], dtype=np.int64))], ["y"], batch_axis=0, time_axis=1)
    case("bitcast_f32_to_i32", "BitCast", 26, [("x", np.array([1.0, -2.5, 0.0], dtype=np.float32))], ["y"],
         to=onnx.TensorProto.INT32)
    case("bitcast_u8_to_bool", "BitCast", 26, [("x", np.array([[0, 1], [1, 1]], dtype=np.uint8))], ["y"],
         to=onnx.TensorProto.BOOL)
    img = np.arange(5 * 6 * 2, dtype=np.float32).reshape(5, 6, 2)
    case("center_crop_pad_crop_and_pad", "CenterCropPad", 18,
         [("x", img), ("shape", np.array([2, 9], dtype=np.int64))], ["y"], axes=[0, -2])
    case("center_crop_pad_all_axes", "CenterCropPad", 18,
         [("x", img), ("shape", np.array([8, 3, 2], dtype=np.int32))], ["y"])
    case("det_batch", "Det", 11, [("x", f32(r, 2, 3, 3, 3))], ["y"])
    case("det_singular", "Det", 11, [("x", np.array([[1, 2], [2, 4]], dtype=np.float32))], ["y"])
    pool_x = f32(r, 1, 2, 5, 6)
    case("lp_pool_p3_pads_strides", "LpPool", 18, [("x", pool_x)], ["y"],
         kernel_shape=[2, 3], pads=[1, 0, 1, 1], strides=[2, 2], p=3)
    case("lp_pool_p2_same_upper", "LpPool", 18, [("x", pool_x)], ["y"], kernel_shape=[2, 3], auto_pad="SAME_UPPER")
    case("lp_pool_p2_dilated", "LpPool", 18, [("x", pool_x)], ["y"], kernel_shape=[2, 2], dilations=[2, 2])
    ga, gb = f32(r, 3, 5, scale=2.0), f32(r, 3, 5)
    case("swiglu_default", "SwiGLU", 28, [("a", ga), ("b", gb)], ["y"])
    case("swiglu_alpha", "SwiGLU", 28, [("a", ga), ("b", gb)], ["y"], alpha=1.702)
    case("swiglu_f16", "SwiGLU", 28, [("a", ga.astype(np.float16)), ("b", gb.astype(np.float16))], ["y"], alpha=0.5)
    lx = f32(r, 3, 4, 2, 2)
    lt = r.integers(0, 4, (3, 2, 2)).astype(np.int64)
    lt[0, 0, 0] = -1
    lw = np.abs(f32(r, 4)) + np.float32(0.5)
    case("nll_none_weight_ii", "NegativeLogLikelihoodLoss", 22, [("x", lx), ("t", lt), ("w", lw)], ["y"],
         reduction="none", ignore_index=-1)
    case("nll_mean_weight_ii", "NegativeLogLikelihoodLoss", 22, [("x", lx), ("t", lt), ("w", lw)], ["y"],
         ignore_index=-1)
    lt2 = r.integers(0, 4, (3,)).astype(np.int32)
    case("nll_sum_nc_int32", "NegativeLogLikelihoodLoss", 22, [("x", f32(r, 3, 4)), ("t", lt2)], ["y"],
         reduction="sum")
    case("nll_mean_f64", "NegativeLogLikelihoodLoss", 22, [("x", lx.astype(np.float64)), ("t", np.abs(lt))], ["y"])
    case("sce_mean_log_prob", "SoftmaxCrossEntropyLoss", 22, [("x", lx), ("t", np.abs(lt))], ["y", "log_prob"])
    case("sce_none_weight_ii_log_prob", "SoftmaxCrossEntropyLoss", 22, [("x", lx), ("t", lt), ("w", lw)],
         ["y", "log_prob"], reduction="none", ignore_index=-1)
    case("sce_sum_f16", "SoftmaxCrossEntropyLoss", 22, [("x", f32(r, 2, 5).astype(np.float16)),
                                                         ("t", np.array([4, 0], dtype=np.int64))], ["y"],
         reduction="sum")
    cin, cw = f32(r, 2, 3, 5), f32(r, 3, 1, 3)
    case("causal_conv_bias_past_silu", "CausalConvWithState", 27,
         [("input", cin), ("weight", cw), ("bias", f32(r, 3)), ("past_state", f32(r, 2, 3, 2))],
         ["output", "present_state"], activation="silu")
    case("causal_conv_no_state_short", "CausalConvWithState", 27, [("input", f32(r, 1, 3, 1)), ("weight", cw)],
         ["output", "present_state"])
    case("causal_conv_past_no_bias_f16", "CausalConvWithState", 27,
         [("input", cin.astype(np.float16)), ("weight", cw.astype(np.float16)), ("", None),
          ("past_state", f32(r, 2, 3, 2).astype(np.float16))], ["output", "present_state"], activation="swish")
    la_q, la_k, la_v = f32(r, 2, 3, 4 * 2, scale=0.5), f32(r, 2, 3, 2 * 2, scale=0.5), f32(r, 2, 3, 2 * 3)
    la_past = f32(r, 2, 2, 2, 3, scale=0.5)
    case("linear_attention_linear_gqa_past", "LinearAttention", 27,
         [("q", la_q), ("k", la_k), ("v", la_v), ("past", la_past)], ["o", "state"],
         q_num_heads=4, kv_num_heads=2, update_rule="linear")
    case("linear_attention_gated_per_dim_decay", "LinearAttention", 27,
         [("q", la_q), ("k", la_k), ("v", la_v), ("", None), ("decay", -np.abs(f32(r, 2, 3, 4, scale=0.5)))],
         ["o", "state"], q_num_heads=4, kv_num_heads=2, update_rule="gated", scale=0.3)
    case("linear_attention_delta_beta_scalar", "LinearAttention", 27,
         [("q", la_q), ("k", la_k), ("v", la_v), ("past", la_past), ("", None),
          ("beta", np.abs(f32(r, 2, 3, 1, scale=0.5)))], ["o"], q_num_heads=4, kv_num_heads=2, update_rule="delta")
    case("linear_attention_gated_delta", "LinearAttention", 27,
         [("q", la_q), ("k", la_k), ("v", la_v), ("", None), ("decay", -np.abs(f32(r, 2, 3, 2, scale=0.5))),
          ("beta", np.abs(f32(r, 2, 3, 2, scale=0.5)))], ["o", "state"], q_num_heads=4, kv_num_heads=2)
    ts_cache = f32(r, 2, 2, 5, 3)
    case("tensor_scatter_circular_wraps", "TensorScatter", 24,
         [("cache", ts_cache), ("update", f32(r, 2, 2, 3, 3)), ("w", np.array([3, 1], dtype=np.int64))], ["y"],
         mode="circular")
    case("tensor_scatter_linear_no_indices_int", "TensorScatter", 24,
         [("cache", np.arange(24, dtype=np.int32).reshape(2, 4, 3)),
          ("update", -np.arange(12, dtype=np.int32).reshape(2, 2, 3))], ["y"], axis=1)
    case("tensor_scatter_linear_axis_last", "TensorScatter", 24,
         [("cache", ts_cache), ("update", f32(r, 2, 2, 5, 2)), ("w", np.array([0, 1], dtype=np.int64))], ["y"],
         axis=-1)
    case("affine_grid_2d", "AffineGrid", 20,
         [("theta", f32(r, 2, 2, 3)), ("size", np.array([2, 3, 4, 5], dtype=np.int64))], ["grid"])
    case("affine_grid_2d_corners_unit_axis", "AffineGrid", 20,
         [("theta", f32(r, 1, 2, 3)), ("size", np.array([1, 1, 1, 3], dtype=np.int64))], ["grid"], align_corners=1)
    case("affine_grid_3d_corners", "AffineGrid", 20,
         [("theta", f32(r, 2, 3, 4)), ("size", np.array([2, 1, 2, 3, 4], dtype=np.int64))], ["grid"],
         align_corners=1)
    # The reference counts the last window's padding as a copy of the edge (1.23.2: 0.75 for |x6| =
    # 0.375); padding is zeros in the specification and in onnxruntime.
    case("lp_pool_p1_ceil", "LpPool", 18, [("x", f32(r, 1, 1, 7))], ["y"], kernel_shape=[2], strides=[3],
         ceil_mode=1, p=1, oracle="onnxruntime")


# --- pooling inverses and convolutions -------------------------------------------------------------

def max_pool(x, **attrs):
    """MaxPool's values and indices by the reference: what MaxUnpool takes."""
    node = helper.make_node("MaxPool", ["x"], ["y", "i"], **attrs)
    dt = helper.np_dtype_to_tensor_dtype(x.dtype)
    graph = helper.make_graph([node], "pool", [helper.make_tensor_value_info("x", dt, x.shape)],
                              [helper.make_tensor_value_info("y", dt, None),
                               helper.make_tensor_value_info("i", onnx.TensorProto.INT64, None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 12)])
    return ReferenceEvaluator(model).run(None, {"x": x})


def unpool_cases():
    r = rng(9)
    x = f32(r, 2, 3, 4, 6)
    v, i = max_pool(x, kernel_shape=[2, 2], strides=[2, 2])
    case("max_unpool_2d", "MaxUnpool", 11, [("X", v), ("I", i)], ["Y"], kernel_shape=[2, 2], strides=[2, 2])
    x = f32(r, 1, 2, 5, 5)
    attrs = dict(kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])
    v, i = max_pool(x, **attrs)
    case("max_unpool_2d_pads_strides", "MaxUnpool", 11, [("X", v), ("I", i)], ["Y"], **attrs)
    case("max_unpool_2d_output_shape", "MaxUnpool", 11,
         [("X", v), ("I", i), ("output_shape", np.array([1, 2, 7, 6], dtype=np.int64))], ["Y"], **attrs)
    x = f32(r, 2, 2, 9).astype(np.float64)
    v, i = max_pool(x, kernel_shape=[3], strides=[3])
    case("max_unpool_1d_f64_opset9_output_shape", "MaxUnpool", 9,
         [("X", v), ("I", i), ("output_shape", np.array([2, 2, 10], dtype=np.int64))], ["Y"], kernel_shape=[3],
         strides=[3])
    x = f32(r, 1, 2, 4, 4, 4).astype(np.float16)
    v, i = max_pool(x, kernel_shape=[2, 2, 2], strides=[2, 2, 2])
    case("max_unpool_3d_f16", "MaxUnpool", 11, [("X", v), ("I", i)], ["Y"], kernel_shape=[2, 2, 2],
         strides=[2, 2, 2])


def col2im_blocks(image, block, dilations, pads, strides):
    k = len(image)
    return int(np.prod([(image[a] + pads[a] + pads[k + a] - dilations[a] * (block[a] - 1) - 1) // strides[a] + 1
                        for a in range(k)]))


def col2im_cases():
    r = rng(18)
    i64 = lambda *v: np.array(v, dtype=np.int64)
    L = col2im_blocks([4, 5], [2, 2], [1, 1], [0] * 4, [1, 1])
    case("col2im_2d", "Col2Im", 18,
         [("input", f32(r, 2, 2 * 4, L)), ("image_shape", i64(4, 5)), ("block_shape", i64(2, 2))], ["output"])
    attrs = dict(dilations=[2, 1], pads=[1, 0, 1, 2], strides=[2, 2])
    L = col2im_blocks([5, 6], [2, 3], **attrs)
    case("col2im_2d_dilations_pads_strides", "Col2Im", 18,
         [("input", f32(r, 1, 3 * 6, L)), ("image_shape", i64(5, 6)), ("block_shape", i64(2, 3))], ["output"],
         **attrs)
    L = col2im_blocks([7], [3], [1], [1, 2], [2])
    case("col2im_1d_f64", "Col2Im", 18,
         [("input", f32(r, 2, 2 * 3, L).astype(np.float64)), ("image_shape", i64(7)), ("block_shape", i64(3))],
         ["output"], pads=[1, 2], strides=[2])
    L = col2im_blocks([3, 3, 4], [2, 1, 2], [1, 1, 2], [0] * 6, [1, 1, 1])
    ints = r.integers(-50, 50, (1, 2 * 4, L)).astype(np.int32)
    case("col2im_3d_int32", "Col2Im", 18, [("input", ints), ("image_shape", i64(3, 3, 4)), ("block_shape", i64(2, 1, 2))],
         ["output"], dilations=[1, 1, 2])


def deform_conv_cases():
    r = rng(19)
    # Taps moved by fractions, some outside the input; the reference interpolates with GridSample in
    # float64 coordinates and sums step by step: compared within 1e-5.
    x, w = f32(r, 2, 4, 5, 6), f32(r, 6, 2, 3, 2)
    attrs = dict(group=2, offset_group=2, pads=[1, 0, 1, 1], strides=[2, 1], dilations=[1, 2])
    oh, ow = (5 + 2 - 3) // 2 + 1, (6 + 1 - 3) // 1 + 1
    offset = f32(r, 2, 2 * 6 * 2, oh, ow, scale=1.5)
    mask = np.abs(f32(r, 2, 2 * 6, oh, ow))
    case("deform_conv_groups_mask_bias", "DeformConv", 19,
         [("X", x), ("W", w), ("offset", offset), ("B", f32(r, 6)), ("mask", mask)], ["Y"], rtol=1e-5,
         kernel_shape=[3, 2], **attrs)
    case("deform_conv_groups_no_bias_mask_only", "DeformConv", 19,
         [("X", x), ("W", w), ("offset", offset), ("", None), ("mask", mask)], ["Y"], rtol=1e-5, **attrs)
    x64, w64 = f32(r, 1, 3, 4, 4).astype(np.float64), f32(r, 2, 3, 2, 2).astype(np.float64)
    case("deform_conv_f64_default_attrs", "DeformConv", 19,
         [("X", x64), ("W", w64), ("offset", f32(r, 1, 8, 3, 3, scale=2.0).astype(np.float64))], ["Y"],
         rtol=1e-10)
    # 1-D: the reference does 2-D only, so the expected values are a 2-D case's first row, its input
    # of two equal rows, its kernel one row high and its vertical offsets zero.
    x1, w1 = f32(r, 1, 2, 7), f32(r, 3, 2, 3)
    off1 = f32(r, 1, 3, 4, scale=1.5)
    off2 = np.zeros((1, 3, 2, 2, 4), dtype=np.float32)
    off2[:, :, 1] = off1[:, :, None, :]
    node = helper.make_node("DeformConv", ["X", "W", "offset"], ["Y"], pads=[0, 1, 0, 1], strides=[1, 2])
    ins = [("X", np.repeat(x1[:, :, None, :], 2, axis=2)), ("W", w1[:, :, None, :]),
           ("offset", off2.reshape(1, 6, 2, 4))]
    graph = helper.make_graph([node], "deform_2d", [helper.make_tensor_value_info(n, onnx.TensorProto.FLOAT, a.shape)
                                                    for n, a in ins],
                              [helper.make_tensor_value_info("Y", onnx.TensorProto.FLOAT, None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 19)])
    (y2,) = ReferenceEvaluator(model).run(None, dict(ins))
    case("deform_conv_1d", "DeformConv", 19, [("X", x1), ("W", w1), ("offset", off1)], ["Y"], rtol=1e-5,
         expected=[np.ascontiguousarray(y2[:, :, 0, :])], pads=[1, 1], strides=[2])


# --- fixes of tract's own ops (src/ops/, listed in src/ops/replaced.rs) -----------------------------------------------------

def region_cases():
    """RoiAlign in both modes and coordinate conventions, regions partly outside the map; Unique of
    slices along an axis, unsorted."""
    r = rng(16)
    x = f32(r, 2, 3, 6, 5)
    rois = np.array([[0.0, 0.0, 4.0, 5.0], [1.5, 0.5, 3.25, 2.0], [-1.0, 3.0, 6.0, 7.5]], dtype=np.float32)
    batch = np.array([1, 0, 1], dtype=np.int64)
    ins = [("X", x), ("rois", rois), ("batch_indices", batch)]
    # The reference sums in float32 step by step; sliceops in f64, rounded once.
    case("roi_align_avg_half_pixel", "RoiAlign", 16, ins, ["Y"], rtol=1e-5, output_height=2, output_width=3,
         sampling_ratio=2)
    case("roi_align_avg_adaptive_scaled", "RoiAlign", 16, ins, ["Y"], rtol=1e-5, output_height=3, output_width=2,
         spatial_scale=0.5, coordinate_transformation_mode="output_half_pixel")
    case("roi_align_max", "RoiAlign", 16, ins, ["Y"], rtol=1e-5, output_height=2, output_width=2, sampling_ratio=3,
         mode="max")
    # Opset 10 has no coordinate_transformation_mode: it is output_half_pixel (opset 16 calls that mode
    # the backward-compatible one). The reference reads the attribute's opset-16 default, half_pixel.
    case("roi_align_opset10", "RoiAlign", 10, ins, ["Y"], oracle="onnxruntime", rtol=1e-5, output_height=2,
         output_width=2)
    rows = np.array([[2, 1, 2], [0, 5, 0], [2, 1, 2], [0, 5, 1], [0, 5, 0]], dtype=np.int64)
    case("unique_rows_unsorted", "Unique", 11, [("X", rows)], ["Y", "indices", "inverse_indices", "counts"],
         axis=0, sorted=0)
    case("unique_columns_sorted", "Unique", 11, [("X", rows.T.copy())], ["Y", "", "inverse_indices", ""], axis=-1)


def tfidf_cases():
    # Unigrams 2, 3, 5, 4; bigrams (5, 6), (7, 8), (6, 7); trigrams (3, 3, 7), (5, 6, 8).
    pool = [2, 3, 5, 4, 5, 6, 7, 8, 6, 7, 3, 3, 7, 5, 6, 8]
    counts, indexes = [0, 4, 10], [0, 1, 2, 3, 4, 5, 6, 7, 8]
    x = np.array([[1, 1, 3, 3, 3, 7, 8, 6], [7, 5, 6, 8, 6, 7, 5, 6]], dtype=np.int64)
    weights = [0.5, 2.0, 0.25, 1.0, 3.0, 1.5, 0.75, 4.0, 0.125]
    case("tfidf_tf_uni_to_tri_skip2", "TfIdfVectorizer", 9, [("x", x)], ["y"], mode="TF", min_gram_length=1,
         max_gram_length=3, max_skip_count=2, ngram_counts=counts, ngram_indexes=indexes, pool_int64s=pool)
    case("tfidf_idf_weights_bigrams_up", "TfIdfVectorizer", 9, [("x", x)], ["y"], mode="IDF", min_gram_length=2,
         max_gram_length=3, max_skip_count=1, ngram_counts=counts, ngram_indexes=indexes, pool_int64s=pool,
         weights=weights)
    case("tfidf_tfidf_weights_1d_int32", "TfIdfVectorizer", 9, [("x", x[1].astype(np.int32))], ["y"],
         mode="TFIDF", min_gram_length=1, max_gram_length=2, max_skip_count=0, ngram_counts=counts,
         ngram_indexes=indexes, pool_int64s=pool, weights=weights)
    # Columns shared and permuted; the longest grams left out.
    case("tfidf_tf_shared_columns", "TfIdfVectorizer", 9, [("x", x)], ["y"], mode="TF", min_gram_length=1,
         max_gram_length=2, max_skip_count=3, ngram_counts=counts, ngram_indexes=[3, 3, 0, 1, 2, 2, 4, 0, 1],
         pool_int64s=pool)
    # onnx's reference needs weights in IDF and TFIDF modes: onnxruntime is the oracle.
    case("tfidf_tfidf_no_weights_tri_only", "TfIdfVectorizer", 9, [("x", x)], ["y"], oracle="onnxruntime", mode="TFIDF",
         min_gram_length=3, max_gram_length=3, max_skip_count=1, ngram_counts=counts, ngram_indexes=indexes,
         pool_int64s=pool)


def binarizer_cases():
    r = rng(9)
    x = f32(r, 3, 4)
    x[0, 0], x[0, 1] = np.nan, 0.5
    case("binarizer_f32_threshold", "Binarizer", 1, [("x", x)], ["y"], domain="ai.onnx.ml", threshold=0.5)
    case("binarizer_f64_default", "Binarizer", 1, [("x", x.astype(np.float64))], ["y"], domain="ai.onnx.ml")
    ints = np.array([[-3, -1, 0, 1, 2, 7]], dtype=np.int64)
    case("binarizer_int64_negative_threshold", "Binarizer", 1, [("x", ints)], ["y"], domain="ai.onnx.ml",
         threshold=-0.5)
    case("binarizer_int32", "Binarizer", 1, [("x", ints.astype(np.int32))], ["y"], domain="ai.onnx.ml",
         threshold=1.5)


def optimizer_cases():
    r = rng(41)
    dom = "ai.onnx.preview.training"
    lr, f64 = np.array(0.1, dtype=np.float32), np.float64

    def t(v):
        return np.array(v, dtype=np.int64)

    def pos(*shape):
        return np.abs(f32(r, *shape)) + np.float32(0.0625)

    x1, g1, h1, x2, g2, h2 = f32(r, 3, 4), f32(r, 3, 4), pos(3, 4), f32(r, 5), f32(r, 5), pos(5)
    case("adagrad_two_groups_decay", "Adagrad", 1,
         [("R", lr), ("T", t(3)), ("X1", x1), ("X2", x2), ("G1", g1), ("G2", g2), ("H1", h1), ("H2", h2)],
         ["X1_new", "X2_new", "H1_new", "H2_new"], domain=dom, decay_factor=0.1, norm_coefficient=0.01)
    case("adagrad_float64_defaults", "Adagrad", 1,
         [("R", lr.astype(f64)), ("T", t(0)), ("X", x1.astype(f64)), ("G", g1.astype(f64)), ("H", h1.astype(f64))],
         ["X_new", "H_new"], domain=dom)
    v1, v2 = f32(r, 3, 4), f32(r, 5)
    # Two groups: the reference returns a single group's Adam update as float64 when T > 0.
    case("adam_two_groups_corrected", "Adam", 1,
         [("R", lr), ("T", t(2)), ("X1", x1), ("X2", x2), ("G1", g1), ("G2", g2), ("V1", v1), ("V2", v2),
          ("H1", h1), ("H2", h2)],
         ["X1_new", "X2_new", "V1_new", "V2_new", "H1_new", "H2_new"], domain=dom, alpha=0.8, beta=0.95,
         epsilon=1e-4, norm_coefficient=0.02, norm_coefficient_post=0.05)
    case("adam_first_step_defaults", "Adam", 1, [("R", lr), ("T", t(0)), ("X", x1), ("G", g1), ("V", v1), ("H", h1)],
         ["X_new", "V_new", "H_new"], domain=dom)
    case("momentum_standard_first_step", "Momentum", 1, [("R", lr), ("T", t(0)), ("X", x1), ("G", g1), ("V", v1)],
         ["X_new", "V_new"], domain=dom, alpha=0.9, beta=0.5, norm_coefficient=0.01, mode="standard")
    case("momentum_nesterov_two_groups", "Momentum", 1,
         [("R", lr), ("T", t(4)), ("X1", x1), ("X2", x2), ("G1", g1), ("G2", g2), ("V1", v1), ("V2", v2)],
         ["X1_new", "X2_new", "V1_new", "V2_new"], domain=dom, alpha=0.7, beta=0.3, norm_coefficient=0.0,
         mode="nesterov")


def fix_cases():
    r = rng(17)
    # Recurrent ops in the reverse direction (tract ran them forward): Y and the final states. tract's
    # sigmoid and tanh are approximations whose last bits depend on the CPU's vector kernels (AVX2 or
    # AVX-512), and recurrence carries them along the sequence: compared within 1e-5.
    x, h0 = f32(r, 4, 2, 3, scale=0.5), f32(r, 1, 2, 5, scale=0.5)
    w, rr, b = f32(r, 1, 5, 3, scale=0.5), f32(r, 1, 5, 5, scale=0.5), f32(r, 1, 10, scale=0.5)
    case("rnn_reverse", "RNN", 22, [("X", x), ("W", w), ("R", rr), ("B", b), ("", None), ("initial_h", h0)],
         ["Y", "Y_h"], rtol=1e-5, direction="reverse", hidden_size=5)
    case("rnn_reverse_no_state", "RNN", 22, [("X", x), ("W", w), ("R", rr)], ["", "Y_h"],
         rtol=1e-5, direction="reverse", hidden_size=5)
    wg, rg = f32(r, 1, 15, 3, scale=0.5), f32(r, 1, 15, 5, scale=0.5)
    case("gru_reverse", "GRU", 22, [("X", x), ("W", wg), ("R", rg)], ["Y", "Y_h"], rtol=1e-5, direction="reverse",
         hidden_size=5)
    xb = np.ascontiguousarray(x.transpose(1, 0, 2))
    case("gru_reverse_batch_first", "GRU", 22, [("X", xb), ("W", wg), ("R", rg)], ["Y", "Y_h"],
         rtol=1e-5, direction="reverse", hidden_size=5, layout=1)
    # Y_c is not asked: tract's Scan fails on an LSTM giving it (forward too), a limit left as it is.
    wl, rl = f32(r, 1, 20, 3, scale=0.5), f32(r, 1, 20, 5, scale=0.5)
    case("lstm_reverse", "LSTM", 22, [("X", x), ("W", wl), ("R", rl)], ["Y", "Y_h"], rtol=1e-5, direction="reverse",
         hidden_size=5)
    # Max and Min over an empty set of floats: minus and plus infinity.
    empty = np.zeros((2, 0, 3), dtype=np.float32)
    axes = np.array([1], dtype=np.int64)
    case("reduce_max_empty_set", "ReduceMax", 18, [("data", empty), ("axes", axes)], ["y"], keepdims=1)
    case("reduce_min_empty_set", "ReduceMin", 18, [("data", empty), ("axes", axes)], ["y"], keepdims=0)
    case("reduce_max_empty_set_f16", "ReduceMax", 18, [("data", empty.astype(np.float16)), ("axes", axes)], ["y"])
    # Sets of infinities: -inf (+inf for Min), but the largest finite float where the set holds it.
    big = np.finfo(np.float32).max
    inf_rows = np.array([[[-np.inf, -np.inf, -np.inf], [-np.inf, -big, -np.inf]],
                         [[1.0, -np.inf, 2.0], [-np.inf, -np.inf, -np.inf]]], dtype=np.float32)
    case("reduce_max_rows_of_infinities", "ReduceMax", 13, [("data", inf_rows)], ["y"], axes=[2], keepdims=0)
    case("reduce_max_infinities_axis0_runtime_axes", "ReduceMax", 18,
         [("data", inf_rows), ("axes", np.array([0], dtype=np.int64))], ["y"])
    inf64 = np.full((2, 2, 3), -np.inf)
    inf64[1, 1, 2] = np.finfo(np.float64).min
    case("reduce_max_infinities_all_axes_f64", "ReduceMax", 13, [("data", inf64)], ["y"], axes=[1, 2])
    case("reduce_min_rows_of_infinities", "ReduceMin", 18,
         [("data", -inf_rows), ("axes", np.array([-1], dtype=np.int64))], ["y"], keepdims=1)
    case("reduce_min_infinities_no_axes", "ReduceMin", 18, [("data", np.full((2, 3), np.inf, np.float32))], ["y"])
    case("reduce_min_empty_set_axes_attribute", "ReduceMin", 13, [("data", empty)], ["y"], axes=[1])
    # Booleans (opset 20): any and all, false and true over empty sets.
    flags = np.array([[[0, 0, 0, 0], [1, 1, 1, 1], [0, 1, 0, 0]],
                      [[1, 1, 1, 1], [0, 0, 1, 0], [1, 1, 1, 1]]], dtype=bool)
    case("reduce_max_bool_axes_input", "ReduceMax", 20, [("data", flags), ("axes", np.array([-1], dtype=np.int64))],
         ["y"], keepdims=0)
    case("reduce_min_bool_all_axes", "ReduceMin", 20, [("data", flags)], ["y"])
    case("reduce_min_bool_rows", "ReduceMin", 20, [("data", flags), ("axes", np.array([0], dtype=np.int64))],
         ["y"])
    empty_flags = np.zeros((2, 0, 3), dtype=bool)
    case("reduce_min_bool_empty_set", "ReduceMin", 20, [("data", empty_flags), ("axes", axes)], ["y"], keepdims=0)
    case("reduce_max_bool_empty_set", "ReduceMax", 20, [("data", empty_flags), ("axes", axes)], ["y"])
    # MatMul of two vectors: a scalar (tract refused it); a vector and a matrix as before.
    va, vb = f32(r, 5), f32(r, 5)
    case("matmul_1d_1d", "MatMul", 13, [("a", va), ("b", vb)], ["y"])
    case("matmul_1d_1d_int32", "MatMul", 13, [("a", np.arange(4, dtype=np.int32) - 2),
                                             ("b", np.array([3, -1, 4, 7], dtype=np.int32))], ["y"])
    case("matmul_1d_1d_f64", "MatMul", 13, [("a", va.astype(np.float64)), ("b", vb.astype(np.float64))], ["y"])
    case("matmul_1d_3d", "MatMul", 13, [("a", va), ("b", f32(r, 2, 5, 3))], ["y"])
    # Pad in wrap mode (tract refused it), pads longer than the axis included.
    px = np.arange(2 * 3 * 4, dtype=np.float32).reshape(2, 3, 4)
    case("pad_wrap_all_axes", "Pad", 19, [("x", px), ("pads", np.array([1, 2, 0, 0, 1, 3], dtype=np.int64))], ["y"],
         mode="wrap")
    case("pad_wrap_longer_than_axis", "Pad", 19, [("x", px[0].astype(np.int32)),
                                                  ("pads", np.array([7, 0, 2, 9], dtype=np.int64))], ["y"], mode="wrap")
    case("pad_wrap_axes", "Pad", 19, [("x", px), ("pads", np.array([2, 1, 1, 5], dtype=np.int64)),
                                      ("", None), ("axes", np.array([-1, 1], dtype=np.int64))], ["y"], mode="wrap")
    # Celu with an alpha other than 1 (tract left the multiplication by alpha out).
    cx = f32(r, 3, 4, scale=2.0)
    case("celu_alpha_2", "Celu", 12, [("X", cx)], ["Y"], alpha=2.0)
    case("celu_alpha_half_f16", "Celu", 12, [("X", cx.astype(np.float16))], ["Y"], alpha=0.5)
    case("celu_default_f64", "Celu", 12, [("X", cx.astype(np.float64))], ["Y"])
    # Swish with its alpha (tract ran every Swish as SiLU).
    case("swish_alpha", "Swish", 24, [("x", cx)], ["y"], alpha=0.5)
    case("swish_alpha_f16", "Swish", 24, [("x", cx.astype(np.float16))], ["y"], alpha=1.75)
    case("swish_default", "Swish", 24, [("x", cx)], ["y"])
    # SpaceToDepth in CRD order (tract used DCR whatever the mode).
    sx = np.arange(2 * 3 * 6 * 6, dtype=np.float32).reshape(2, 3, 6, 6)
    case("space_to_depth_crd_2", "SpaceToDepth", 28, [("x", sx)], ["y"], blocksize=2, mode="CRD")
    case("space_to_depth_crd_3", "SpaceToDepth", 28, [("x", sx.astype(np.int64))], ["y"], blocksize=3, mode="CRD")
    case("space_to_depth_dcr_2", "SpaceToDepth", 28, [("x", sx)], ["y"], blocksize=2, mode="DCR")
    # Float16 Softmax rounded where numpy rounds (tract multiplied by a rounded reciprocal): the last
    # axis (rows of 5, 18, 200: float32 pairwise sums), another axis (float16 running sums), opset 11's
    # trailing axes, -inf and NaN; compared bit for bit.
    for n in (5, 18, 200):
        case(f"softmax_f16_rows_{n}", "Softmax", 13, [("x", f32(r, 3, n, scale=3.0).astype(np.float16))], ["y"],
             exact=True)
    case("softmax_f16_axis1", "Softmax", 13, [("x", f32(r, 2, 9, 5, scale=3.0).astype(np.float16))], ["y"],
         exact=True, axis=1)
    special = np.array([[0, -np.inf, 1, 2], [-np.inf] * 4, [np.nan, 0, 0, 0]], dtype=np.float16)
    case("softmax_f16_infinities_nan", "Softmax", 13, [("x", special)], ["y"], exact=True)
    # opset 11: the axes from `axis` on as one row (onnx's reference knows only opset 13's form).
    s11 = f32(r, 2, 3, 4, scale=3.0).astype(np.float16)
    flat = s11.reshape(2, 12)
    e11 = np.exp(flat - flat.max(axis=1, keepdims=True))
    case("softmax_f16_opset11", "Softmax", 11, [("x", s11)], ["y"], exact=True, axis=1,
         expected=[(e11 / e11.sum(axis=1, keepdims=True)).reshape(2, 3, 4)])
    # Float16 Conv summed in float32 and rounded once, the bias added in float16 (tract summed in float16):
    # 2-D with a bias, depthwise 1-D, 3-D strided and padded; compared bit for bit.
    ch = f32(r, 1, 8, 7, 7).astype(np.float16)
    case("conv_f16_bias", "Conv", 22, [("X", ch), ("W", f32(r, 4, 8, 3, 3).astype(np.float16)),
                                      ("B", f32(r, 4).astype(np.float16))], ["Y"], exact=True, pads=[1, 1, 1, 1])
    case("conv_f16_depthwise_1d", "Conv", 22, [("X", f32(r, 2, 4, 9).astype(np.float16)),
                                              ("W", f32(r, 4, 1, 4).astype(np.float16))], ["Y"], exact=True, group=4)
    case("conv_f16_3d_strided", "Conv", 22, [("X", f32(r, 1, 3, 5, 6, 4).astype(np.float16)),
                                            ("W", f32(r, 2, 3, 3, 2, 3).astype(np.float16)),
                                            ("B", f32(r, 2).astype(np.float16))], ["Y"], exact=True,
         strides=[2, 1, 1], pads=[1, 0, 1, 1, 0, 1])
    # Float16 Gemm (tract refused a float16 C): the product rounded to float16, then alpha and beta in
    # float32 as the reference's float32 attributes make it, rounded once; compared bit for bit.
    ga, gb = f32(r, 6, 40).astype(np.float16), f32(r, 40, 5).astype(np.float16)
    case("gemm_f16_c_row", "Gemm", 13, [("A", ga), ("B", gb), ("C", f32(r, 5).astype(np.float16))], ["Y"],
         exact=True)
    case("gemm_f16_transposed_alpha_beta", "Gemm", 13,
         [("A", np.ascontiguousarray(ga.T)), ("B", np.ascontiguousarray(gb.T)), ("C", f32(r, 6, 1).astype(np.float16))],
         ["Y"], exact=True, alpha=0.37, beta=1.9, transA=1, transB=1)
    case("gemm_f16_no_c", "Gemm", 13, [("A", ga), ("B", gb)], ["Y"], exact=True, alpha=2.5)
    case("reduce_max_empty_output", "ReduceMax", 18, [("data", empty), ("axes", np.array([2], dtype=np.int64))],
         ["y"])


# --- writing ---------------------------------------------------------------------------------------

def encode(a):
    a = np.asarray(a)
    if a.dtype.kind == "f":
        flat = [v if np.isfinite(v) else str(v).lower() for v in a.astype(np.float64).ravel().tolist()]
    elif a.dtype == np.bool_:
        flat = [bool(v) for v in a.ravel()]
    else:
        flat = [int(v) for v in a.ravel()]
    return dict(dtype=str(a.dtype), shape=list(a.shape), values=flat)


def bits(a):
    """The bit patterns of a float array's elements, as unsigned integers (exact in JSON)."""
    a = np.asarray(a)
    if a.dtype.kind != "f":
        return {}
    return dict(bits=[int(v) for v in a.view(f"u{a.dtype.itemsize}").ravel()])


# --- Optional*, 16-bit and blocked quantization ----------------------------------------------------

def optional_quant_cases():
    r = rng(17)
    case("optional_has_element_no_input", "OptionalHasElement", 18, [], ["y"])
    case("optional_has_element_empty_name", "OptionalHasElement", 18, [("", None)], ["y"])
    case("optional_get_element_tensor", "OptionalGetElement", 18, [("x", f32(r, 2, 3))], ["y"])
    x = f32(r, 3, 4, scale=300.0)
    for dt, zp in [(np.int16, -120), (np.uint16, 30000)]:
        name = np.dtype(dt).name
        case(f"quantizelinear_{name}_per_axis", "QuantizeLinear", 21,
             [("x", x), ("s", np.array([0.5, 2.0, 0.125, 1.0], dtype=np.float32)),
              ("zp", np.array([zp, zp + 7, 0, zp], dtype=dt))], ["y"], axis=1)
        q = r.integers(np.iinfo(dt).min, np.iinfo(dt).max, (3, 4), endpoint=True).astype(dt)
        case(f"dequantizelinear_{name}", "DequantizeLinear", 21,
             [("x", q), ("s", np.array(0.25, dtype=np.float32)), ("zp", np.array(zp, dtype=dt))], ["y"])
    case("quantizelinear_int16_blocked_axis0", "QuantizeLinear", 21,
         [("x", f32(r, 5, 2, scale=50.0)), ("s", np.array([[0.5, 1.0], [2.0, 0.25]], dtype=np.float32)),
          ("zp", np.array([[3, -3], [0, 100]], dtype=np.int16))], ["y"], axis=0, block_size=3)
    case("dequantizelinear_uint16_blocked_float16_out", "DequantizeLinear", 23,
         [("x", np.arange(10, dtype=np.uint16).reshape(2, 5) * 1000),
          ("s", np.array([[0.5, 2.0], [1.0, 0.25]], dtype=np.float32))], ["y"], axis=1, block_size=3,
         output_dtype=onnx.TensorProto.FLOAT16)
    case("quantizelinear_output_dtype_uint16_no_zero_point", "QuantizeLinear", 21,
         [("x", f32(r, 6, scale=1000.0)), ("s", np.array(0.5, dtype=np.float32))], ["y"],
         output_dtype=onnx.TensorProto.UINT16)


def batchnorm_cases():
    r = rng(43)
    # training_mode=1: the batch's own mean and biased variance (tract refused it).
    x4, x3 = f32(r, 2, 3, 4, 5), f32(r, 4, 2, 3, scale=3.0)
    scale, bias, mean, var = f32(r, 3), f32(r, 3), f32(r, 3), np.abs(f32(r, 3)) + np.float32(0.5)
    case("batchnorm_training_4d", "BatchNormalization", 15,
         [("X", x4), ("scale", scale), ("B", bias), ("mean", mean), ("var", var)],
         ["Y", "running_mean", "running_var"], training_mode=1)
    case("batchnorm_training_3d_momentum_epsilon", "BatchNormalization", 15,
         [("X", x3), ("scale", scale[:2]), ("B", bias[:2]), ("mean", mean[:2]), ("var", var[:2])],
         ["Y", "running_mean", "running_var"], training_mode=1, momentum=0.5, epsilon=0.01)
    case("batchnorm_training_float64", "BatchNormalization", 15,
         [("X", x4.astype(np.float64)), ("scale", scale.astype(np.float64)), ("B", bias.astype(np.float64)),
          ("mean", mean.astype(np.float64)), ("var", var.astype(np.float64))],
         ["Y", "running_mean", "running_var"], training_mode=1)


def dft_cases():
    r = rng(47)
    f64 = np.float64
    ax = lambda a: np.array(a, dtype=np.int64)  # noqa: E731
    n = lambda v: np.array(v, dtype=np.int64)  # noqa: E731
    real, cplx = f32(r, 2, 5, 1).astype(f64), f32(r, 2, 3, 4, 2).astype(f64)
    case("dft_length_pads", "DFT", 20, [("x", real), ("dft_length", n(8)), ("axis", ax(1))], ["y"])
    case("dft_length_cuts_onesided", "DFT", 20, [("x", real), ("dft_length", n(3)), ("axis", ax(-2))], ["y"],
         onesided=1)
    case("dft17_axis2_complex", "DFT", 17, [("x", cplx)], ["y"], axis=2)
    case("dft_inverse_default_axis", "DFT", 20, [("x", cplx)], ["y"], inverse=1)
    case("dft_irfft_length", "DFT", 20, [("x", cplx), ("dft_length", n(7)), ("axis", ax(2))], ["y"], inverse=1,
         onesided=1)
    # float32: transformed in float64 here, in float32 by the reference.
    case("dft_float32_rfft", "DFT", 20, [("x", f32(r, 3, 16, 1))], ["y"], rtol=1e-5, onesided=1)


def gru_cases():
    r = rng(53)
    # The plain GRU kernel: exact sigmoid and tanh, compared at the default two-ulp tolerance.
    x, h0 = f32(r, 4, 2, 3), f32(r, 2, 2, 5, scale=0.5)
    w, rr, b = f32(r, 2, 15, 3, scale=2.0), f32(r, 2, 15, 5), f32(r, 2, 30)
    case("gru_plain_bidirectional_bias_state", "GRU", 22,
         [("X", x), ("W", w), ("R", rr), ("B", b), ("", None), ("initial_h", h0)], ["Y", "Y_h"],
         direction="bidirectional", hidden_size=5)
    case("gru_plain_linear_before_reset_batch_first", "GRU", 22,
         [("X", np.ascontiguousarray(x.transpose(1, 0, 2))), ("W", w[:1]), ("R", rr[:1]), ("B", b[:1])],
         ["Y", "Y_h"], hidden_size=5, linear_before_reset=1, layout=1)
    # Saturated update gates: H stays near zero, where tract's approximate sigmoid was 1e-6 off.
    big = np.full((1, 15, 3), 6.0, dtype=np.float32)
    case("gru_plain_saturated", "GRU", 22, [("X", np.abs(x)), ("W", big), ("R", rr[:1])], ["", "Y_h"], hidden_size=5)


def attr_json(v):
    """An attribute as JSON: a graph as its serialized bytes in hex (`{"graph": ...}`)."""
    if isinstance(v, onnx.GraphProto):
        return dict(graph=v.SerializeToString().hex())
    return float(v) if isinstance(v, float) else v


# --- random ops, seeded: onnx's reference draws from numpy.random.RandomState(seed) -----------------

def random_cases():
    r = rng(41)
    x = f32(r, 3, 4, 5)
    t, f = np.array(True), np.array(False)
    case("dropout_train_mask_seed5", "Dropout", 22, [("x", x), ("r", np.array(0.3, np.float32)), ("t", t)],
         ["y", "z"], exact=True, seed=5)
    case("dropout_train_f64_data", "Dropout", 13, [("x", x.astype(np.float64)), ("r", np.array(0.6, np.float32)),
         ("t", t)], ["y", "z"], exact=True, seed=4294967295)
    # The reference computes the product in numpy's promotion of the data's and the scale's types (here
    # float32, float64); the op's output is the data's type, the reference's values rounded to it.
    def dropout_in(data, ratio, seed):
        y, mask = _dropout(data, ratio, seed=seed, training_mode=True, return_mask=True)
        return [y.astype(data.dtype), mask]

    x16, r16 = x.astype(np.float16), np.array(0.4, np.float32)
    case("dropout_train_f16_data", "Dropout", 22, [("x", x16), ("r", r16), ("t", t)], ["y", "z"], exact=True,
         expected=dropout_in(x16, r16, 2), seed=2)
    r64 = np.array(0.25)
    case("dropout_train_f64_ratio", "Dropout", 22, [("x", x), ("r", r64), ("t", t)], ["y"], exact=True,
         expected=dropout_in(x, r64, 11)[:1], seed=11)
    case("dropout_not_training", "Dropout", 22, [("x", x), ("r", np.array(0.5, np.float32)), ("t", f)], ["y", "z"],
         exact=True, seed=1)
    case("dropout_train_zero_ratio", "Dropout", 22, [("x", x), ("r", np.array(0.0, np.float32)), ("t", t)],
         ["y", "z"], exact=True)
    p = r.random(40).astype(np.float32)
    p[:4] = [0.0, 1.0, 0.5, 1e-30]
    case("bernoulli_seed3", "Bernoulli", 22, [("x", p)], ["y"], exact=True, seed=3.0)
    case("bernoulli_seed_truncated_to_int32", "Bernoulli", 15, [("x", p.astype(np.float64))], ["y"], exact=True,
         seed=2.7, dtype=onnx.TensorProto.INT32)
    case("bernoulli_f16_to_bool", "Bernoulli", 22, [("x", p.astype(np.float16).reshape(5, 8))], ["y"], exact=True,
         seed=9.0, dtype=onnx.TensorProto.BOOL)
    case("random_uniform_seed", "RandomUniform", 22, [], ["y"], exact=True, seed=11.0, low=-2.0, high=5.0,
         shape=[3, 4])
    case("random_uniform_f16", "RandomUniform", 22, [], ["y"], exact=True, seed=1.0, low=0.5, high=3.0,
         shape=[7], dtype=onnx.TensorProto.FLOAT16)
    case("random_uniform_f64", "RandomUniform", 1, [], ["y"], exact=True, seed=0.0, shape=[2, 3],
         dtype=onnx.TensorProto.DOUBLE)
    case("random_normal_seed_odd", "RandomNormal", 22, [], ["y"], exact=True, seed=4.0, mean=1.0, scale=3.0,
         shape=[3, 3])
    case("random_normal_f64", "RandomNormal", 22, [], ["y"], exact=True, seed=123.0, shape=[100],
         dtype=onnx.TensorProto.DOUBLE)
    case("random_uniform_like_int_to_float", "RandomUniformLike", 22,
         [("x", np.zeros((2, 3), np.int32))], ["y"], exact=True, seed=7.0, dtype=onnx.TensorProto.FLOAT)
    case("random_uniform_like_f16", "RandomUniformLike", 22, [("x", x16)], ["y"], exact=True, seed=3.0, high=2.0)
    case("random_normal_like_f64", "RandomNormalLike", 22, [("x", x.astype(np.float64))], ["y"], exact=True,
         seed=5.0, mean=-1.0, scale=0.5)


def build(c):
    given = [(n, a) for n, a in c["inputs"] if n and a is not None]
    ins = [helper.make_tensor_value_info(n, helper.np_dtype_to_tensor_dtype(a.dtype), a.shape) for n, a in given]
    outs = [helper.make_tensor_value_info(o, onnx.TensorProto.UNDEFINED, None) for o in c["outputs"] if o]
    node = helper.make_node(c["op"], [n if a is not None else "" for n, a in c["inputs"]], c["outputs"],
                            domain=c["domain"], **c["attrs"])
    graph = helper.make_graph([node], c["name"], ins, outs)
    opsets = [helper.make_opsetid(c["domain"], c["opset"])]
    if any(isinstance(v, onnx.GraphProto) for v in c["attrs"].values()):
        opsets.append(helper.make_opsetid("", 21))  # the graphs' ops (the test's model imports it too)
    return helper.make_model(graph, opset_imports=opsets), given


def main():
    attention_cases()
    flex_attention_cases()
    other_cases()
    region_cases()
    unpool_cases()
    col2im_cases()
    deform_conv_cases()
    tfidf_cases()
    binarizer_cases()
    optimizer_cases()
    fix_cases()
    optional_quant_cases()
    batchnorm_cases()
    dft_cases()
    gru_cases()
    random_cases()
    out = []
    for c in CASES:
        model, given = build(c)
        feeds = {n: a for n, a in given}
        if "expected" in c:
            results = c["expected"]
        elif c["oracle"] == "onnxruntime":
            import onnxruntime

            model.ir_version = 9
            for o in model.graph.output:
                o.ClearField("type")
            results = onnxruntime.InferenceSession(model.SerializeToString()).run(None, feeds)
        else:
            results = ReferenceEvaluator(model).run(None, feeds)
        names = [o for o in c["outputs"] if o]
        attrs = {k: attr_json(v) for k, v in c["attrs"].items()}
        out.append(dict(
            name=c["name"], op=c["op"], domain=c["domain"], opset=c["opset"], attrs=attrs,
            inputs=[dict(name=n if a is not None else "", **(encode(a) if a is not None else {}))
                    for n, a in c["inputs"]],
            outputs=[dict(name=n, **encode(v), **(bits(v) if c.get("exact") else {})) for n, v in zip(names, results)],
            node_outputs=c["outputs"],
            **({"rtol": c["rtol"]} if "rtol" in c else {}),
            **({"atol": c["atol"]} if "atol" in c else {}),
            **({"exact": True} if c.get("exact") else {}),
            **({"symbolic": c["symbolic"]} if "symbolic" in c else {}),
        ))
    with open(os.path.join(HERE, "cases.json"), "w") as f:
        json.dump(out, f, indent=None, separators=(",", ":"))
        f.write("\n")
    print(f"{len(out)} cases")


if __name__ == "__main__":
    main()
