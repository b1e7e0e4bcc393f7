//! ONNX `Attention` (opsets 23, 24 and 25): scaled dot-product attention with every variant of the
//! specification.
//!
//! - 4D inputs `(batch, heads, seq, head_size)`, or 3D `(batch, seq, heads * head_size)` with the
//!   `q_num_heads` / `kv_num_heads` attributes;
//! - grouped-query attention: query head `h` reads key/value head `h / (q_heads / kv_heads)`;
//! - `attn_mask`, boolean (`true` attends) or additive, broadcast to `(batch, q_heads, q_seq, total)`,
//!   its last dim padded with "masked" up to the total sequence length;
//! - `is_causal` aligned bottom-right (query `i` attends key `j` iff `j <= i + offset`, the offset being
//!   the past length, or `nonpad_kv_seqlen - q_seq` per batch), the opset-25 windows
//!   `left_window_size` / `right_window_size`, and the padding mask of `nonpad_kv_seqlen`;
//! - `scale` (default `1/sqrt(head_size)`, applied as its square root to Q and to K), `softcap`;
//! - `past_key` / `past_value` concatenated before the new keys and values, as `present_*` outputs;
//! - `qk_matmul_output` in its four modes, and `softmax_precision`;
//! - a query row with no key to attend gives zeros, never NaN.
//!
//! The model is wired from tract's ops: reshapes and transposes, a concat for the cache, a scalar
//! multiply, two einsums (grouped heads as one more axis, no copy of the keys), and between them our
//! [`AttentionSoftmax`], which adds the masks, applies the soft cap and the softmax.

mod rules;
mod softmax;
pub(crate) mod wire;

pub(crate) use softmax::AttentionSoftmax;

use crate::node::attrs;
use crate::node::expanded::Expanded;
use crate::node::Label;
use tract_onnx::model::ParsingContext;
use tract_onnx::pb::NodeProto;
use tract_onnx::prelude::*;
use tract_onnx::tract_hir::internal::*;

/// What the optional fourth output, `qk_matmul_output`, holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum QkOutput {
    /// Mode 0: the scaled `Q Kᵀ`.
    Scores,
    /// Mode 1: after the soft cap.
    Capped,
    /// Mode 2: after the soft cap and the masks (the softmax's input).
    Biased,
    /// Mode 3: the softmax (zero rows where nothing is attended).
    Probabilities,
}

/// The parameters of one `Attention` node, checked.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Attention {
    /// The node, for errors.
    pub label: Label,
    /// `q_num_heads`, for 3D inputs.
    pub q_heads: Option<usize>,
    /// `kv_num_heads`, for 3D inputs.
    pub kv_heads: Option<usize>,
    /// `scale`, when given.
    pub scale: Option<f32>,
    /// `softcap` (0: none).
    pub softcap: f32,
    /// `is_causal`.
    pub causal: bool,
    /// `left_window_size` (-1: unbounded).
    pub left_window: i64,
    /// `right_window_size` (-1: unbounded).
    pub right_window: i64,
    /// `softmax_precision`, when given.
    pub precision: Option<DatumType>,
    /// `qk_matmul_output_mode`.
    pub qk_mode: QkOutput,
    /// Which optional inputs are given: `attn_mask`, `past_key`, `past_value`, `nonpad_kv_seqlen`.
    pub has_mask: bool,
    /// `past_key` and `past_value` are given (both or neither).
    pub has_past: bool,
    /// `nonpad_kv_seqlen` is given.
    pub has_nonpad: bool,
    /// Which optional outputs are asked for: `present_key`, `present_value`, `qk_matmul_output`.
    pub out_present_key: bool,
    /// `present_value` is asked for.
    pub out_present_value: bool,
    /// `qk_matmul_output` is asked for.
    pub out_qk: bool,
}

fn given(names: &[String], i: usize) -> bool {
    names.get(i).is_some_and(|n| !n.is_empty())
}

/// The Attention builder.
pub(crate) fn attention(_ctx: &ParsingContext, node: &NodeProto) -> TractResult<(Box<dyn InferenceOp>, Vec<String>)> {
    let op = Attention::parse(node)?;
    let (inputs, outputs) = (op.input_count(), op.output_count());
    Expanded::new("Attention", op, inputs, rules::rules, wire::wire).with_outputs(outputs).built()
}

impl Attention {
    /// Reads and checks a node's attributes and which of its optional inputs and outputs are given.
    pub(crate) fn parse(node: &NodeProto) -> TractResult<Attention> {
        let label = crate::node::node_label(node);
        let heads = |name: &str| -> TractResult<Option<usize>> {
            match attrs::int(&label, node, name)? {
                None => Ok(None),
                Some(v) if v >= 1 => usize::try_from(v).map(Some).map_err(|_| label.err(format!("{name} is {v}"))),
                Some(v) => Err(label.err(format!("attribute {name} is {v}: it must be at least 1"))),
            }
        };
        let q_heads = heads("q_num_heads")?;
        let kv_heads = heads("kv_num_heads")?;
        let scale = attrs::float(&label, node, "scale")?;
        if let Some(s) = scale {
            if !(s.is_finite() && s > 0.0) {
                return Err(label.err(format!(
                    "attribute scale is {s}: it must be a positive finite number (Q and K are each scaled by its square root)"
                )));
            }
        }
        let softcap = attrs::float(&label, node, "softcap")?.unwrap_or(0.0);
        if !(softcap.is_finite() && softcap >= 0.0) {
            return Err(label.err(format!("attribute softcap is {softcap}: it must be 0 (none) or positive")));
        }
        let causal = attrs::flag(&label, node, "is_causal")?;
        let window = |name: &str| -> TractResult<i64> {
            match attrs::int(&label, node, name)?.unwrap_or(-1) {
                v if v >= -1 => Ok(v),
                v => Err(label.err(format!("attribute {name} is {v}: it must be -1 (unbounded) or at least 0"))),
            }
        };
        let left_window = window("left_window_size")?;
        let right_window = window("right_window_size")?;
        let precision = match attrs::int(&label, node, "softmax_precision")? {
            None => None,
            Some(code) => {
                let dt = attrs::elem_type(&label, "softmax_precision", code)?;
                if !matches!(dt, DatumType::F16 | DatumType::F32 | DatumType::F64) {
                    return Err(label.err(format!(
                        "attribute softmax_precision is {code}: supported are 1 (float), 10 (float16) and 11 (double)"
                    )));
                }
                Some(dt)
            }
        };
        let qk_mode = match attrs::int(&label, node, "qk_matmul_output_mode")?.unwrap_or(0) {
            0 => QkOutput::Scores,
            1 => QkOutput::Capped,
            2 => QkOutput::Biased,
            3 => QkOutput::Probabilities,
            v => return Err(label.err(format!("attribute qk_matmul_output_mode is {v}: it must be 0, 1, 2 or 3"))),
        };
        let (past_key, past_value) = (given(&node.input, 4), given(&node.input, 5));
        if past_key != past_value {
            return Err(label.err("past_key and past_value must be given together"));
        }
        let has_nonpad = given(&node.input, 6);
        if has_nonpad && past_key {
            return Err(label.err("nonpad_kv_seqlen cannot be used with past_key and past_value"));
        }
        if !(given(&node.input, 0) && given(&node.input, 1) && given(&node.input, 2)) {
            return Err(label.err("the inputs Q, K and V are required"));
        }
        if node.input.len() > 7 {
            return Err(label.err(format!("Attention takes at most 7 inputs, got {}", node.input.len())));
        }
        if !given(&node.output, 0) {
            return Err(label.err("the output Y is required"));
        }
        if node.output.len() > 4 {
            return Err(label.err(format!("Attention has at most 4 outputs, got {}", node.output.len())));
        }
        Ok(Attention {
            label,
            q_heads,
            kv_heads,
            scale,
            softcap,
            causal,
            left_window,
            right_window,
            precision,
            qk_mode,
            has_mask: given(&node.input, 3),
            has_past: past_key,
            has_nonpad,
            out_present_key: given(&node.output, 1),
            out_present_value: given(&node.output, 2),
            out_qk: given(&node.output, 3),
        })
    }

    /// The number of inputs tract passes (the optional ones given).
    fn input_count(&self) -> usize {
        3 + usize::from(self.has_mask) + 2 * usize::from(self.has_past) + usize::from(self.has_nonpad)
    }

    /// The number of outputs asked for.
    fn output_count(&self) -> usize {
        1 + usize::from(self.out_present_key) + usize::from(self.out_present_value) + usize::from(self.out_qk)
    }

    /// Positions, among the inputs tract passes, of `attn_mask`, `past_key`, `past_value`, `nonpad`.
    fn slots(&self) -> [Option<usize>; 4] {
        let mut next = 3;
        let mut take = |given: bool| {
            given.then(|| {
                next += 1;
                next - 1
            })
        };
        let mask = take(self.has_mask);
        let past_key = take(self.has_past);
        let past_value = take(self.has_past);
        let nonpad = take(self.has_nonpad);
        [mask, past_key, past_value, nonpad]
    }
}
