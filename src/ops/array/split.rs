//! `Split` (opset 13+) with its sizes an input known only when the model runs.
//!
//! tract-onnx's Split types the outputs from constant sizes only. Wrapped in a [`ParamNode`]: every
//! output has the input's rank and dims but on the split axis, where it has its size once known
//! (checked: one per output, non-negative, summing to the dim).

use crate::ops::params::{normalize_axis, Inlet, OutShape, ParamNode, ParamRule, Refusal};
use tract_onnx::model::ParsingContext;
use tract_onnx::pb::NodeProto;
use tract_onnx::prelude::*;
use tract_onnx::tract_hir::internal::InferenceOp;

/// The Split builder: tract's, wrapped when the sizes are an input.
pub(crate) fn split(ctx: &ParsingContext, node: &NodeProto) -> TractResult<(Box<dyn InferenceOp>, Vec<String>)> {
    let stock = crate::ops::stock("Split")(ctx, node)?;
    if ctx.onnx_operator_set_version < 13 || node.input.get(1).is_none_or(|i| i.is_empty()) {
        return Ok(stock);
    }
    let axis = node.attribute.iter().find(|a| a.name == "axis").map_or(0, |a| a.i);
    Ok(ParamNode::boxed(stock, SplitRule { axis, outputs: node.output.len() }, node))
}

/// The output shapes of Split along `axis` into `outputs` parts of the sizes of the second input.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SplitRule {
    /// The split axis, maybe negative.
    pub axis: i64,
    /// The number of outputs.
    pub outputs: usize,
}

impl ParamRule for SplitRule {
    fn is_param(&self, ix: usize) -> bool {
        ix == 1
    }

    fn outputs(&self, inputs: &[Inlet]) -> Result<Vec<OutShape>, Refusal> {
        let data = inputs[0];
        let sizes = inputs.get(1).ok_or("the split input is missing")?;
        if sizes.rank() != 1 {
            return Err(format!("split must be a 1-D tensor, got rank {}", sizes.rank()).into());
        }
        let axis = normalize_axis(self.axis, data.rank())?;
        if let Some(n) = sizes.len().filter(|n| *n != self.outputs) {
            return Err(format!("{n} sizes for {} outputs", self.outputs).into());
        }
        let shape = |d: Option<TDim>| -> OutShape {
            data.shape.iter().enumerate().map(|(k, x)| if k == axis { d.clone() } else { Some(x.clone()) }).collect()
        };
        let Some(values) = sizes.dims()? else { return Ok(vec![shape(None); self.outputs]) };
        let mut total = Some(0i64);
        for (i, v) in values.iter().enumerate() {
            let v = v.as_i64();
            if let Some(v) = v.filter(|v| *v < 0) {
                return Err(format!("size {v} of output {i} is negative").into());
            }
            total = match (total, v) {
                (Some(t), Some(v)) => Some(t.checked_add(v).ok_or("the sizes overflow when summed")?),
                _ => None,
            };
        }
        if let (Some(t), Some(d)) = (total, data.shape[axis].as_i64()) {
            if t != d {
                return Err(format!("the sizes sum to {t} but axis {axis} has dim {d}").into());
            }
        }
        Ok(values.into_iter().map(|v| shape(Some(v))).collect())
    }
}
