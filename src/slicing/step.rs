//! A slicing op with every parameter known ([`SliceStep`]), and chains of them resolved into views.
//!
//! A chain is what a run of consecutive slicing nodes becomes after declutter. It is resolved against a
//! shape: symbolically for facts ([`chain_output_shape`]), concretely to execute ([`chain_views`]),
//! where consecutive steps compose into one view, so the chain costs one copy.

use super::patterns::{AffineGather, AxisChange};
use crate::error::{SliceError, SliceResult};
use crate::semantics::{AsStrided, Slice, StridedSlice};
use crate::view::{Dim, Resolved, View};

pub(crate) use crate::node::Label;
use tract_onnx::prelude::*;
use tract_onnx::tract_core::ops::change_axes::AxisOp;

/// A slicing op with its parameters known.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) enum SliceStep {
    /// TF / MindSpore / MXNet StridedSlice.
    Strided(StridedSlice),
    /// ONNX or Paddle Slice.
    Slice(Slice),
    /// Ascend / torch AsStrided.
    AsStrided(AsStrided),
    /// One of tract's axis changes (Squeeze, Unsqueeze, Reshape, a moved axis).
    Axis(AxisChange),
    /// A Gather by a constant affine index table.
    Gather(AffineGather),
}

impl SliceStep {
    /// The chain step a typed op of tract's is, if it is a view we can absorb: an axis change, or a
    /// Slice with known bounds.
    pub(crate) fn of_typed(node: &TypedNode) -> Option<SliceStep> {
        if let Some(op) = node.op_as::<AxisOp>() {
            return AxisChange::from_axis_op(op).map(SliceStep::Axis);
        }
        if let Some(op) = node.op_as::<tract_onnx::tract_core::ops::array::Slice>() {
            let (start, end) = (op.start.as_i64()?, op.end.as_i64()?);
            let slice = Slice { starts: vec![start], ends: vec![end], axes: Some(vec![op.axis as i64]), steps: None };
            return Some(SliceStep::Slice(slice));
        }
        None
    }

    /// Resolves against an input shape.
    pub(crate) fn resolve<D: Dim>(&self, shape: &[D]) -> SliceResult<Resolved<D>> {
        Ok(match self {
            SliceStep::Strided(s) => Resolved::Select(s.resolve(shape)?),
            SliceStep::Slice(s) => Resolved::Select(s.resolve(shape)?),
            SliceStep::AsStrided(s) => Resolved::Flat(s.resolve(shape)?),
            SliceStep::Axis(a) => a.resolve(shape)?,
            SliceStep::Gather(g) => g.resolve(shape)?,
        })
    }
}

/// A chain of steps, each with the node it came from.
pub(crate) type Chain = Vec<(Label, SliceStep)>;

/// The output shape of a chain over `shape`, as exact expressions.
///
/// Shapes are memoized per thread by step and input shape: tract's solver applies a node's rules
/// several times with the same facts, and building symbolic expressions is the costly part of
/// inference on large graphs. A result never depends on assumptions (it is exact for every value of the
/// symbols; assumptions only simplify it when reported), so the memo is never stale. The key holds the
/// symbols' scope: tract compares symbols by name index only, so two models' `N` would collide.
pub(super) fn chain_output_shape(chain: &Chain, shape: &[TDim]) -> TractResult<Vec<TDim>> {
    use std::cell::RefCell;
    use std::collections::HashMap;
    type Memo = HashMap<(Option<usize>, SliceStep, Vec<TDim>), Vec<TDim>>;
    thread_local! {
        static MEMO: RefCell<Memo> = RefCell::new(HashMap::new());
    }
    const MEMO_LIMIT: usize = 1 << 16;
    let mut shape = shape.to_vec();
    for (label, step) in chain {
        let scope = shape.iter().find_map(TDim::find_scope).map(|s| s.id());
        let key = (scope, step.clone(), shape);
        if let Some(out) = MEMO.with(|m| m.borrow().get(&key).cloned()) {
            shape = out;
            continue;
        }
        let out: Vec<TDim> = step.resolve(&key.2).map_err(|e| label.err(e))?.output_shape();
        MEMO.with(|m| {
            let mut m = m.borrow_mut();
            if m.len() >= MEMO_LIMIT {
                m.clear();
            }
            m.insert(key, out.clone());
        });
        shape = out;
    }
    Ok(shape)
}

/// The views that execute a chain over a tensor of `shape`, one after the other: a single view
/// unless a flat step cannot be folded into the view before it.
pub(super) fn chain_views(chain: &Chain, shape: &[usize]) -> TractResult<Vec<View<i64>>> {
    let shape: Vec<i64> = shape
        .iter()
        .map(|&d| i64::try_from(d).map_err(|_| SliceError::Overflow { what: "dim" }))
        .collect::<SliceResult<_>>()?;
    compose_chain(chain, &shape)
}

/// [`chain_views`] over any dims: concrete to execute, symbolic to decide things before running.
pub(crate) fn compose_chain<D: Dim>(chain: &Chain, shape: &[D]) -> TractResult<Vec<View<D>>> {
    let mut shape = shape.to_vec();
    let mut views = vec![];
    let mut current = View::identity(&shape)?;
    for (label, step) in chain {
        let resolved = step.resolve(&shape).map_err(|e| label.err(e))?;
        shape = resolved.output_shape();
        match resolved {
            Resolved::Select(sel) => current = current.select(&sel).map_err(|e| label.err(e))?,
            Resolved::Flat(flat) => match current.then(&flat) {
                Some(c) => current = c,
                None => views.push(std::mem::replace(&mut current, flat)),
            },
        }
    }
    views.push(current);
    Ok(views)
}

/// Executes a chain on a tensor: one copy (or none when the chain is the identity).
pub(super) fn run_chain(chain: &Chain, input: TValue) -> TractResult<TValue> {
    let views = chain_views(chain, input.shape())?;
    let label = chain.last().map(|(l, _)| l.clone());
    let err = |e: SliceError| match &label {
        Some(l) => l.err(e),
        None => anyhow::anyhow!("{e}"),
    };
    let mut value = input;
    for view in views {
        let shape: Vec<i64> = value.shape().iter().map(|&d| d as i64).collect();
        if view.is_identity_of(&shape) {
            continue;
        }
        value = crate::kernel::execute(&value, &view).map_err(err)?.into_tvalue();
    }
    Ok(value)
}
