//! One mechanism for standard ops whose shape parameters are inputs (`Reduce*` axes, `Pad` pads,
//! `Reshape`'s target, `Split`'s sizes, `Tile`'s repeats, ...).
//!
//! A parameter input reaches a node in one of three ways, and each is handled:
//!
//! - **constant**: tract's own op, built with the now-known values (after they are checked here, so a
//!   bad value is our error naming the node, never a panic inside tract);
//! - **computed from shapes** (`Shape → Gather → Concat`, values that are dim expressions): the op's
//!   [`ParamRule`] gives the exact output dims, tract's own op is used if it takes such values, else a
//!   [`ParamOp`] with those dims;
//! - **data** (a graph input, a computed tensor): a [`ParamOp`] whose output dims the rule cannot know
//!   are fresh symbols, minted in the model's own scope and named after the node; they are bound
//!   from the tensors the node produces when the model runs.
//!
//! A [`ParamOp`] evaluates with tract's kernels: the parameter values are read, checked by the rule,
//! and tract's op is built and run with them as constants; the result must have the shape the rule
//! computed.

use std::collections::HashMap;
use tract_onnx::prelude::*;
use tract_onnx::tract_core::dyn_clone;
use tract_onnx::tract_core::internal::*;
use tract_onnx::tract_hir::infer::InferenceOp;
use tract_onnx::tract_hir::internal::*;

pub(crate) use super::stock_node::{Fix, StockNode};

/// What a rule knows of one input: its element type, its shape and, when known, its value.
#[derive(Debug, Clone, Copy)]
pub struct Inlet<'a> {
    /// The element type.
    pub datum_type: DatumType,
    /// The shape.
    pub shape: &'a [TDim],
    /// The value, when known before running (integers may be dim expressions).
    pub value: Option<&'a Tensor>,
}

impl Inlet<'_> {
    /// The value as dims (integers or expressions), when known; an error when it is not integers.
    pub fn dims(&self) -> Result<Option<Vec<TDim>>, String> {
        match self.value {
            None => Ok(None),
            Some(t) => crate::dims::dims_of(t).map(Some).map_err(|e| format!("{e}")),
        }
    }

    /// The value as integers, when known and free of symbols.
    pub fn ints(&self) -> Result<Option<Vec<i64>>, String> {
        Ok(self.dims()?.and_then(|d| d.iter().map(TDim::as_i64).collect()))
    }

    /// The number of values of a scalar (1) or a 1-D input, when its shape says it.
    pub fn len(&self) -> Option<usize> {
        match self.shape {
            [] => Some(1),
            [n] => n.as_i64().and_then(|n| usize::try_from(n).ok()),
            _ => None,
        }
    }

    /// The rank.
    pub fn rank(&self) -> usize {
        self.shape.len()
    }
}

/// One output's shape as a rule knows it: `None` for a dim that depends on values not known yet.
pub(crate) type OutShape = Vec<Option<TDim>>;

/// Why a rule gives no output shapes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    /// A parameter is invalid: the node is wrong.
    Invalid(String),
    /// Even the output ranks depend on values not known yet.
    Unknown(String),
}

impl From<String> for Refusal {
    fn from(message: String) -> Refusal {
        Refusal::Invalid(message)
    }
}

impl From<&str> for Refusal {
    fn from(message: &str) -> Refusal {
        Refusal::Invalid(message.to_string())
    }
}

/// How an op with shape parameters as inputs is typed: its output shapes from its inputs' facts.
pub trait ParamRule: std::fmt::Debug + Send + Sync + dyn_clone::DynClone {
    /// Whether inlet `ix` (as tract numbers them: absent optional inputs skipped) is a shape parameter.
    fn is_param(&self, ix: usize) -> bool;

    /// The output shapes (each output's rank must be known), every dim given where the known
    /// parameters determine it; an error, in words, for a parameter that is invalid. With every
    /// parameter known as integers, every dim must be given.
    fn outputs(&self, inputs: &[Inlet]) -> Result<Vec<OutShape>, Refusal>;

    /// The outputs' element types (by default the first input's, for each output).
    fn datum_types(&self, inputs: &[Inlet], outputs: usize) -> Result<Vec<DatumType>, String> {
        Ok(vec![inputs[0].datum_type; outputs])
    }
}

dyn_clone::clone_trait_object!(ParamRule);

/// tract's op for a node, with its parameters handled by a [`ParamRule`] when tract cannot.
pub(crate) type ParamNode = StockNode<Box<dyn ParamRule>>;

impl ParamNode {
    /// Wraps a stock builder's op.
    pub(crate) fn boxed(
        stock: (Box<dyn InferenceOp>, Vec<String>),
        rule: impl ParamRule + 'static,
        node: &tract_onnx::pb::NodeProto,
    ) -> (Box<dyn InferenceOp>, Vec<String>) {
        StockNode::wrap(stock, Box::new(rule) as Box<dyn ParamRule>, node)
    }

    fn invalid(&self, message: String) -> anyhow::Error {
        crate::NodeError::invalid(&self.node, &self.op, message)
    }

    fn refused(&self, refusal: Refusal) -> anyhow::Error {
        match refusal {
            Refusal::Invalid(m) => crate::NodeError::invalid(&self.node, &self.op, m),
            Refusal::Unknown(m) => crate::NodeError::not_static(&self.node, &self.op, m),
        }
    }
}

fn concrete_inlets<'a>(inputs: &'a [TValue], shapes: &'a [TVec<TDim>]) -> Vec<Inlet<'a>> {
    inputs.iter().zip(shapes).map(|(t, s)| Inlet { datum_type: t.datum_type(), shape: s, value: Some(&**t) }).collect()
}

impl Fix for Box<dyn ParamRule> {
    /// Concrete parameter values are checked before tract's op sees them.
    fn check(this: &ParamNode, inputs: &[TValue]) -> Option<TractResult<()>> {
        let shapes: Vec<TVec<TDim>> =
            inputs.iter().map(|t| t.shape().iter().map(|d| TDim::from(*d)).collect()).collect();
        let inlets = concrete_inlets(inputs, &shapes);
        Some(this.fix.outputs(&inlets).map(|_| ()).map_err(|r| this.refused(r)))
    }

    fn to_typed(
        this: &ParamNode,
        source: &InferenceModel,
        node: &InferenceNode,
        target: &mut TypedModel,
        mapping: &HashMap<OutletId, OutletId>,
    ) -> TractResult<TVec<OutletId>> {
        let (inputs, facts) = crate::node::typed_inputs::typed_inputs(node, target, mapping)?;
        let inlets: Vec<Inlet> = facts
            .iter()
            .map(|f| Inlet { datum_type: f.datum_type, shape: f.shape.dims(), value: f.konst.as_deref() })
            .collect();
        let shapes = this.fix.outputs(&inlets).map_err(|r| this.refused(r))?;
        let exact = shapes.iter().all(|s| s.iter().all(Option::is_some));
        let params_known = (0..inputs.len()).filter(|i| this.fix.is_param(*i)).all(|i| facts[i].konst.is_some());
        // Whether tract refused integer parameters over symbolic dims: the rule's dims then hold
        // only for the dims it needs (a squeezed dim of 1), which the run checks.
        let mut assumed = false;
        if params_known {
            // tract's own op, in a copy of the model. Constant integers over concrete shapes are
            // tract's to type (what it refuses stays refused); when it cannot take symbolic values or
            // symbolic dims (a Squeeze of a dim known only when the model runs, which must then be 1),
            // the rule's exact dims, checked when the node runs.
            let param_values =
                (0..inputs.len()).filter(|i| this.fix.is_param(*i)).any(|i| !matches!(inlets[i].ints(), Ok(Some(_))));
            let dims = (0..inputs.len()).any(|i| !this.fix.is_param(i) && facts[i].shape.as_concrete().is_none());
            let symbolic = param_values || dims;
            let mut attempt = target.clone();
            match this.stock.to_typed(source, node, &mut attempt, mapping) {
                Ok(outlets) => {
                    *target = attempt;
                    return Ok(outlets);
                }
                Err(e) if !exact || !symbolic => return Err(e),
                Err(_) => assumed = !param_values,
            }
        }
        let types = this.fix.datum_types(&inlets, shapes.len()).map_err(|m| this.invalid(m))?;
        let prefix = crate::symbolic::symbol_name(&this.node);
        let mut fresh = false;
        let mut out_facts = tvec![];
        for (slot, (shape, dt)) in shapes.iter().zip(types).enumerate() {
            let dims: TVec<TDim> = shape
                .iter()
                .enumerate()
                .map(|(axis, d)| match d {
                    Some(d) => d.clone().simplify(),
                    None => {
                        fresh = true;
                        let name = if shapes.len() == 1 {
                            format!("{prefix}_{axis}")
                        } else {
                            format!("{prefix}_{slot}_{axis}")
                        };
                        TDim::Sym(target.symbols.new_with_prefix(&name))
                    }
                })
                .collect();
            out_facts.push(dt.fact(&*dims));
        }
        let op = ParamOp {
            stock: this.stock.clone(),
            rule: this.fix.clone(),
            node: this.node.clone(),
            op: this.op.clone(),
            facts: out_facts,
            fresh,
            assumed,
        };
        target.wire_node(&node.name, op, &inputs)
    }
}

/// A node whose parameters are known only when the model runs (or are dim expressions): output facts
/// decided at analysis, evaluated by tract's op built with the parameters' values.
#[derive(Debug, Clone)]
pub(crate) struct ParamOp {
    /// The op tract-onnx built for the node.
    pub stock: Box<dyn InferenceOp>,
    /// The rule for its shape parameters.
    pub rule: Box<dyn ParamRule>,
    /// The node's name, for errors.
    pub node: String,
    /// The ONNX op type.
    pub op: String,
    /// The output facts.
    pub facts: TVec<TypedFact>,
    /// Whether some output dim is a fresh symbol, bound when the node runs.
    pub fresh: bool,
    /// Whether its facts hold only for some values of its input dims (tract refused them
    /// symbolic; the rule's dims need, say, a squeezed dim of 1): a branch that may not be taken
    /// is not typed on such an assumption.
    pub assumed: bool,
}

impl PartialEq for ParamOp {
    fn eq(&self, other: &Self) -> bool {
        // Two nodes are the same only if they are one node: tract's ops are not comparable.
        self.node == other.node && self.facts == other.facts
    }
}

impl Eq for ParamOp {}

impl Op for ParamOp {
    fn name(&self) -> StaticName {
        // Errors from the plan name the node's op as the model does.
        self.op.clone().into()
    }

    fn info(&self) -> TractResult<Vec<String>> {
        Ok(vec![format!("node '{}': parameters read when the node runs", self.node)])
    }

    fn mints_runtime_symbols(&self) -> bool {
        self.fresh
    }

    op_as_typed_op!();
}

impl ParamOp {
    fn invalid(&self, message: impl std::fmt::Display) -> anyhow::Error {
        crate::NodeError::invalid(&self.node, &self.op, message)
    }

    /// Parameters held as dim expressions, evaluated to integers with the symbols bound now.
    fn concrete(&self, symbols: &SymbolValues, inputs: TVec<TValue>) -> TractResult<TVec<TValue>> {
        inputs
            .into_iter()
            .map(|t| {
                if !t.datum_type().is_tdim() {
                    return Ok(t);
                }
                let dims = t.try_as_plain_ram()?.as_slice::<TDim>()?;
                let values: Vec<i64> = dims
                    .iter()
                    .map(|d| {
                        d.eval(symbols).to_i64().map_err(|_| self.invalid(format!("the parameter {d} is not known")))
                    })
                    .collect::<TractResult<_>>()?;
                Ok(Tensor::from_shape(t.shape(), &values)?.into_tvalue())
            })
            .collect()
    }
}

impl EvalOp for ParamOp {
    op_out_of_plan!();

    fn eval(&self, ctx: &EvalContext, inputs: TVec<TValue>) -> TractResult<TVec<TValue>> {
        let inputs = self.concrete(ctx.symbols, inputs)?;
        let shapes: Vec<TVec<TDim>> =
            inputs.iter().map(|t| t.shape().iter().map(|d| TDim::from(*d)).collect()).collect();
        let expected: Vec<Vec<usize>> = {
            let inlets = concrete_inlets(&inputs, &shapes);
            let outs = self.rule.outputs(&inlets).map_err(|r| match r {
                Refusal::Invalid(m) | Refusal::Unknown(m) => self.invalid(m),
            })?;
            outs.iter()
                .map(|s| {
                    s.iter().map(|d| d.as_ref().and_then(TDim::as_i64).and_then(|v| usize::try_from(v).ok())).collect()
                })
                .collect::<Option<_>>()
                .ok_or_else(|| self.invalid("the output shape is not known from the parameters' values"))?
        };
        // tract's allocation aborts the process on failure: sizes are checked first.
        for (shape, fact) in expected.iter().zip(&self.facts) {
            let size = fact.datum_type.size_of();
            let numel = shape.iter().try_fold(1u64, |acc, &d| acc.checked_mul(d as u64));
            let fits = crate::kernel::representable(shape, size)
                && numel.is_some_and(|n| crate::kernel::check_allocation(n, size).is_ok());
            if !fits {
                return Err(self.invalid(format!("an output of shape {shape:?} is too large to allocate")));
            }
        }
        let outputs = crate::guard::guard("evaluating a node", || self.stock.eval(ctx, inputs))?;
        if outputs.len() != self.facts.len() {
            return Err(self.invalid(format!("produced {} outputs, expected {}", outputs.len(), self.facts.len())));
        }
        for (ix, (o, want)) in outputs.iter().zip(&expected).enumerate() {
            if o.shape() != &want[..] {
                return Err(
                    self.invalid(format!("output {ix} has shape {:?}, the parameters give {want:?}", o.shape()))
                );
            }
        }
        Ok(outputs)
    }
}

impl TypedOp for ParamOp {
    as_op!();

    fn output_facts(&self, _inputs: &[&TypedFact]) -> TractResult<TVec<TypedFact>> {
        Ok(self.facts.iter().map(|f| f.datum_type.fact(f.shape.clone())).collect())
    }
}

/// Axis `axis` of a tensor of rank `rank`, counted from the end when negative; an error out of
/// `[-rank, rank)`.
pub(crate) fn normalize_axis(axis: i64, rank: usize) -> Result<usize, String> {
    let r = i64::try_from(rank).map_err(|_| format!("rank {rank} is too large"))?;
    if axis < -r || axis >= r {
        return Err(format!("axis {axis} is out of range for rank {rank}"));
    }
    Ok(if axis < 0 { axis + r } else { axis } as usize)
}

/// Normalized axes (see [`normalize_axis`]), none twice.
pub(crate) fn distinct_axes(axes: &[i64], rank: usize) -> Result<Vec<usize>, String> {
    let mut out = Vec::with_capacity(axes.len());
    for &a in axes {
        let k = normalize_axis(a, rank)?;
        if out.contains(&k) {
            return Err(format!("axis {a} appears twice in {axes:?}"));
        }
        out.push(k);
    }
    Ok(out)
}
