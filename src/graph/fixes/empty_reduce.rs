//! `ReduceMax` and `ReduceMin` of floats over an empty set: minus and plus infinity, as the
//! specification says (tract gives the largest finite float, `±f32::MAX`).
//!
//! A reduction reduces over an empty set exactly when its input has no element and its output has
//! some (a reduced axis has dim 0): every output element is then the empty set's value. [`EmptyNode`]
//! wraps the node's op (tract's, or our [`super::params::ParamNode`]): in the typed model, when the
//! input may be empty, [`EmptySetFill`] after it replaces the output by infinities in that case and
//! passes it on otherwise. Integers keep tract's values (the type's minimum or maximum, as the
//! specification says).

use super::stock_node::{Fix, StockNode};
use std::collections::HashMap;
use tract_onnx::prelude::*;
use tract_onnx::tract_core::internal::*;
use tract_onnx::tract_hir::internal::*;

/// A float `ReduceMax` or `ReduceMin` with the empty set's value.
pub type EmptyNode = StockNode<EmptySet>;

/// What [`EmptyNode`] does after the node's op.
#[derive(Debug, Clone)]
pub struct EmptySet {
    /// `true` for ReduceMax (minus infinity), `false` for ReduceMin (plus infinity).
    pub max: bool,
}

/// Wraps a reduction's op (as a builder returns it) for `ReduceMax` and `ReduceMin`; other ops as is.
pub fn wrap(
    built: (Box<dyn InferenceOp>, Vec<String>),
    node: &tract_onnx::pb::NodeProto,
) -> (Box<dyn InferenceOp>, Vec<String>) {
    match node.op_type.as_str() {
        "ReduceMax" => StockNode::wrap(built, EmptySet { max: true }, node),
        "ReduceMin" => StockNode::wrap(built, EmptySet { max: false }, node),
        _ => built,
    }
}

impl Fix for EmptySet {
    fn folds(_this: &EmptyNode, inputs: &[TValue]) -> bool {
        // An empty float input is left to the typed model, where the fill follows the reduction.
        inputs.first().is_none_or(|x| x.len() > 0 || !x.datum_type().is_float())
    }

    fn to_typed(
        this: &EmptyNode,
        source: &InferenceModel,
        node: &InferenceNode,
        target: &mut TypedModel,
        mapping: &HashMap<OutletId, OutletId>,
    ) -> TractResult<TVec<OutletId>> {
        let data = node.inputs.first().and_then(|o| mapping.get(o)).copied().context("a reduction's input")?;
        let fact = target.outlet_fact(data)?.clone();
        let outputs = this.stock.to_typed(source, node, target, mapping)?;
        let nonempty = fact.shape.iter().all(|d| d.as_i64().is_some_and(|d| d > 0));
        if nonempty || !fact.datum_type.is_float() || outputs.len() != 1 {
            return Ok(outputs);
        }
        let fill = EmptySetFill { max: this.fix.max };
        target.wire_node(format!("{}.empty_set", node.name), fill, &[data, outputs[0]])
    }
}

/// The reduction's output (input 1), or the empty set's value everywhere when the reduced input
/// (input 0) has no element.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct EmptySetFill {
    /// `true`: minus infinity (ReduceMax); `false`: plus infinity (ReduceMin).
    pub max: bool,
}

impl Op for EmptySetFill {
    fn name(&self) -> StaticName {
        "EmptySetFill".into()
    }

    op_as_typed_op!();
}

impl EvalOp for EmptySetFill {
    op_out_of_plan!();

    fn eval(&self, _ctx: &EvalContext, inputs: TVec<TValue>) -> TractResult<TVec<TValue>> {
        let (data, reduced) = args_2!(inputs);
        if data.len() > 0 || reduced.len() == 0 {
            return Ok(tvec!(reduced));
        }
        let value = if self.max { f64::NEG_INFINITY } else { f64::INFINITY };
        let filled = tensor0(value).cast_to_dt(reduced.datum_type())?.broadcast_scalar_to_shape(reduced.shape())?;
        Ok(tvec!(filled.into_tvalue()))
    }
}

impl TypedOp for EmptySetFill {
    as_op!();

    fn output_facts(&self, inputs: &[&TypedFact]) -> TractResult<TVec<TypedFact>> {
        ensure!(inputs.len() == 2, "EmptySetFill takes the reduced input and the reduction");
        Ok(tvec!(inputs[1].datum_type.fact(inputs[1].shape.clone())))
    }
}
