//! `Tile` with its repeats an input known only when the model runs.
//!
//! tract-onnx's Tile takes runtime repeats, but analysis could not say the output rank, and a
//! negative repeat reached tract unchecked. Wrapped in a [`ParamNode`]: the rank is the input's, each
//! dim `d * repeat` once the repeats are known (checked: non-negative, one per axis, no overflow).

use crate::ops::params::{Inlet, OutShape, ParamNode, ParamRule, Refusal};
use tract_onnx::model::ParsingContext;
use tract_onnx::pb::NodeProto;
use tract_onnx::prelude::*;
use tract_onnx::tract_hir::internal::InferenceOp;

/// The Tile builder.
pub(crate) fn tile(ctx: &ParsingContext, node: &NodeProto) -> TractResult<(Box<dyn InferenceOp>, Vec<String>)> {
    Ok(ParamNode::boxed(crate::ops::stock("Tile")(ctx, node)?, TileRule, node))
}

/// The output shape of Tile: each dim times its repeat.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct TileRule;

impl ParamRule for TileRule {
    fn is_param(&self, ix: usize) -> bool {
        ix == 1
    }

    fn outputs(&self, inputs: &[Inlet]) -> Result<Vec<OutShape>, Refusal> {
        let data = inputs[0];
        let repeats = inputs.get(1).ok_or("the repeats input is missing")?;
        if repeats.rank() != 1 {
            return Err(format!("repeats must be a 1-D tensor, got rank {}", repeats.rank()).into());
        }
        let rank = data.rank();
        if let Some(n) = repeats.len().filter(|n| *n != rank) {
            return Err(format!("{n} repeats for an input of rank {rank}").into());
        }
        let Some(values) = repeats.dims()? else {
            // A dim of 0 stays 0 whatever its repeat.
            return Ok(vec![data
                .shape
                .iter()
                .map(|d| if d.as_i64() == Some(0) { Some(d.clone()) } else { None })
                .collect()]);
        };
        let mut out = Vec::with_capacity(rank);
        for (k, (d, r)) in data.shape.iter().zip(&values).enumerate() {
            out.push(Some(match (d.as_i64(), r.as_i64()) {
                (_, Some(r)) if r < 0 => return Err(format!("repeat {r} at axis {k} is negative").into()),
                (Some(d), Some(r)) => {
                    TDim::Val(d.checked_mul(r).ok_or_else(|| format!("axis {k}: {d} * {r} overflows"))?)
                }
                _ => (d.clone() * r.clone()).simplify(),
            }));
        }
        Ok(vec![out])
    }
}
