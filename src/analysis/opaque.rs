//! [`Opaque`]: a node whose own rule could not type it, kept so analysis goes on past it.
//!
//! When tract cannot translate a node into its typed form (a rule too weak for symbolic dims, an
//! output size that depends on data), the node becomes an `Opaque`: it runs the original operator as
//! is, and its output facts are what could be learnt (element type, rank, the dims the rules found),
//! with a fresh symbol for every other dim, named after the node. Those symbols are bound from the
//! tensors it produces when the plan runs.

use tract_onnx::prelude::*;
use tract_onnx::tract_core::internal::*;
use tract_onnx::tract_hir::internal::InferenceOp;

/// A node run by its original operator, with output facts decided at analysis.
#[derive(Debug, Clone)]
pub(crate) struct Opaque {
    /// The operator as tract-onnx built it.
    pub op: Box<dyn InferenceOp>,
    /// The node's name, for errors.
    pub node: String,
    /// Its output facts.
    pub facts: TVec<TypedFact>,
    /// Why the node's own rule could not be used.
    pub reason: String,
    /// Whether the node is evaluated only when a plan runs, never out of one (constant folding,
    /// analysis): its output is over the analysis budget (`budget.rs`).
    pub deferred: bool,
}

impl PartialEq for Opaque {
    fn eq(&self, other: &Self) -> bool {
        // Two opaque nodes are the same only if they are one node: operators are not comparable.
        self.node == other.node && self.facts == other.facts
    }
}

impl Eq for Opaque {}

impl Op for Opaque {
    fn name(&self) -> StaticName {
        format!("Opaque({})", self.op.name()).into()
    }

    fn info(&self) -> TractResult<Vec<String>> {
        Ok(vec![self.reason.clone()])
    }

    fn mints_runtime_symbols(&self) -> bool {
        true
    }

    op_as_typed_op!();
}

impl EvalOp for Opaque {
    fn eval_out_of_plan(&self, inputs: TVec<TValue>) -> TractResult<Option<TVec<TValue>>> {
        if self.deferred {
            return Ok(None);
        }
        let outputs = self.op.eval_out_of_plan(inputs)?;
        if let Some(outputs) = &outputs {
            self.check(outputs)?;
        }
        Ok(outputs)
    }

    fn eval(&self, ctx: &EvalContext, inputs: TVec<TValue>) -> TractResult<TVec<TValue>> {
        let outputs = self.op.eval(ctx, inputs)?;
        self.check(&outputs)?;
        Ok(outputs)
    }
}

impl Opaque {
    /// The outputs must have the types and ranks analysis gave them.
    fn check(&self, outputs: &[TValue]) -> TractResult<()> {
        let failed = |message: String| crate::NodeError::failed(&self.node, self.op.name(), message);
        if outputs.len() != self.facts.len() {
            return Err(failed(format!("produced {} outputs, expected {}", outputs.len(), self.facts.len())));
        }
        for (ix, (o, f)) in outputs.iter().zip(&self.facts).enumerate() {
            let same_type = o.datum_type() == f.datum_type
                || (o.datum_type().is_tdim() && f.datum_type == DatumType::I64)
                || (o.datum_type() == DatumType::I64 && f.datum_type.is_tdim());
            if !same_type || o.rank() != f.rank() {
                return Err(failed(format!(
                    "output {ix} is {:?} of rank {}, analysis expected {:?} of rank {}",
                    o.datum_type(),
                    o.rank(),
                    f.datum_type,
                    f.rank()
                )));
            }
            // A deferred node's shape was computed exactly at analysis (dims past 32 bits included,
            // which tract's own evaluation may misread): its output must have it.
            let differs = |(d, n): (&TDim, &usize)| d.as_i64().is_some_and(|v| usize::try_from(v).ok() != Some(*n));
            if self.deferred && f.shape.iter().zip(o.shape()).any(differs) {
                return Err(failed(format!("output {ix} has shape {:?}, analysis expected {:?}", o.shape(), f.shape)));
            }
        }
        Ok(())
    }
}

impl TypedOp for Opaque {
    as_op!();

    fn output_facts(&self, _inputs: &[&TypedFact]) -> TractResult<TVec<TypedFact>> {
        Ok(self.facts.iter().map(|f| f.datum_type.fact(f.shape.clone())).collect())
    }
}
