//! [`StockNode`]: tract-onnx's own op for a node, with our typing in front of it.
//!
//! Analysis (`infer_facts`, the number of outputs) and evaluation are tract's op's; a [`Fix`] decides
//! what the node becomes in the typed model (tract's own typing when it can, our op otherwise) and may
//! check concrete inputs before tract's op evaluates them.

use std::collections::HashMap;
use tract_onnx::prelude::*;
use tract_onnx::tract_core::internal::*;
use tract_onnx::tract_hir::infer::InferenceOp;
use tract_onnx::tract_hir::internal::*;

/// What a [`StockNode`] does in front of tract's op.
pub(crate) trait Fix: std::fmt::Debug + Clone + Send + Sync + 'static {
    /// Checks concrete inputs before tract's op evaluates them. `None` (the default): no check, and
    /// tract's evaluation runs as it is; `Some`: the check's result, and tract's evaluation runs under
    /// [`crate::guard`].
    fn check(_this: &StockNode<Self>, _inputs: &[TValue]) -> Option<TractResult<()>> {
        None
    }

    /// Whether tract's op may evaluate the node out of a plan on these inputs (when analysis folds
    /// constants); `false` leaves the node to the typed model (`true` by default).
    fn folds(_this: &StockNode<Self>, _inputs: &[TValue]) -> bool {
        true
    }

    /// The node in the typed model (`inode` of `source`, its inputs mapped to `target` by `mapping`).
    fn to_typed(
        this: &StockNode<Self>,
        source: &InferenceModel,
        inode: &InferenceNode,
        target: &mut TypedModel,
        mapping: &HashMap<OutletId, OutletId>,
    ) -> TractResult<TVec<OutletId>>;
}

/// tract's op for a node, with a [`Fix`].
#[derive(Debug, Clone)]
pub(crate) struct StockNode<F> {
    /// The op tract-onnx (or an earlier replacement) built.
    pub stock: Box<dyn InferenceOp>,
    /// What we do in front of it.
    pub fix: F,
    /// The node's name, for errors.
    pub node: String,
    /// The ONNX op type.
    pub op: String,
}

impl<F> PartialEq for StockNode<F> {
    fn eq(&self, other: &Self) -> bool {
        self.node == other.node && self.op == other.op
    }
}

impl<F> Eq for StockNode<F> {}

impl<F: Fix> StockNode<F> {
    /// tract's op (and closures) from a stock builder, with `fix`, as a builder returns it.
    pub(crate) fn wrap(
        stock: (Box<dyn InferenceOp>, Vec<String>),
        fix: F,
        node: &tract_onnx::pb::NodeProto,
    ) -> (Box<dyn InferenceOp>, Vec<String>) {
        let op = StockNode { stock: stock.0, fix, node: crate::node::node_label(node).node, op: node.op_type.clone() };
        (Box::new(op), stock.1)
    }
}

impl<F: Fix> Op for StockNode<F> {
    fn name(&self) -> StaticName {
        self.stock.name()
    }

    not_a_typed_op!();
}

impl<F: Fix> EvalOp for StockNode<F> {
    fn eval_out_of_plan(&self, inputs: TVec<TValue>) -> TractResult<Option<TVec<TValue>>> {
        if !F::folds(self, &inputs) {
            return Ok(None);
        }
        match F::check(self, &inputs) {
            None => self.stock.eval_out_of_plan(inputs),
            Some(checked) => {
                checked?;
                crate::guard::guard("evaluating a node", || self.stock.eval_out_of_plan(inputs))
            }
        }
    }

    fn eval(&self, ctx: &EvalContext, inputs: TVec<TValue>) -> TractResult<TVec<TValue>> {
        match F::check(self, &inputs) {
            None => self.stock.eval(ctx, inputs),
            Some(checked) => {
                checked?;
                crate::guard::guard("evaluating a node", || self.stock.eval(ctx, inputs))
            }
        }
    }
}

impl<F: Fix> InferenceOp for StockNode<F> {
    fn infer_facts(
        &mut self,
        inputs: TVec<&InferenceFact>,
        outputs: TVec<&InferenceFact>,
        observed: TVec<&InferenceFact>,
    ) -> TractResult<(TVec<InferenceFact>, TVec<InferenceFact>, TVec<InferenceFact>)> {
        self.stock.infer_facts(inputs, outputs, observed)
    }

    fn nboutputs(&self) -> TractResult<usize> {
        self.stock.nboutputs()
    }

    fn to_typed(
        &self,
        source: &InferenceModel,
        node: &InferenceNode,
        target: &mut TypedModel,
        mapping: &HashMap<OutletId, OutletId>,
    ) -> TractResult<TVec<OutletId>> {
        F::to_typed(self, source, node, target, mapping)
    }

    as_op!();
}
