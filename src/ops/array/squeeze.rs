//! `Squeeze` and `Unsqueeze` (opset 13+) with `axes` as an input.
//!
//! tract-onnx wires them only with constant axes ("Need axes to be a constant"). Wrapped in a
//! [`ParamNode`]: the output rank follows from the number of axes, the dims from their values.

use super::axes::data_and_axes;
use crate::ops::params::{distinct_axes, Inlet, OutShape, ParamNode, ParamRule, Refusal};
use tract_onnx::model::ParsingContext;
use tract_onnx::pb::NodeProto;
use tract_onnx::prelude::*;
use tract_onnx::tract_hir::internal::InferenceOp;

/// The Squeeze builder: tract's, wrapped when `axes` is an input.
pub(crate) fn squeeze(ctx: &ParsingContext, node: &NodeProto) -> TractResult<(Box<dyn InferenceOp>, Vec<String>)> {
    let stock = crate::ops::stock("Squeeze")(ctx, node)?;
    if ctx.onnx_operator_set_version < 13 || node.input.get(1).is_none_or(|i| i.is_empty()) {
        return Ok(stock);
    }
    Ok(ParamNode::boxed(stock, AxesRule { unsqueeze: false }, node))
}

/// The Unsqueeze builder: tract's, wrapped (opset 13+, where `axes` is an input).
pub(crate) fn unsqueeze(ctx: &ParsingContext, node: &NodeProto) -> TractResult<(Box<dyn InferenceOp>, Vec<String>)> {
    let stock = crate::ops::stock("Unsqueeze")(ctx, node)?;
    if ctx.onnx_operator_set_version < 13 {
        return Ok(stock);
    }
    Ok(ParamNode::boxed(stock, AxesRule { unsqueeze: true }, node))
}

/// The output shape of Squeeze or Unsqueeze over the axes of the second input.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct AxesRule {
    /// Unsqueeze (insert axes of 1) rather than Squeeze (remove axes of 1).
    pub unsqueeze: bool,
}

impl ParamRule for AxesRule {
    fn is_param(&self, ix: usize) -> bool {
        ix == 1
    }

    fn outputs(&self, inputs: &[Inlet]) -> Result<Vec<OutShape>, Refusal> {
        let (data, axes) = data_and_axes(inputs)?;
        let rank = data.rank();
        let n = match axes.ints()? {
            Some(v) => v.len(),
            None => axes.len().ok_or_else(|| Refusal::Unknown("the number of axes must be known".into()))?,
        };
        let out_rank = if self.unsqueeze {
            rank.checked_add(n).ok_or("too many axes")?
        } else {
            rank.checked_sub(n).ok_or_else(|| format!("{n} axes for an input of rank {rank}"))?
        };
        let Some(values) = axes.ints()? else {
            // Unsqueeze inserts 1s and Squeeze removes 1s: where, the values say.
            return Ok(vec![vec![None; out_rank]]);
        };
        if self.unsqueeze {
            let inserted = distinct_axes(&values, out_rank)?;
            let mut rest = data.shape.iter();
            let out = (0..out_rank)
                .map(|k| if inserted.contains(&k) { Some(TDim::Val(1)) } else { rest.next().cloned() })
                .collect();
            return Ok(vec![out]);
        }
        let removed = distinct_axes(&values, rank)?;
        for &k in &removed {
            if let Some(d) = data.shape[k].as_i64().filter(|d| *d != 1) {
                return Err(format!("axis {k} has dim {d}, only dims of 1 can be squeezed").into());
            }
        }
        let out =
            data.shape.iter().enumerate().filter(|(k, _)| !removed.contains(k)).map(|(_, d)| Some(d.clone())).collect();
        Ok(vec![out])
    }
}
