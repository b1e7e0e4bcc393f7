//! [`Expanded`]: the one tract [`Expansion`] of every op of `ops` (the standard ops we add or replace).
//!
//! An op gives its data, its inference rules (a [`Rules`] function) and how it is wired into a typed
//! model (a [`Wire`] function; [`as_is`] for an op that is its own typed op). The arity checks are
//! the wrapper's, so each rules function states only what its op says of the outputs.

use tract_onnx::prelude::*;
use tract_onnx::tract_hir::internal::*;

/// An op's inference rules: what its outputs' facts are, given its inputs'. (One lifetime for all:
/// tract's `'p: 'r, 's: 'r` bounds cannot be written on a function pointer, and every reference
/// lives at least as long as the solver.)
pub(crate) type Rules<T> = for<'r> fn(&'r T, &mut Solver<'r>, Io<'r>) -> InferenceResult;

/// The proxies of a node's inputs and outputs, as its rules see them.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Io<'r> {
    /// The inputs'.
    pub inputs: &'r [TensorProxy],
    /// The outputs'.
    pub outputs: &'r [TensorProxy],
}

/// How an op is wired into a typed model: `(op, prefix, model, inputs) -> outputs`.
pub(crate) type Wire<T> = fn(&T, &str, &mut TypedModel, &[OutletId]) -> TractResult<TVec<OutletId>>;

/// An op's data with its name, arity, rules and wiring, as a tract [`Expansion`].
#[derive(Debug, Clone)]
pub(crate) struct Expanded<T> {
    /// The op's name, as tract shows it.
    pub name: &'static str,
    /// The op's data.
    pub op: T,
    /// The number of inputs (checked before the rules run).
    pub inputs: usize,
    /// The number of outputs.
    pub outputs: usize,
    /// The inference rules.
    pub rules: Rules<T>,
    /// The wiring into a typed model.
    pub wire: Wire<T>,
    /// Whether the op is a function of its inputs (false for the random ops: never evaluated out of
    /// a plan, so never folded into a constant).
    pub pure: bool,
}

impl<T: std::fmt::Debug + Clone + Send + Sync + 'static> Expanded<T> {
    /// `op` named `name`, with `inputs` inputs and one output.
    pub(crate) fn new(name: &'static str, op: T, inputs: usize, rules: Rules<T>, wire: Wire<T>) -> Self {
        Expanded { name, op, inputs, outputs: 1, rules, wire, pure: true }
    }

    /// The same with `outputs` outputs.
    pub(crate) fn with_outputs(self, outputs: usize) -> Self {
        Expanded { outputs, ..self }
    }

    /// The same, drawing random numbers: tract never evaluates it out of a plan.
    pub(crate) fn impure(self) -> Self {
        Expanded { pure: false, ..self }
    }

    /// As a builder returns it: the inference op and no closures.
    pub(crate) fn built(self) -> TractResult<(Box<dyn InferenceOp>, Vec<String>)> {
        Ok((expand(self), vec![]))
    }
}

impl<T: std::fmt::Debug + Clone + Send + Sync + 'static> Expansion for Expanded<T> {
    fn name(&self) -> StaticName {
        self.name.into()
    }

    fn nboutputs(&self) -> TractResult<usize> {
        Ok(self.outputs)
    }

    fn validation(&self) -> Validation {
        if self.pure {
            Validation::Accurate
        } else {
            Validation::Random
        }
    }

    fn runs_out_of_plan(&self) -> bool {
        self.pure
    }

    fn rules<'r, 'p: 'r, 's: 'r>(
        &'s self,
        s: &mut Solver<'r>,
        inputs: &'p [TensorProxy],
        outputs: &'p [TensorProxy],
    ) -> InferenceResult {
        check_input_arity(inputs, self.inputs)?;
        check_output_arity(outputs, self.outputs)?;
        (self.rules)(&self.op, s, Io { inputs, outputs })
    }

    fn wire(&self, prefix: &str, model: &mut TypedModel, inputs: &[OutletId]) -> TractResult<TVec<OutletId>> {
        (self.wire)(&self.op, prefix, model, inputs)
    }
}

/// The [`Wire`] of an op that is its own typed op: one node.
pub(crate) fn as_is<T: TypedOp + Clone>(
    op: &T,
    prefix: &str,
    model: &mut TypedModel,
    inputs: &[OutletId],
) -> TractResult<TVec<OutletId>> {
    model.wire_node(prefix, op.clone(), inputs)
}
