//! `RNN`, `GRU` and `LSTM`: a missing initial state over a symbolic batch, and `direction="reverse"`.
//!
//! tract-onnx wires a missing state (`initial_h`, and `initial_c` of an LSTM) as a constant of zeros,
//! which needs the batch size as a number: with a symbolic batch, typing the model fails. tract-onnx
//! also ignores the `direction` attribute: a single-direction `"reverse"` node ran forward. [`RecNode`]
//! wraps tract's op: analysis is tract's; in the typed model, when the batch size is not a number,
//! zeros broadcast to the state's symbolic shape are given to tract's op built as if the node had
//! those inputs, and a reverse node reads `X` reversed along the sequence axis and gives `Y` reversed
//! back (its `Y_h` and `Y_c` are the states after the last step it takes, the first time step, as the
//! specification says). Anything else is tract's.

use super::gru::GruOp;
use super::lstm::LstmOp;
use crate::ops::stock_node::{Fix, StockNode};
use std::collections::HashMap;
use tract_onnx::model::ParsingContext;
use tract_onnx::pb::NodeProto;
use tract_onnx::prelude::*;
use tract_onnx::tract_core::internal::*;
use tract_onnx::tract_core::ops::array::MultiBroadcastTo;
use tract_onnx::tract_hir::internal::*;

/// tract's recurrent op, with missing initial states given as zeros of a symbolic shape and the
/// reverse direction run on reversed sequences.
pub(crate) type RecNode = StockNode<RecFix>;

/// What [`RecNode`] does in front of tract's op.
#[derive(Debug, Clone)]
pub(crate) struct RecFix {
    /// The node with its missing states as inputs; `None` when no state is missing.
    with_states: Option<WithStates>,
    /// `layout=1`: batch first.
    batch_first: bool,
    /// `direction="reverse"`.
    reverse: bool,
    /// Whether the node has its `Y` output (the first).
    y_output: bool,
    /// Our kernel, for an `LSTM` or a `GRU` of the plain form.
    ours: Option<Ours>,
}

/// Our kernels for the plain forms.
#[derive(Debug, Clone)]
pub(crate) enum Ours {
    /// An `LSTM`'s.
    Lstm(LstmOp),
    /// A `GRU`'s.
    Gru(GruOp),
}

/// tract's op for a node with its missing initial states given as inputs.
#[derive(Debug, Clone)]
pub(crate) struct WithStates {
    /// tract's op built for the node with its missing states present.
    op: Box<dyn InferenceOp>,
    /// The node's inputs with the states: `Some(i)` is the node's `i`-th present input, `None` a
    /// state of zeros.
    inputs: Vec<Option<usize>>,
}

/// The builder for `RNN`, `GRU` and `LSTM`: tract's, wrapped when an initial state is missing or the
/// direction is `"reverse"`.
pub(crate) fn rec(ctx: &ParsingContext, node: &NodeProto) -> TractResult<(Box<dyn InferenceOp>, Vec<String>)> {
    let (op, states): (&'static str, &[usize]) = match node.op_type.as_str() {
        "LSTM" => ("LSTM", &[5, 6]),
        "GRU" => ("GRU", &[5]),
        _ => ("RNN", &[5]),
    };
    let label = crate::node::node_label(node);
    let reverse = match node.attribute.iter().find(|a| a.name == "direction").map(|a| a.s.as_slice()) {
        None | Some(b"forward") | Some(b"bidirectional") => false,
        Some(b"reverse") => true,
        Some(other) => {
            let msg = format!(
                "direction is {:?}: it must be forward, reverse or bidirectional",
                String::from_utf8_lossy(other)
            );
            return Err(label.err(msg));
        }
    };
    let stock = crate::ops::stock(op)(ctx, node)?;
    let missing = |i: usize| node.input.get(i).is_none_or(|n| n.is_empty());
    let with_states = if states.iter().any(|&i| missing(i)) {
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
        Some(WithStates { op: crate::ops::stock(op)(ctx, &full)?.0, inputs })
    } else {
        None
    };
    let ours = match LstmOp::plain(node, label.clone()) {
        Some(op) => Some(Ours::Lstm(op)),
        None => GruOp::plain(node, label).map(Ours::Gru),
    };
    if with_states.is_none() && !reverse && ours.is_none() {
        return Ok(stock);
    }
    let batch_first = node.attribute.iter().any(|a| a.name == "layout" && a.i == 1);
    let y_output = node.output.first().is_some_and(|n| !n.is_empty());
    Ok(StockNode::wrap(stock, RecFix { with_states, batch_first, reverse, y_output, ours }, node))
}

/// A view reversing `axis`, as a Slice with step -1 over the whole axis.
fn reversed(target: &mut TypedModel, name: String, node: &str, input: OutletId, axis: i64) -> TractResult<OutletId> {
    use crate::slicing::{Label, SliceStep};
    let slice = crate::semantics::Slice {
        starts: vec![-1],
        ends: vec![i64::MIN],
        axes: Some(vec![axis]),
        steps: Some(vec![-1]),
    };
    let label = Label { node: node.to_string(), op: "reverse".to_string() };
    let op = crate::slicing::ViewOp { chain: vec![(label, SliceStep::Slice(slice))] };
    Ok(target.wire_node(name, op, &[input])?[0])
}

impl Fix for RecFix {
    fn folds(this: &RecNode, _inputs: &[TValue]) -> bool {
        // tract's evaluation runs every node forward: a reverse node is computed in the typed model.
        !this.fix.reverse
    }

    fn to_typed(
        this: &RecNode,
        source: &InferenceModel,
        node: &InferenceNode,
        target: &mut TypedModel,
        mapping: &HashMap<OutletId, OutletId>,
    ) -> TractResult<TVec<OutletId>> {
        let fact = |target: &TypedModel, i: usize| -> TractResult<TypedFact> {
            let outlet = node.inputs.get(i).and_then(|o| mapping.get(o)).context("a recurrent op's input")?;
            Ok(target.outlet_fact(*outlet)?.clone())
        };
        let (x, w, r) = (fact(target, 0)?, fact(target, 1)?, fact(target, 2)?);
        if let Some(op) = &this.fix.ours {
            let inputs: TVec<OutletId> = node.inputs.iter().map(|o| mapping[o]).collect();
            let all_f32 =
                inputs.iter().map(|i| target.outlet_fact(*i)).all(|f| f.is_ok_and(|f| f.datum_type == DatumType::F32));
            if all_f32 && x.rank() == 3 && w.rank() == 3 && r.rank() == 3 && LstmOp::small(&w, &r) {
                return match op {
                    Ours::Lstm(op) => target.wire_node(&node.name, op.clone(), &inputs),
                    Ours::Gru(op) => target.wire_node(&node.name, op.clone(), &inputs),
                };
            }
        }
        if x.rank() != 3 || w.rank() != 3 || r.rank() != 3 {
            if this.fix.reverse {
                let msg = format!("X, W and R must have rank 3, got {}, {} and {}", x.rank(), w.rank(), r.rank());
                return Err(crate::NodeError::invalid(&this.node, &this.op, msg));
            }
            return this.stock.to_typed(source, node, target, mapping);
        }
        let mut node = node.clone();
        let mut mapping = mapping.clone();
        let seq_axis = i64::from(this.fix.batch_first);
        if this.fix.reverse {
            if !w.shape[0].is_one() {
                let msg = format!("direction is reverse: W must have one direction, got {}", w.shape[0]);
                return Err(crate::NodeError::invalid(&this.node, &this.op, msg));
            }
            // X reversed, read from an outlet no node has.
            let x_outlet = mapping[&node.inputs[0]];
            let x_rev = reversed(target, format!("{}.reversed_x", node.name), &this.node, x_outlet, seq_axis)?;
            let placeholder = OutletId::new(usize::MAX - 1, 0);
            mapping.insert(placeholder, x_rev);
            node.inputs[0] = placeholder;
        }
        // X is [seq, batch, input], or [batch, seq, input] with layout=1.
        let batch = x.shape[usize::from(!this.fix.batch_first)].clone();
        let mut outputs = match &this.fix.with_states {
            Some(WithStates { op: with_states, inputs }) if batch.to_usize().is_err() => {
                let (dirs, hidden) = (w.shape[0].clone(), r.shape[2].clone());
                let shape: TVec<TDim> =
                    if this.fix.batch_first { tvec![batch, dirs, hidden] } else { tvec![dirs, batch, hidden] };
                let zero = Tensor::zero_dt(x.datum_type, &[1, 1, 1])?;
                let zero = target.add_const(format!("{}.zero", node.name), zero)?;
                let zeros = target.wire_node(
                    format!("{}.zero_state", node.name),
                    MultiBroadcastTo::new(shape.into()),
                    &[zero],
                )?[0];
                // The node with the states among its inputs, the states read from an outlet no node has.
                let placeholder = OutletId::new(usize::MAX, 0);
                mapping.insert(placeholder, zeros);
                let mut full = node.clone();
                full.inputs = inputs
                    .iter()
                    .map(|i| match i {
                        Some(i) => node.inputs.get(*i).copied().context("a recurrent op's input"),
                        None => Ok(placeholder),
                    })
                    .collect::<TractResult<_>>()?;
                with_states.to_typed(source, &full, target, &mapping)?
            }
            _ => this.stock.to_typed(source, &node, target, &mapping)?,
        };
        if this.fix.reverse && this.fix.y_output {
            // Y is [seq, dirs, batch, hidden], or [batch, seq, dirs, hidden] with layout=1.
            let y = outputs.first().copied().context("a recurrent op's Y output")?;
            outputs[0] = reversed(target, format!("{}.reversed_y", node.name), &this.node, y, seq_axis)?;
        }
        Ok(outputs)
    }
}
