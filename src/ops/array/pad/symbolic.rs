//! `Pad` with pads computed from symbolic dims.
//!
//! Window-attention models pad their feature maps to a multiple of the window, with pads computed
//! from `Shape` (`(w - H % w) % w`); EfficientNet's SAME padding likewise. tract's Pad wants pads it
//! can count. [`PadNode`] wraps tract's Pad (opset 11+, no `axes` input): with symbolic pads the node
//! becomes a [`SymbolicPad`], whose output dims are `d + before + after` and whose pads get their
//! values when the model runs; anything else is tract's.

use crate::ops::stock_node::{Fix, StockNode};
use std::collections::HashMap;
use tract_onnx::prelude::*;
use tract_onnx::tract_core::internal::*;
use tract_onnx::tract_core::ops::array::{Pad, PadMode};
use tract_onnx::tract_hir::internal::*;

/// tract's Pad, with symbolic pads handled.
pub(crate) type PadNode = StockNode<SymbolicPads>;

/// What [`PadNode`] does in front of tract's Pad: symbolic pads make a [`SymbolicPad`].
#[derive(Debug, Clone)]
pub(crate) struct SymbolicPads {
    /// The mode, without the constant value (taken from the inputs).
    pub mode: String,
}

impl Fix for SymbolicPads {
    fn to_typed(
        this: &PadNode,
        source: &InferenceModel,
        node: &InferenceNode,
        target: &mut TypedModel,
        mapping: &HashMap<OutletId, OutletId>,
    ) -> TractResult<TVec<OutletId>> {
        let inputs = crate::node::typed_inputs::mapped_inputs(node, mapping);
        let pads = match inputs.get(1) {
            Some(p) => target.outlet_fact(*p)?.konst.clone(),
            None => None,
        };
        let symbolic = pads.as_ref().is_some_and(|p| {
            p.datum_type().is_tdim() && crate::dims::dims_of(p).is_ok_and(|d| d.iter().any(|d| d.as_i64().is_none()))
        });
        if !symbolic || inputs.len() > 3 {
            return this.stock.to_typed(source, node, target, mapping);
        }
        let data = target.outlet_fact(inputs[0])?.clone();
        let rank = data.rank();
        let values = crate::dims::dims_of(pads.as_ref().expect("checked"))?;
        if values.len() != 2 * rank {
            return Err(crate::NodeError::invalid(
                &this.node,
                "Pad",
                format!("{} pads for an input of rank {rank}", values.len()),
            ));
        }
        let pads: Vec<(TDim, TDim)> = (0..rank).map(|a| (values[a].clone(), values[a + rank].clone())).collect();
        let mode = match this.fix.mode.as_str() {
            "constant" => {
                let value = match inputs.get(2) {
                    Some(v) => target.outlet_fact(*v)?.konst.clone().ok_or_else(|| {
                        crate::NodeError::not_static(&this.node, "Pad", "the constant value is known only at run time")
                    })?,
                    None => Tensor::zero_dt(data.datum_type, &[])?.into_arc_tensor(),
                };
                PadMode::Constant(value)
            }
            "reflect" => PadMode::Reflect,
            "edge" => PadMode::Edge,
            other => {
                return Err(crate::NodeError::not_static(&this.node, "Pad", format!("mode {other} with symbolic pads")))
            }
        };
        target.wire_node(&node.name, SymbolicPad { pads, mode, node: this.node.clone() }, &inputs[..1])
    }
}

/// A Pad whose pads are dim expressions.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct SymbolicPad {
    /// `(before, after)` per axis.
    pub pads: Vec<(TDim, TDim)>,
    /// How the new elements are filled.
    pub mode: PadMode,
    /// The node's name, for errors.
    pub node: String,
}

impl Op for SymbolicPad {
    fn name(&self) -> StaticName {
        "SymbolicPad".into()
    }

    op_as_typed_op!();
}

impl EvalOp for SymbolicPad {
    op_out_of_plan!();

    fn eval(&self, ctx: &EvalContext, inputs: TVec<TValue>) -> TractResult<TVec<TValue>> {
        let pads: Vec<(usize, usize)> = self
            .pads
            .iter()
            .map(|(a, b)| {
                let v = |d: &TDim| d.eval(ctx.symbols).to_i64().ok().and_then(|v| usize::try_from(v).ok());
                match (v(a), v(b)) {
                    (Some(a), Some(b)) => Ok((a, b)),
                    _ => Err(crate::NodeError::invalid(
                        &self.node,
                        "Pad",
                        format!("pads ({a}, {b}) are not non-negative numbers when the model runs"),
                    )),
                }
            })
            .collect::<TractResult<_>>()?;
        Pad { pads, mode: self.mode.clone() }.eval(ctx, inputs)
    }
}

impl TypedOp for SymbolicPad {
    as_op!();

    fn output_facts(&self, inputs: &[&TypedFact]) -> TractResult<TVec<TypedFact>> {
        ensure!(
            inputs[0].rank() == self.pads.len(),
            "pads for rank {}, input of rank {}",
            self.pads.len(),
            inputs[0].rank()
        );
        let shape: TVec<TDim> = inputs[0]
            .shape
            .iter()
            .zip(&self.pads)
            .map(|(d, (a, b))| (d.clone() + a.clone() + b.clone()).simplify())
            .collect();
        Ok(tvec![inputs[0].datum_type.fact(&*shape)])
    }
}
