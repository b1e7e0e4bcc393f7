//! Requirements: dims a model needs equal but writes differently.
//!
//! `Concat` needs its inputs' other dims equal, broadcasting ops need each pair of dims equal unless
//! one is 1, `MatMul` needs the inner dims equal, a squeezed axis must be 1. With symbolic dims the
//! model may write the two sides differently: an FPN concatenates an upsampled map of height
//! `2*((H+31)/32)` with a skip map of height `(H+15)/16`, equal only when `H` is a multiple of 32.
//! tract refuses such a node. Here the equality becomes a [`Requirement`] on the inputs, reported to
//! the user, and one side is rewritten to the other through an [`AssumeShape`] node (which checks the
//! equality when the model runs), so the node types and analysis goes on.

use crate::dims::format_dim;
use tract_onnx::prelude::*;
use tract_onnx::tract_core::internal::*;

/// Two dim expressions the model requires equal.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Requirement {
    /// The expression kept.
    pub kept: TDim,
    /// The expression required equal to it.
    pub other: TDim,
    /// The node that requires it.
    pub node: String,
    /// Its op type.
    pub op: String,
}

impl std::fmt::Display for Requirement {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} == {}", format_dim(&self.kept), format_dim(&self.other))
    }
}

/// One input dim to rewrite: `input`'s `axis` becomes `dim`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Rewrite {
    /// The node input.
    pub input: usize,
    /// Its axis.
    pub axis: usize,
    /// The dim it is required to equal.
    pub dim: TDim,
}

/// How an op relates its inputs' dims.
enum Rule {
    /// numpy broadcasting over all inputs.
    Broadcast,
    /// Every dim but `axis` equal (rank from the first input; negative axes count from the end).
    Concat(i64),
    /// Matrix product: inner dims equal, batch dims broadcast.
    MatMul,
    /// Gemm with its transposition flags.
    Gemm(bool, bool),
}

fn rule_of(op_type: &str, attr: &dyn Fn(&str) -> Option<i64>) -> Option<Rule> {
    Some(match op_type {
        "Add" | "Sub" | "Mul" | "Div" | "Pow" | "Mod" | "Where" | "Equal" | "Less" | "Greater" | "LessOrEqual"
        | "GreaterOrEqual" | "And" | "Or" | "Xor" | "BitShift" | "Max" | "Min" | "Sum" | "Mean" | "PRelu"
        | "BitwiseAnd" | "BitwiseOr" | "BitwiseXor" => Rule::Broadcast,
        "Concat" => Rule::Concat(attr("axis").unwrap_or(0)),
        "MatMul" | "MatMulInteger" => Rule::MatMul,
        "Gemm" => Rule::Gemm(attr("transA").unwrap_or(0) != 0, attr("transB").unwrap_or(0) != 0),
        _ => return None,
    })
}

/// How simple a dim reads: fewer symbols, then a shorter expression.
fn complexity(d: &TDim) -> (usize, usize) {
    (d.symbols().len(), format_dim(d).len())
}

/// Picks the simplest of `dims` (the first among equals) and the rewrites of the others to it.
fn unify(dims: &[(usize, usize, TDim)], node: &str, op: &str, out: &mut Vec<Rewrite>, reqs: &mut Vec<Requirement>) {
    let Some(kept) = dims.iter().map(|(_, _, d)| d).min_by_key(|d| complexity(d)).cloned() else { return };
    for (input, axis, d) in dims {
        if *d != kept {
            out.push(Rewrite { input: *input, axis: *axis, dim: kept.clone() });
            let r = Requirement { kept: kept.clone(), other: d.clone(), node: node.to_string(), op: op.to_string() };
            if !reqs.contains(&r) {
                reqs.push(r);
            }
        }
    }
}

/// Whether tract's broadcasting gives a plain dim for these (the `a # b` it cannot simplify means two
/// symbolic dims that are neither equal nor 1).
fn broadcasts_cleanly(dims: &[&TDim]) -> bool {
    let mut acc = TDim::Val(1);
    for d in dims {
        match acc.clone().broadcast((*d).clone()) {
            Ok(b) => acc = b,
            Err(_) => return false,
        }
    }
    !matches!(acc, TDim::Broadcast(_))
}

/// Broadcast `inputs` (right-aligned): for each position whose non-1 dims differ and do not broadcast
/// cleanly, unify them.
fn broadcast(shapes: &[(usize, &[TDim])], node: &str, op: &str, out: &mut Vec<Rewrite>, reqs: &mut Vec<Requirement>) {
    let rank = shapes.iter().map(|(_, s)| s.len()).max().unwrap_or(0);
    for p in 0..rank {
        let mut dims = vec![];
        for (input, shape) in shapes {
            if p < shape.len() {
                let axis = shape.len() - 1 - p;
                let d = &shape[axis];
                if !d.is_one() {
                    dims.push((*input, axis, d.clone()));
                }
            }
        }
        let refs: Vec<&TDim> = dims.iter().map(|(_, _, d)| d).collect();
        if dims.len() > 1 && !broadcasts_cleanly(&refs) {
            // Known values are never rewritten: two different numbers are an error of the model.
            if dims.iter().filter_map(|(_, _, d)| d.as_i64()).collect::<std::collections::HashSet<_>>().len() > 1 {
                continue;
            }
            unify(&dims, node, op, out, reqs);
        }
    }
}

/// The rewrites that make a node's inputs agree, and the requirements they stand for.
pub(super) fn rewrites(
    op_type: &str,
    attr: &dyn Fn(&str) -> Option<i64>,
    facts: &[&TypedFact],
    node: &str,
) -> (Vec<Rewrite>, Vec<Requirement>) {
    let (mut out, mut reqs) = (vec![], vec![]);
    let Some(rule) = rule_of(op_type, attr) else { return (out, reqs) };
    let shapes: Vec<&[TDim]> = facts.iter().map(|f| f.shape.dims()).collect();
    match rule {
        Rule::Broadcast => {
            let all: Vec<(usize, &[TDim])> = shapes.iter().copied().enumerate().collect();
            broadcast(&all, node, op_type, &mut out, &mut reqs);
        }
        Rule::Concat(axis) => {
            let Some(rank) = shapes.first().map(|s| s.len()) else { return (out, reqs) };
            if shapes.iter().any(|s| s.len() != rank) {
                return (out, reqs);
            }
            let axis = if axis < 0 { axis + rank as i64 } else { axis };
            for a in 0..rank {
                if a as i64 == axis {
                    continue;
                }
                let dims: Vec<(usize, usize, TDim)> =
                    shapes.iter().enumerate().map(|(i, s)| (i, a, s[a].clone())).collect();
                let distinct: Vec<&TDim> = dims.iter().map(|(_, _, d)| d).collect();
                if distinct.windows(2).any(|w| w[0] != w[1])
                    && dims.iter().filter(|(_, _, d)| d.as_i64().is_some()).count() <= 1
                {
                    unify(&dims, node, op_type, &mut out, &mut reqs);
                }
            }
        }
        Rule::MatMul | Rule::Gemm(..) => {
            let [a, b] = shapes[..] else { return (out, reqs) };
            let (ta, tb) = match rule {
                Rule::Gemm(ta, tb) => (ta, tb),
                _ => (false, false),
            };
            if a.is_empty() || b.is_empty() {
                return (out, reqs);
            }
            let ka = if a.len() == 1 {
                0
            } else if ta {
                a.len() - 2
            } else {
                a.len() - 1
            };
            let kb = if b.len() == 1 {
                0
            } else if tb {
                b.len() - 1
            } else {
                b.len() - 2
            };
            let (da, db) = (&a[ka], &b[kb]);
            if da != db && (da.as_i64().is_none() || db.as_i64().is_none()) {
                let dims = vec![(0, ka, da.clone()), (1, kb, db.clone())];
                unify(&dims, node, op_type, &mut out, &mut reqs);
            }
            if matches!(rule, Rule::MatMul) && a.len() > 2 && b.len() > 2 {
                let batch = [(0, &a[..a.len() - 2]), (1, &b[..b.len() - 2])];
                broadcast(&batch, node, op_type, &mut out, &mut reqs);
            }
        }
    }
    (out, reqs)
}

/// A value whose shape is known equal to `shape` by a requirement: a no-op that checks it at run time.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct AssumeShape {
    /// The shape the value has when the model's requirements hold.
    pub shape: TVec<TDim>,
    /// The requirement, for the error when it does not hold (empty when the shape is the input's own,
    /// written differently).
    pub requirement: String,
}

impl Op for AssumeShape {
    fn name(&self) -> StaticName {
        "AssumeShape".into()
    }

    fn info(&self) -> TractResult<Vec<String>> {
        Ok(vec![format!("requires {}", self.requirement)])
    }

    op_as_typed_op!();
}

impl EvalOp for AssumeShape {
    fn eval_out_of_plan(&self, inputs: TVec<TValue>) -> TractResult<Option<TVec<TValue>>> {
        self.eval(&EvalContext::out_of_plan(), inputs).map(Some)
    }

    fn eval(&self, ctx: &EvalContext, inputs: TVec<TValue>) -> TractResult<TVec<TValue>> {
        let input = args_1!(inputs);
        let agrees = input.rank() == self.shape.len()
            && self
                .shape
                .iter()
                .zip(input.shape())
                .all(|(d, &n)| d.eval(ctx.symbols).to_i64().map_or(true, |v| v == n as i64));
        ensure!(
            agrees,
            "the model requires {}, which does not hold for an input of shape {:?}",
            if self.requirement.is_empty() { format!("shape {:?}", self.shape) } else { self.requirement.clone() },
            input.shape()
        );
        Ok(tvec!(input))
    }

    fn forwards_input(&self) -> Option<usize> {
        Some(0)
    }
}

impl TypedOp for AssumeShape {
    as_op!();

    fn output_facts(&self, inputs: &[&TypedFact]) -> TractResult<TVec<TypedFact>> {
        let mut fact = inputs[0].datum_type.fact(&*self.shape);
        fact.konst = inputs[0].konst.clone();
        Ok(tvec!(fact))
    }

    fn declutter(&self, model: &TypedModel, node: &TypedNode) -> TractResult<Option<TypedModelPatch>> {
        if model.outlet_fact(node.inputs[0])?.shape.dims() == &*self.shape {
            return TypedModelPatch::shunt_one_op(model, node);
        }
        Ok(None)
    }
}
