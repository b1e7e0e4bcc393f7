//! The multiply-add rule of each op: how many arithmetic operations a node does, from its shapes and
//! attributes.
//!
//! We count as onnx-tool's `model_profile` does, so the two can be compared node by node: a
//! contraction (Conv, Gemm, MatMul, Einsum, attention, recurrent cells) counts one per multiply-add,
//! every other operation is weighted by what it costs a vector unit against an add ([`ADD`] = 1,
//! [`DIV`] = 4, [`SQRT`] = 24, [`EXP`] = 32, ...; onnx-tool's table). Where onnx-tool's count departs
//! from its own convention (ConvTranspose over the output instead of the input, Tanh counted twice,
//! Erf as 0, ...) we follow the convention, and the difference is listed in docs/cost.md.
//! An op that moves data without arithmetic (Reshape, Gather, Concat, our slicing ops) counts 0; an
//! op whose work depends on the data (TopK, NonMaxSuppression, Unique) or on a subgraph (If, Loop,
//! Scan) has no rule: it is listed, never counted as 0.

mod contract;
mod elementwise;
mod recurrent;
mod window;

use super::poly::Poly;
use crate::node::attrs;
use crate::node::Label;
use tract_onnx::pb::NodeProto;
use tract_onnx::prelude::*;

/// An add, a subtraction, a compare, a multiply: the unit.
pub(crate) const ADD: i128 = 1;
/// A multiply.
pub(crate) const MUL: i128 = 1;
/// A compare (max, min, abs, a comparison op).
pub(crate) const CMP: i128 = 1;
/// A division (a reciprocal estimate and a refinement).
pub(crate) const DIV: i128 = 4;
/// A square root.
pub(crate) const SQRT: i128 = 24;
/// An exponential (and a power, its cost).
pub(crate) const EXP: i128 = 32;
/// A logarithm.
pub(crate) const LOG: i128 = 43;
/// A sine or a cosine.
pub(crate) const SIN: i128 = 39;
/// `tanh(x) = (e^2x - 1) / (e^2x + 1)`.
pub(crate) const TANH: i128 = EXP + 2 * ADD + DIV;

/// What a node's rule gives.
#[derive(Debug, Clone, PartialEq)]
pub enum Macs {
    /// The count, exact over the model's dims.
    Counted(Poly),
    /// No rule for this op; why.
    NoRule(String),
    /// The rule needs a size the analysis could not know; which.
    Unknown(String),
}

/// A node with the shapes of its inputs and outputs (`None`: an absent optional input, or a value
/// the analysis could not type).
pub(crate) struct Ctx<'a> {
    /// The node.
    pub(crate) node: &'a NodeProto,
    /// Its label, for errors.
    pub(crate) label: Label,
    /// Input shapes, in input order.
    pub(crate) inputs: Vec<Option<Vec<TDim>>>,
    /// Output shapes, in output order.
    pub(crate) outputs: Vec<Option<Vec<TDim>>>,
}

/// A size a rule needed and could not have.
pub(crate) struct Missing(String);

impl From<crate::cost::CostError> for RuleError {
    fn from(e: crate::cost::CostError) -> RuleError {
        RuleError::Fatal(anyhow::anyhow!(e))
    }
}

impl From<TractError> for RuleError {
    fn from(e: TractError) -> RuleError {
        RuleError::Fatal(e)
    }
}

impl From<Missing> for RuleError {
    fn from(m: Missing) -> RuleError {
        RuleError::Missing(m.0)
    }
}

/// Why a rule gave no count: a size it needs is unknown, or the node itself is wrong.
pub(crate) enum RuleError {
    Missing(String),
    Fatal(anyhow::Error),
}

pub(crate) type RuleResult = Result<Poly, RuleError>;

impl Ctx<'_> {
    /// The shape of input `i`, which the rule needs.
    pub(crate) fn input(&self, i: usize) -> Result<&[TDim], Missing> {
        match self.inputs.get(i) {
            Some(Some(s)) => Ok(s),
            _ => Err(Missing(format!("the shape of input {i} ('{}')", self.node.input.get(i).map_or("", |s| s)))),
        }
    }

    /// Whether input `i` is given (a non-empty name).
    pub(crate) fn has_input(&self, i: usize) -> bool {
        self.node.input.get(i).is_some_and(|n| !n.is_empty())
    }

    /// The shape of output `i`, which the rule needs.
    pub(crate) fn output(&self, i: usize) -> Result<&[TDim], Missing> {
        match self.outputs.get(i) {
            Some(Some(s)) => Ok(s),
            _ => Err(Missing(format!("the shape of output {i} ('{}')", self.node.output.get(i).map_or("", |s| s)))),
        }
    }

    /// The element count of input `i`.
    pub(crate) fn input_volume(&self, i: usize) -> RuleResult {
        Ok(Poly::volume(self.input(i)?)?)
    }

    /// The element count of output `i`.
    pub(crate) fn output_volume(&self, i: usize) -> RuleResult {
        Ok(Poly::volume(self.output(i)?)?)
    }

    /// An int attribute.
    pub(crate) fn int(&self, name: &str) -> Result<Option<i64>, RuleError> {
        Ok(attrs::int(&self.label, self.node, name)?)
    }

    /// An ints attribute.
    pub(crate) fn ints(&self, name: &str) -> Result<Option<Vec<i64>>, RuleError> {
        Ok(attrs::ints(&self.label, self.node, name)?)
    }

    /// A string attribute.
    pub(crate) fn string(&self, name: &str) -> Result<Option<String>, RuleError> {
        Ok(attrs::string(&self.label, self.node, name)?)
    }

    /// An error about this node.
    pub(crate) fn bad(&self, what: impl std::fmt::Display) -> RuleError {
        RuleError::Fatal(self.label.err(what.to_string()))
    }
}

/// `a * b`, checked.
pub(crate) fn times(a: &Poly, b: &Poly) -> RuleResult {
    Ok(a.mul(b)?)
}

/// `p * k`, checked.
pub(crate) fn scaled(p: &Poly, k: i128) -> RuleResult {
    Ok(p.scale(k)?)
}

/// `a + b`, checked.
pub(crate) fn plus(a: &Poly, b: &Poly) -> RuleResult {
    Ok(a.add(b)?)
}

/// The product of some dims.
pub(crate) fn product(dims: &[TDim]) -> RuleResult {
    Ok(Poly::volume(dims)?)
}

/// The multiply-adds of a node.
pub(crate) fn macs(ctx: &Ctx) -> anyhow::Result<Macs> {
    let node = ctx.node;
    let standard = node.domain.is_empty() || node.domain == "ai.onnx";
    let result = if standard {
        standard_rule(ctx)
    } else if node.domain == crate::slicing::DOMAIN
        && matches!(node.op_type.as_str(), "StridedSlice" | "Slice" | "AsStrided")
    {
        Some(Ok(Poly::zero()))
    } else {
        return Ok(Macs::NoRule(format!("no cost rule for ops of domain '{}'", node.domain)));
    };
    match result {
        None => Ok(Macs::NoRule(no_rule_reason(&node.op_type))),
        Some(Ok(p)) => Ok(Macs::Counted(p)),
        Some(Err(RuleError::Missing(what))) => Ok(Macs::Unknown(what)),
        Some(Err(RuleError::Fatal(e))) => Err(e),
    }
}

/// Why an op has no rule.
fn no_rule_reason(op: &str) -> String {
    match op {
        "If" | "Loop" | "Scan" | "SequenceMap" => format!("{op}: the work of its subgraph is not counted"),
        "TopK" | "NonMaxSuppression" | "Unique" | "RoiAlign" | "MaxRoiPool" => {
            format!("{op}: its work depends on the values of its inputs")
        }
        _ => format!("no cost rule for {op}"),
    }
}

/// The rule of a standard op, `None` where there is none.
fn standard_rule(ctx: &Ctx) -> Option<RuleResult> {
    let op = ctx.node.op_type.as_str();
    if elementwise::MOVES_DATA.contains(&op) {
        return Some(Ok(Poly::zero()));
    }
    elementwise::rule(ctx, op)
        .or_else(|| contract::rule(ctx, op))
        .or_else(|| window::rule(ctx, op))
        .or_else(|| recurrent::rule(ctx, op))
}
