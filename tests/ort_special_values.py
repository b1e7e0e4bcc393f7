#!/usr/bin/env python3
"""Special float32 values through every float element-wise and reduction op, sliceops against
onnxruntime (issue 30, the property test).

    python3 tests/ort_special_values.py [SLICEOPS_BIN]

The binary is the first argument, else $SLICEOPS_BIN, else target/release/sliceops. Needs numpy,
onnx and onnxruntime (models/requirements.txt).

Each case is a one-node float32 model, generated here, fed NaN, both infinities, both zeros, the
largest and smallest normal values, a subnormal, values past the exponent's range (+-100, +-1e30)
and ordinary ones (in every position of an operand, and mixed within rows for the ops that combine
values). `sliceops run` runs it on an .npz and its outputs are compared with onnxruntime's:

- positions: NaN where onnxruntime has NaN, and only there; an infinity where it has the same one;
- exact ops (`ulps` 0): the same bits, the sign of zero included where the op defines it (`signed
  zero`: True);
- approximated ops (`ulps` > 0): within that many units in the last place, or within `atol` of it
  near zero (the functions both sides approximate: exp, log, tanh, erf, sigmoid, and the sums that
  depend on the order of additions).

Where onnxruntime itself departs from the op's definition, the case says how (`reference`) and
sliceops is compared with onnx's reference implementation instead (a `note` line says where
onnxruntime differs); docs/untrusted.md says so. Prints one line per case
and "N passed, M failed" last; exits 1 if any failed.
"""

import os
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper
from onnx.reference import ReferenceEvaluator

ROOT = Path(__file__).resolve().parent.parent
F32 = np.float32
NAN, INF = F32("nan"), F32("inf")
TINY = np.finfo(F32).tiny  # smallest normal
SUB = F32(1e-45)  # the smallest subnormal
BIG = np.finfo(F32).max

# Every special value, then ordinary ones: 24 values.
SPECIAL = np.array(
    [NAN, INF, -INF, 0.0, -0.0, BIG, -BIG, TINY, -TINY, SUB, -SUB, 1e30, -1e30, 100.0, -100.0,
     88.5, -88.5, 1.0, -1.0, 0.5, -2.5, 3.0, 1e-20, 7.25],
    dtype=F32,
)


def model(op, inputs, attrs=None, outputs=1, opset=18, inits=(), extra_inputs=()):
    """A one-node model: float32 `inputs` (name, shape), initializers `inits`, one float output."""
    names = [n for n, _ in inputs] + list(extra_inputs)
    node = helper.make_node(op, names, ["y%d" % i for i in range(outputs)], **(attrs or {}))
    graph = helper.make_graph(
        [node],
        op,
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, s) for n, s in inputs],
        [helper.make_tensor_value_info("y%d" % i, TensorProto.FLOAT, None) for i in range(outputs)],
        list(inits),
    )
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 8

    return m


def scalar(name, v):
    return helper.make_tensor(name, TensorProto.FLOAT, [], [v])


def pairs():
    """Every special value against every special value: a [576] and a [576]."""
    a = np.repeat(SPECIAL, len(SPECIAL))
    b = np.tile(SPECIAL, len(SPECIAL))
    return a, b


def rows(width):
    """Rows of `width` values: every special value alone in a row of ordinary values, and rows of
    special values together ([k, width])."""
    ordinary = np.array([0.5, -1.0, 2.0, 0.25, -3.0, 1.5, 0.0, -0.75][:width], dtype=F32)
    out = []
    for v in SPECIAL:
        for pos in range(width):
            r = ordinary.copy()
            r[pos] = v
            out.append(r)
    for k in range(0, len(SPECIAL), width):
        r = np.resize(SPECIAL[k : k + width], width)
        out.append(r)
    return np.stack(out).astype(F32)


X = SPECIAL.reshape(1, -1)
A, B = pairs()

# name: (model, feeds, ulps, atol, signed zero, scale, known, reference)
CASES = {}


def case(name, m, feeds, ulps=0, atol=0.0, signed_zero=True, scale=None, known=None, reference=None):
    """`scale(feeds)`: a per-element tolerance for sums whose terms cancel (the order of additions
    decides the rounding): 2^-20 of the sum of the terms' magnitudes. `known`: why sliceops differs
    here (a deviation documented in docs/untrusted.md); the case is reported, not failed, and a
    known case that starts to match is reported too, to be taken off the list. `reference`: where
    onnxruntime departs from the definition (what it does instead): sliceops is compared with onnx's
    reference implementation (`onnx.reference.ReferenceEvaluator`), and onnxruntime's departure is
    reported, not failed."""
    CASES[name] = (m, feeds, ulps, atol, signed_zero, scale, known, reference)


def row_sums(feeds):
    return np.abs(feeds["x"].astype(np.float64)).sum(axis=1, keepdims=True) * 2.0**-20


def product_sums(w):
    def scale(feeds):
        with np.errstate(invalid="ignore", over="ignore"):
            return (np.abs(feeds["x"].astype(np.float64)) @ np.abs(w.astype(np.float64))) * 2.0**-20

    return scale


unary = {"x": X}
for op in ["Relu", "Neg", "Abs", "Sqrt", "Floor", "Ceil", "Round", "Sign", "Reciprocal"]:
    case(op, model(op, [("x", X.shape)]), unary)
# Functions each side approximates (ulps between two good approximations; atol near 0).
for op, ulps in [("Exp", 4), ("Log", 4), ("Erf", 8)]:
    case(op, model(op, [("x", X.shape)]), unary, ulps=ulps, atol=2e-7)
case("Tanh", model("Tanh", [("x", X.shape)]), unary, ulps=16, atol=2e-7)
# tract's sigmoid is a rational fit clamped to [-14.5, 14.5]: its tails are 4.5e-7 from 0 and 1;
# its tanh saturates at 0.9999994 (10 ulps from 1).
case("Sigmoid", model("Sigmoid", [("x", X.shape)]), unary, ulps=64, atol=5e-7)
# tract-onnx expanded Softplus into Ln(Exp(x) + 1), infinite past 88.7; onnxruntime and onnx's reference
# (1.23: numpy.logaddexp(0, x)) return x there, the real value rounded, as sliceops now does.
case("Softplus", model("Softplus", [("x", X.shape)]), unary, ulps=8, atol=2e-7)
case("Clip(0,6)", model("Clip", [("x", X.shape)], inits=[scalar("lo", 0.0), scalar("hi", 6.0)],
     extra_inputs=["lo", "hi"]), unary)
case("Clip(-1,none)", model("Clip", [("x", X.shape)], inits=[scalar("lo", -1.0)], extra_inputs=["lo"]), unary,
     known="onnxruntime clips +inf to the largest float when max is not given; the definition (numpy.clip) keeps inf, as sliceops does")
# The sign of a zero result is not defined for Max and Min (numpy returns either).
case("Max(x,0)", model("Max", [("x", X.shape)], inits=[scalar("z", 0.0)], extra_inputs=["z"]), unary, signed_zero=False)
case("Min(x,0)", model("Min", [("x", X.shape)], inits=[scalar("z", 0.0)], extra_inputs=["z"]), unary, signed_zero=False)
case("HardSigmoid", model("HardSigmoid", [("x", X.shape)]), unary, ulps=1, atol=1e-7)
case("HardSwish", model("HardSwish", [("x", X.shape)]), unary, ulps=1, atol=1e-7)
case("LeakyRelu", model("LeakyRelu", [("x", X.shape)], {"alpha": 0.1}), unary)
case("Elu", model("Elu", [("x", X.shape)]), unary, ulps=4, atol=2e-7)
case("Selu", model("Selu", [("x", X.shape)]), unary, ulps=4, atol=2e-7)
case("Gelu", model("Gelu", [("x", X.shape)], opset=20), unary, ulps=8, atol=2e-7)
case("Gelu(tanh)", model("Gelu", [("x", X.shape)], {"approximate": "tanh"}, opset=20), unary, ulps=16, atol=2e-7)
# Negative inputs where tract's tanh saturated short of -1 (a value per 1/8 from -12 to -2).
GX = np.arange(-12.0, -2.0, 0.125, dtype=F32).reshape(1, -1)
case("Gelu(tanh) negative", model("Gelu", [("x", GX.shape)], {"approximate": "tanh"}, opset=20), {"x": GX}, ulps=16,
     atol=2e-7, reference="its tanh approximation: up to 4.6e-7 off near x = -5, 1.3% at -4.25")

binary = {"a": A, "b": B}
for op in ["Add", "Sub", "Mul"]:
    case(op, model(op, [("a", A.shape), ("b", B.shape)]), binary)
case("Div", model("Div", [("a", A.shape), ("b", B.shape)]), binary)
# A constant divisor (tract folds its reciprocal) and a constant dividend; a scalar divisor that is
# not a power of two, and one that is (tract's product by 1/4 is the division there).
case("Div(a, constant b)", model("Div", [("a", A.shape)], inits=[onnx.numpy_helper.from_array(B, "b")],
     extra_inputs=["b"]), {"a": A})
CA = model("Div", [("b", B.shape)], inits=[onnx.numpy_helper.from_array(A, "a")])
CA.graph.node[0].input[:] = ["a", "b"]
case("Div(constant a, b)", CA, {"b": B})
for d in [3.0, 0.25, 1e-45, 0.0]:
    case(f"Div(x, {d:g})", model("Div", [("x", X.shape)], inits=[scalar("d", d)], extra_inputs=["d"]), unary)
for op in ["Max", "Min"]:
    case(op, model(op, [("a", A.shape), ("b", B.shape)]), binary, signed_zero=False)
case("Pow", model("Pow", [("a", A.shape), ("b", B.shape)]), binary, ulps=4, atol=0.0)

R = rows(8)
r = {"x": R}
AXES = helper.make_tensor("axes", TensorProto.INT64, [1], [1])
for op in ["ReduceMax", "ReduceMin"]:
    # The definition is numpy's maximum.reduce (minimum.reduce): NaN if a reduced value is NaN.
    nan_first = "it gives NaN only for a NaN in the first position of a row"
    case(op, model(op, [("x", R.shape)], {"keepdims": 1}, inits=[AXES], extra_inputs=["axes"]), r, signed_zero=False,
         reference=nan_first)
    # Down the columns (a reduction over an axis that is not the last).
    axes0 = helper.make_tensor("axes", TensorProto.INT64, [1], [0])
    case(f"{op} axis 0", model(op, [("x", R.shape)], {"keepdims": 1}, inits=[axes0], extra_inputs=["axes"]), r,
         signed_zero=False, reference=nan_first)
for op in ["ReduceSum", "ReduceMean"]:
    case(op, model(op, [("x", R.shape)], {"keepdims": 1}, inits=[AXES], extra_inputs=["axes"]), r, ulps=2,
         scale=row_sums)
case("Softmax", model("Softmax", [("x", R.shape)], {"axis": 1}), r, ulps=8, atol=2e-7)
case("LogSoftmax", model("LogSoftmax", [("x", R.shape)], {"axis": 1}), r, ulps=8, atol=2e-6)
case("LayerNormalization", model("LayerNormalization", [("x", R.shape)], {"axis": -1, "epsilon": 1e-5},
     inits=[helper.make_tensor("s", TensorProto.FLOAT, [8], [1.5] * 8), helper.make_tensor("b", TensorProto.FLOAT, [8], [0.25] * 8)],
     extra_inputs=["s", "b"]), r, ulps=16, atol=2e-6)
W = np.array([[0.5, -1.0, 2.0, 0.25], [1.0, 0.0, -0.5, 3.0], [-2.0, 1.5, 0.75, -0.25], [0.125, 4.0, -1.0, 1.0],
              [1.0, 1.0, 1.0, 1.0], [-0.5, 0.5, -0.5, 0.5], [2.0, -2.0, 0.0, 1.0], [0.0, 0.25, 0.5, 0.75]], dtype=F32)
case("MatMul", model("MatMul", [("x", R.shape)], inits=[onnx.numpy_helper.from_array(W, "w")], extra_inputs=["w"]), r,
     ulps=4, signed_zero=False, scale=product_sums(W))
case("Gemm", model("Gemm", [("x", R.shape)], {"alpha": 1.0, "beta": 1.0},
     inits=[onnx.numpy_helper.from_array(W, "w"), onnx.numpy_helper.from_array(np.array([0.5, -0.5, 0.0, 1.0], F32), "c")],
     extra_inputs=["w", "c"]), r, ulps=4, signed_zero=False, scale=product_sums(W))
CX = R.reshape(-1, 1, 2, 4)
CW = np.array([[[[0.5, -1.0], [2.0, 0.25]]], [[[1.0, 0.0], [-0.5, 3.0]]]], dtype=F32)
case("Conv", model("Conv", [("x", CX.shape)], {"pads": [0, 0, 1, 1]}, inits=[onnx.numpy_helper.from_array(CW, "w")],
     extra_inputs=["w"]), {"x": CX}, ulps=4, atol=1e-6, signed_zero=False)


def ulp_distance(a, b):
    """Units in the last place between float32 arrays (on the ordered integer line)."""
    ia = a.view(np.int32).astype(np.int64)
    ib = b.view(np.int32).astype(np.int64)
    ia = np.where(ia < 0, -(ia & 0x7FFFFFFF), ia)
    ib = np.where(ib < 0, -(ib & 0x7FFFFFFF), ib)
    return np.abs(ia - ib)


def compare(got, want, ulps, atol, signed_zero, scale):
    """None, or what differs (the first few positions)."""
    if got.shape != want.shape or got.dtype != want.dtype:
        return f"shape/dtype {got.shape} {got.dtype}, onnxruntime {want.shape} {want.dtype}"
    g, w = got.ravel(), want.ravel()
    bad = np.isnan(g) != np.isnan(w)
    both = ~np.isnan(g) & ~np.isnan(w)
    inf = both & (np.isinf(g) | np.isinf(w))
    bad |= inf & (g != w)
    finite = both & ~inf
    if ulps == 0:
        same = g.view(np.int32) == w.view(np.int32)
        if not signed_zero:
            same |= (g == 0) & (w == 0)
        bad |= finite & ~same
    else:
        bound = np.full(g.shape, atol) if scale is None else np.broadcast_to(scale, want.shape).ravel()
        with np.errstate(invalid="ignore", over="ignore"):
            close = (ulp_distance(g, w) <= ulps) | (np.abs(g.astype(np.float64) - w) <= np.maximum(bound, atol))
        bad |= finite & ~close
    if not bad.any():
        return None
    ix = np.flatnonzero(bad)[:4]
    return f"{bad.sum()} of {bad.size} differ, e.g. " + ", ".join(f"[{i}] {g[i]!r} vs {w[i]!r}" for i in ix)


def inputs_of(feeds, flat):
    return {n: flat for n in feeds}


def main():
    binary = Path(sys.argv[1] if len(sys.argv) > 1 else os.environ.get("SLICEOPS_BIN", ROOT / "target/release/sliceops"))
    if not binary.exists():
        print(f"error: no sliceops binary at {binary}", file=sys.stderr)
        return 2
    ort.set_default_logger_severity(3)
    passed = failed = known_count = 0
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        for name, (m, feeds, ulps, atol, signed_zero, scale, known, reference) in CASES.items():
            safe = "".join(c if c.isalnum() else "_" for c in name)
            path = tmp / f"{safe}.onnx"
            onnx.save(m, str(path))
            npz = tmp / f"{safe}_in.npz"
            np.savez(npz, **feeds)
            out = tmp / f"{safe}_out.npz"
            want = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"]).run(None, feeds)
            if reference:
                with np.errstate(all="ignore"):
                    defined = ReferenceEvaluator(m).run(None, feeds)
                tolerance = None if scale is None else scale(feeds)
                departs = any(compare(w, d, ulps, atol, signed_zero, tolerance) for w, d in zip(want, defined))
                if departs:
                    print(f"note {name}: onnxruntime departs from the definition ({reference}); compared with onnx's reference")
                want = defined
            r = subprocess.run([str(binary), "run", str(path), "-i", str(npz), "-z", str(out)],
                               capture_output=True, text=True, timeout=60)
            if r.returncode != 0:
                print(f"FAIL {name}: sliceops exited {r.returncode}: {r.stderr.strip()}")
                failed += 1
                continue
            with np.load(out) as z:
                got = [z[f"y{i}"] for i in range(len(want))]
            tolerance = None if scale is None else scale(feeds)
            why = next((w for w in (compare(g, e, ulps, atol, signed_zero, tolerance) for g, e in zip(got, want)) if w), None)
            tol = "bit-exact" if ulps == 0 else f"within {ulps} ulps or {atol:g}" + (", sums scaled" if scale else "")
            if why and known:
                print(f"known {name}: {known}: {why}")
                known_count += 1
            elif why:
                print(f"FAIL {name}: {why}")
                failed += 1
            elif known:
                print(f"ok   {name} ({tol}), listed as known ({known}): take it off the list")
                passed += 1
            else:
                print(f"ok   {name} ({tol})")
                passed += 1
    print(f"{passed} passed, {known_count} known deviations, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
