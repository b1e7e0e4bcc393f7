//! `RNN`, `GRU` and `LSTM` without an initial state (`initial_h`, and `initial_c` of an LSTM).
//!
//! tract-onnx wires a missing state as a constant of zeros, which needs the batch size as a number:
//! with a symbolic batch, typing the model fails. [`RecNode`] wraps tract's op: analysis is tract's;
//! in the typed model, when the batch size is not a number, zeros broadcast to the state's symbolic
//! shape are given to tract's op built as if the node had those inputs. Anything else is tract's.

use super::stock_node::{Fix, StockNode};
use std::collections::HashMap;
use tract_onnx::model::ParsingContext;
use tract_onnx::pb::NodeProto;
use tract_onnx::prelude::*;
use tract_onnx::tract_core::internal::*;
use tract_onnx::tract_core::ops::array::MultiBroadcastTo;
use tract_onnx::tract_hir::internal::*;

/// tract's recurrent op, with missing initial states given as zeros of a symbolic shape.
pub type RecNode = StockNode<ZeroStates>;

/// What [`RecNode`] does in front of tract's op.
#[derive(Debug, Clone)]
pub struct ZeroStates {
    /// tract's op built for the node with its missing states present.
    with_states: Box<dyn InferenceOp>,
    /// The node's inputs with the states: `Some(i)` is the node's `i`-th present input, `None` a
    /// state of zeros.
    inputs: Vec<Option<usize>>,
    /// `layout=1`: batch first.
    batch_first: bool,
}

/// The builder for `RNN`, `GRU` and `LSTM`: tract's, wrapped when an initial state is missing.
pub fn rec(ctx: &ParsingContext, node: &NodeProto) -> TractResult<(Box<dyn InferenceOp>, Vec<String>)> {
    let (op, states): (&'static str, &[usize]) = match node.op_type.as_str() {
        "LSTM" => ("LSTM", &[5, 6]),
        "GRU" => ("GRU", &[5]),
        _ => ("RNN", &[5]),
    };
    let stock = super::stock(op)(ctx, node)?;
    let missing = |i: usize| node.input.get(i).is_none_or(|n| n.is_empty());
    if !states.iter().any(|&i| missing(i)) {
        return Ok(stock);
    }
    let mut full = node.clone();
    let mut inputs = vec![];
    let mut present = 0;
    for i in 0..full.input.len().max(states[states.len() - 1] + 1) {
        if states.contains(&i) && missing(i) {
            if full.input.len() <= i {
                full.input.resize(i + 1, String::new());
            }
            full.input[i] = format!("{}.zero_state_{i}", node.name);
            inputs.push(None);
        } else if !missing(i) {
            inputs.push(Some(present));
            present += 1;
        }
    }
    let with_states = super::stock(op)(ctx, &full)?.0;
    let batch_first = node.attribute.iter().any(|a| a.name == "layout" && a.i == 1);
    Ok(StockNode::wrap(stock, ZeroStates { with_states, inputs, batch_first }, node))
}

impl Fix for ZeroStates {
    fn to_typed(
        this: &RecNode,
        source: &InferenceModel,
        node: &InferenceNode,
        target: &mut TypedModel,
        mapping: &HashMap<OutletId, OutletId>,
    ) -> TractResult<TVec<OutletId>> {
        let fact = |i: usize| -> TractResult<TypedFact> {
            let outlet = node.inputs.get(i).and_then(|o| mapping.get(o)).context("a recurrent op's input")?;
            Ok(target.outlet_fact(*outlet)?.clone())
        };
        let (x, w, r) = (fact(0)?, fact(1)?, fact(2)?);
        if x.rank() != 3 || w.rank() != 3 || r.rank() != 3 {
            return this.stock.to_typed(source, node, target, mapping);
        }
        // X is [seq, batch, input], or [batch, seq, input] with layout=1.
        let batch = x.shape[usize::from(!this.fix.batch_first)].clone();
        if batch.to_usize().is_ok() {
            return this.stock.to_typed(source, node, target, mapping);
        }
        let (dirs, hidden) = (w.shape[0].clone(), r.shape[2].clone());
        let shape: TVec<TDim> =
            if this.fix.batch_first { tvec![batch, dirs, hidden] } else { tvec![dirs, batch, hidden] };
        let zero = Tensor::zero_dt(x.datum_type, &[1, 1, 1])?;
        let zero = target.add_const(format!("{}.zero", node.name), zero)?;
        let zeros =
            target.wire_node(format!("{}.zero_state", node.name), MultiBroadcastTo::new(shape.into()), &[zero])?[0];
        // The node with the states among its inputs, the states read from an outlet no node has.
        let placeholder = OutletId::new(usize::MAX, 0);
        let mut mapping = mapping.clone();
        mapping.insert(placeholder, zeros);
        let mut with_states = node.clone();
        with_states.inputs = this
            .fix
            .inputs
            .iter()
            .map(|i| match i {
                Some(i) => node.inputs.get(*i).copied().context("a recurrent op's input"),
                None => Ok(placeholder),
            })
            .collect::<TractResult<_>>()?;
        this.fix.with_states.to_typed(source, &with_states, target, &mapping)
    }
}
