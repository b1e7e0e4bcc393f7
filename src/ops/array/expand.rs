//! `Expand` with its shape an input known only when the model runs.
//!
//! tract-onnx refuses it ("shape input is variable, of variable length"). Wrapped in a [`ParamNode`]:
//! the output rank is the larger of the input's and the shape's length; an input dim other than 1
//! is the output dim whatever the shape says (the shape must hold 1 or that dim there).

use crate::ops::params::{Inlet, OutShape, ParamNode, ParamRule, Refusal};
use tract_onnx::model::ParsingContext;
use tract_onnx::pb::NodeProto;
use tract_onnx::prelude::*;
use tract_onnx::tract_hir::internal::InferenceOp;

/// The Expand builder.
pub(crate) fn expand(ctx: &ParsingContext, node: &NodeProto) -> TractResult<(Box<dyn InferenceOp>, Vec<String>)> {
    Ok(ParamNode::boxed(crate::ops::stock("Expand")(ctx, node)?, ExpandRule, node))
}

/// The output shape of Expand: numpy broadcasting of the input's shape and the shape input.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ExpandRule;

impl ParamRule for ExpandRule {
    fn is_param(&self, ix: usize) -> bool {
        ix == 1
    }

    fn outputs(&self, inputs: &[Inlet]) -> Result<Vec<OutShape>, Refusal> {
        let data = inputs[0];
        let shape = inputs.get(1).ok_or("the shape input is missing")?;
        if shape.rank() != 1 {
            return Err(format!("the shape must be a 1-D tensor, got rank {}", shape.rank()).into());
        }
        let target: Vec<Option<TDim>> = match shape.dims()? {
            Some(dims) => {
                if let Some((i, v)) =
                    dims.iter().enumerate().find_map(|(i, d)| d.as_i64().filter(|v| *v < 0).map(|v| (i, v)))
                {
                    return Err(format!("the shape holds {v} at index {i}").into());
                }
                dims.into_iter().map(Some).collect()
            }
            None => {
                vec![None; shape.len().ok_or_else(|| Refusal::Unknown("the length of the shape must be known".into()))?]
            }
        };
        let rank = data.rank().max(target.len());
        let mut ins = vec![TDim::Val(1); rank - data.rank()];
        ins.extend(data.shape.iter().cloned());
        let mut want = vec![Some(TDim::Val(1)); rank - target.len()];
        want.extend(target);
        let mut out = Vec::with_capacity(rank);
        for (k, (a, b)) in ins.into_iter().zip(want).enumerate() {
            out.push(match b {
                Some(b) if a.is_one() => Some(b),
                Some(b) if b.is_one() || b == a => Some(a),
                Some(b) => match (a.as_i64(), b.as_i64()) {
                    (Some(x), Some(y)) => {
                        return Err(format!("axis {k}: dim {x} cannot be expanded to {y}").into());
                    }
                    // Symbolic dims that may differ: tract's broadcasting decides.
                    _ => None,
                },
                None if a.as_i64().is_some_and(|v| v != 1) => Some(a),
                None => None,
            });
        }
        Ok(vec![out])
    }
}
