//! Element-wise ops and the ops that only move data.
//!
//! An element-wise op costs its weight per output element; a variadic one (`Add`, `Sum`, `Max`, ...)
//! its weight per pair of inputs combined, `(inputs - 1) * weight` per output element, as onnx-tool.

use super::{scaled, Ctx, RuleResult, ADD, CMP, DIV, EXP, LOG, MUL, SIN, SQRT, TANH};

/// Ops that move or select data with no arithmetic: 0 multiply-adds (their bytes are still counted).
pub(crate) const MOVES_DATA: &[&str] = &[
    "Identity",
    "Dropout",
    "Reshape",
    "Flatten",
    "Squeeze",
    "Unsqueeze",
    "Transpose",
    "Concat",
    "Split",
    "Slice",
    "Gather",
    "GatherElements",
    "GatherND",
    "Scatter",
    "ScatterND",
    "ScatterElements",
    "Expand",
    "Tile",
    "Pad",
    "Shape",
    "Size",
    "Constant",
    "ConstantOfShape",
    "Cast",
    "CastLike",
    "Where",
    "DepthToSpace",
    "SpaceToDepth",
    "Compress",
    "OneHot",
    "Range",
    "Trilu",
    "EyeLike",
    "ReverseSequence",
    "CenterCropPad",
];

/// Weight per output element of the one-input ops: the operations of its formula.
const UNARY: &[(&str, i128)] = &[
    ("Abs", CMP),
    ("Neg", CMP),
    ("Ceil", CMP),
    ("Floor", CMP),
    ("Round", CMP),
    ("Sign", CMP),
    ("Not", CMP),
    ("BitwiseNot", CMP),
    ("IsNaN", CMP),
    ("IsInf", CMP),
    ("Relu", CMP),
    ("ThresholdedRelu", CMP),
    // |x| > lambda ? x -+ bias : 0
    ("Shrink", 2 * CMP + ADD),
    // min(max(x, lo), hi)
    ("Clip", 2 * CMP),
    ("Reciprocal", DIV),
    ("Sqrt", SQRT),
    ("Exp", EXP),
    ("Log", LOG),
    ("Sin", SIN),
    ("Cos", SIN),
    ("Tan", 2 * SIN + DIV),
    ("Tanh", TANH),
    // a rational approximation after a square root (onnx-tool's ATAN_MACS)
    ("Atan", SQRT + 4 * MUL + DIV),
    ("Asin", SQRT + 4 * MUL + DIV + SQRT + MUL + ADD),
    ("Acos", SQRT + 4 * MUL + DIV + SQRT + MUL + ADD),
    // (e^x -+ e^-x) / 2
    ("Sinh", 2 * EXP + ADD + MUL),
    ("Cosh", 2 * EXP + ADD + MUL),
    // ln(x + sqrt(x*x -+ 1))
    ("Asinh", LOG + SQRT + 2 * ADD + MUL),
    ("Acosh", LOG + SQRT + 2 * ADD + MUL),
    // ln((1+x)/(1-x)) / 2
    ("Atanh", LOG + 2 * ADD + DIV + MUL),
    // the exponential dominates (onnx-tool's convention)
    ("Sigmoid", EXP),
    // max(0, min(1, alpha*x + beta))
    ("HardSigmoid", MUL + ADD + 2 * CMP),
    // x * HardSigmoid(x)
    ("HardSwish", 2 * MUL + ADD + 2 * CMP),
    ("LeakyRelu", MUL + CMP),
    // x < 0 ? alpha*(e^x - 1) : x
    ("Elu", CMP + EXP + ADD + MUL),
    ("Selu", CMP + EXP + ADD + 2 * MUL),
    // max(0,x) + min(0, alpha*(e^(x/alpha) - 1))
    ("Celu", DIV + EXP + 2 * ADD + MUL + 2 * CMP),
    // onnx-tool's count: an exponential and two multiplies
    ("Gelu", EXP + 2 * MUL),
    // the Abramowitz-Stegun form: an exponential, a division, a degree-5 polynomial
    ("Erf", EXP + DIV + 5 * MUL + 5 * ADD),
    // ln(1 + e^x)
    ("Softplus", EXP + ADD + LOG),
    // x / (1 + |x|)
    ("Softsign", CMP + ADD + DIV),
    // x * tanh(softplus(x))
    ("Mish", EXP + ADD + LOG + TANH + MUL),
    // x * sigmoid(alpha*x)
    ("Swish", EXP + 2 * MUL),
    // (x - zero point) * scale, and back
    ("QuantizeLinear", MUL + ADD),
    ("DequantizeLinear", MUL + ADD),
    // a running sum (product) along one axis
    ("CumSum", ADD),
    ("CumProd", MUL),
    // max, subtract, exp, sum, divide: the exponential and the division (onnx-tool's count)
    ("Softmax", EXP + DIV),
    ("LogSoftmax", EXP + DIV + ADD + LOG),
    ("Hardmax", CMP),
];

/// Weight per output element and per pair of inputs combined.
const VARIADIC: &[(&str, i128)] = &[
    ("Add", ADD),
    ("Sub", ADD),
    ("Mul", MUL),
    ("Div", DIV),
    ("Max", CMP),
    ("Min", CMP),
    ("Sum", ADD),
    ("Mod", ADD),
    ("BitShift", ADD),
    ("BitwiseAnd", ADD),
    ("BitwiseOr", ADD),
    ("BitwiseXor", ADD),
    ("Pow", EXP),
    ("PRelu", CMP + MUL),
];

/// Weight per output element of the comparisons and logical ops (two inputs).
const COMPARE: &[&str] = &["Equal", "Greater", "Less", "GreaterOrEqual", "LessOrEqual", "And", "Or", "Xor"];

/// The rule of an element-wise op, `None` if `op` is not one.
pub(super) fn rule(ctx: &Ctx, op: &str) -> Option<RuleResult> {
    if let Some((_, w)) = UNARY.iter().find(|(name, _)| *name == op) {
        return Some(ctx.output_volume(0).and_then(|v| scaled(&v, *w)));
    }
    let given = ctx.node.input.iter().filter(|i| !i.is_empty()).count() as i128;
    if let Some((_, w)) = VARIADIC.iter().find(|(name, _)| *name == op) {
        return Some(ctx.output_volume(0).and_then(|v| scaled(&v, (given - 1).max(1) * w)));
    }
    if COMPARE.contains(&op) {
        return Some(ctx.output_volume(0).and_then(|v| scaled(&v, CMP)));
    }
    match op {
        // the sum of the inputs, then one division
        "Mean" => Some(ctx.output_volume(0).and_then(|v| scaled(&v, (given - 1).max(0) * ADD + DIV))),
        // one compare per input element
        "NonZero" => Some(ctx.input_volume(0).and_then(|v| scaled(&v, CMP))),
        // min and max over the input, then a scale and a rounding per element
        "DynamicQuantizeLinear" => Some(ctx.input_volume(0).and_then(|v| scaled(&v, 2 * CMP + MUL + ADD))),
        _ => None,
    }
}
