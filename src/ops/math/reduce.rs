//! `Reduce*` with `axes` as an input (ReduceSum from opset 13, the others from opset 18).
//!
//! tract-onnx wires these only with constant axes ("expected axes as a constant"). The builder wraps
//! tract's op in a [`ParamNode`] with [`ReduceAxes`]: constant axes are checked and handed to tract,
//! axes known only when the model runs give fresh dims (with `keepdims`, a dim of 1 stays 1), and the
//! output rank is known from the length of `axes`.

use super::extremum::AxesFrom;
use crate::ops::array::axes::data_and_axes;
use crate::ops::params::{Inlet, OutShape, ParamNode, ParamRule, Refusal};
use tract_onnx::model::ParsingContext;
use tract_onnx::pb::NodeProto;
use tract_onnx::prelude::*;
use tract_onnx::tract_hir::internal::InferenceOp;

/// The reductions whose axes may be an input.
const REDUCERS: [&str; 10] = [
    "ReduceL1",
    "ReduceL2",
    "ReduceLogSum",
    "ReduceLogSumExp",
    "ReduceMax",
    "ReduceMean",
    "ReduceMin",
    "ReduceProd",
    "ReduceSum",
    "ReduceSumSquare",
];

/// The builder of every `Reduce*` op: tract's, wrapped when `axes` is an input.
pub(crate) fn reduce(ctx: &ParsingContext, node: &NodeProto) -> TractResult<(Box<dyn InferenceOp>, Vec<String>)> {
    let op = REDUCERS
        .iter()
        .find(|r| **r == node.op_type)
        .ok_or_else(|| anyhow::anyhow!("{} is not a reduction", node.op_type))?;
    let stock = crate::ops::stock(op)(ctx, node)?;
    let axes_input = node.input.get(1).is_some_and(|i| !i.is_empty());
    let from_inputs =
        ctx.onnx_operator_set_version >= 18 || (*op == "ReduceSum" && ctx.onnx_operator_set_version >= 13);
    let int = |name: &str, default: i64| node.attribute.iter().find(|a| a.name == name).map_or(default, |a| a.i);
    let noop_with_empty_axes = int("noop_with_empty_axes", 0) != 0;
    if !(axes_input && from_inputs) {
        let axes = match (from_inputs, node.attribute.iter().find(|a| a.name == "axes")) {
            // No axes input: nothing is reduced with noop_with_empty_axes, every axis without.
            (true, _) if noop_with_empty_axes => return Ok(stock),
            (true, _) | (false, None) => AxesFrom::Attribute(None),
            (false, Some(a)) => AxesFrom::Attribute(Some(a.ints.clone())),
        };
        return Ok(super::extremum::wrap(stock, node, axes));
    }
    let rule = ReduceAxes { keepdims: int("keepdims", 1) != 0, noop_with_empty_axes };
    let axes = AxesFrom::Input { noop_with_empty_axes };
    Ok(super::extremum::wrap(ParamNode::boxed(stock, rule, node), node, axes))
}

/// The output shape of a reduction over the axes of its second input.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ReduceAxes {
    /// Whether reduced axes stay, with dim 1.
    pub keepdims: bool,
    /// Whether empty axes leave the input as is (else they reduce every axis).
    pub noop_with_empty_axes: bool,
}

impl ReduceAxes {
    /// The reduced axes, normalized: each in `[-rank, rank)`, none twice. `None` when nothing is reduced.
    pub(crate) fn axes(&self, axes: &[i64], rank: usize) -> Result<Option<Vec<usize>>, String> {
        if axes.is_empty() {
            return Ok(if self.noop_with_empty_axes { None } else { Some((0..rank).collect()) });
        }
        crate::ops::params::distinct_axes(axes, rank).map(Some)
    }
}

impl ParamRule for ReduceAxes {
    fn is_param(&self, ix: usize) -> bool {
        ix == 1
    }

    fn outputs(&self, inputs: &[Inlet]) -> Result<Vec<OutShape>, Refusal> {
        let (data, axes) = data_and_axes(inputs)?;
        if !axes.datum_type.is_integer() && !axes.datum_type.is_tdim() {
            return Err(format!("axes must be integers, got {:?}", axes.datum_type).into());
        }
        let shape: OutShape = data.shape.iter().cloned().map(Some).collect();
        let rank = data.rank();
        if let Some(values) = axes.ints()? {
            let Some(reduced) = self.axes(&values, rank)? else { return Ok(vec![shape]) };
            let out = shape
                .into_iter()
                .enumerate()
                .filter_map(|(k, d)| match (reduced.contains(&k), self.keepdims) {
                    (false, _) => Some(d),
                    (true, true) => Some(Some(TDim::Val(1))),
                    (true, false) => None,
                })
                .collect();
            return Ok(vec![out]);
        }
        // Axes known only when the model runs: a dim of 1 is 1 whether reduced or not.
        let unknown = |d: Option<TDim>| if d.as_ref().is_some_and(TDim::is_one) { d } else { None };
        if self.keepdims {
            return Ok(vec![shape.into_iter().map(unknown).collect()]);
        }
        match axes.len() {
            Some(0) if self.noop_with_empty_axes => Ok(vec![shape]),
            Some(0) => Ok(vec![vec![]]),
            Some(n) if n > rank => Err(format!("{n} axes for an input of rank {rank}").into()),
            Some(n) => Ok(vec![vec![None; rank - n]]),
            None => Err(Refusal::Unknown("the number of axes must be known to know the output rank".into())),
        }
    }
}
