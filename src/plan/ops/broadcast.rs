//! [`BroadcastBin`]: `Add`, `Sub`, `Mul` and `Div` of two float32 tensors that broadcast, in place of
//! tract's generic binary op.
//!
//! tract's optimizer turns most binary ops into its fast forms (by a scalar, or over equal shapes);
//! what is left, two tensors broadcasting against each other (a rotary embedding's `x * cos` with
//! `cos` shared by every head), runs through ndarray's broadcasting iterator, element by element:
//! about 2 µs for a few hundred values, the largest op of a Llama export. Here the output is walked
//! as runs of its trailing axes over which neither input broadcasts, each run a plain loop the
//! compiler vectorizes, the inputs' offsets for the axes before it stepped by their strides (0 where
//! they broadcast). The arithmetic is the same operation on the same pairs, so the same bits.

use tract_onnx::prelude::*;
use tract_onnx::tract_core::internal::*;
use tract_onnx::tract_core::ops::binary::TypedBinOp;

use crate::kernel::check_allocation;

/// The shortest run worth a loop: shorter ones would cost more in stepping than they save.
const MIN_RUN: usize = 4;

/// Which operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Arith {
    Add,
    Sub,
    Mul,
    Div,
}

/// tract's binary op, run by our loops on broadcasting float32 operands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct BroadcastBin {
    /// tract's op: its facts, and its evaluation for anything else.
    pub stock: TypedBinOp,
    arith: Arith,
}

impl BroadcastBin {
    /// Our op in place of `stock`, when it is one of the four operations on float32.
    pub(crate) fn replacing(stock: &TypedBinOp, a: &TypedFact, b: &TypedFact) -> Option<BroadcastBin> {
        let arith = match stock.0.name() {
            "Add" => Arith::Add,
            "Sub" => Arith::Sub,
            "Mul" => Arith::Mul,
            "Div" => Arith::Div,
            _ => return None,
        };
        let f32s = a.datum_type == DatumType::F32 && b.datum_type == DatumType::F32 && stock.1.is_none();
        if !f32s || a.rank() != b.rank() || a.shape == b.shape {
            return None;
        }
        // Known shapes whose runs would be too short stay tract's (unknown ones decide when run).
        if let (Some(sa), Some(sb)) = (a.shape.as_concrete(), b.shape.as_concrete()) {
            Plan::of(sa, sb).filter(|p| p.run >= MIN_RUN)?;
        }
        Some(BroadcastBin { stock: stock.clone(), arith })
    }
}

impl Op for BroadcastBin {
    fn name(&self) -> StaticName {
        "BroadcastBin".into()
    }

    op_as_typed_op!();
}

impl TypedOp for BroadcastBin {
    fn output_facts(&self, inputs: &[&TypedFact]) -> TractResult<TVec<TypedFact>> {
        self.stock.output_facts(inputs)
    }

    as_op!();
}

impl EvalOp for BroadcastBin {
    op_out_of_plan!();

    fn eval(&self, ctx: &EvalContext, inputs: TVec<TValue>) -> TractResult<TVec<TValue>> {
        let (a, b) = (&inputs[0], &inputs[1]);
        let f32s = a.datum_type() == DatumType::F32 && b.datum_type() == DatumType::F32;
        if !f32s || a.rank() != b.rank() || a.shape() == b.shape() {
            return self.stock.eval(ctx, inputs);
        }
        let Some(plan) = Plan::of(a.shape(), b.shape()).filter(|p| p.run >= MIN_RUN) else {
            return self.stock.eval(ctx, inputs);
        };
        let numel = plan.out_shape.iter().try_fold(1u64, |n, &d| n.checked_mul(d as u64));
        check_allocation(numel.unwrap_or(u64::MAX), 4).map_err(|e| anyhow!("{}: {e}", self.stock.name()))?;
        let (xa, xb) = (a.try_as_plain_ram()?, b.try_as_plain_ram()?);
        let (xa, xb) = (xa.as_slice::<f32>()?, xb.as_slice::<f32>()?);
        let mut out = vec![0f32; plan.out_shape.iter().product()];
        let op = self.arith;
        let run = plan.run;
        if run > 0 {
            for (chunk, (oa, ob)) in out.chunks_exact_mut(run).zip(plan.offsets()) {
                apply(op, chunk, &xa[oa..oa + run], &xb[ob..ob + run]);
            }
        }
        let t = tract_ndarray::ArrayD::from_shape_vec(&*plan.out_shape, out)?.into_tensor();
        Ok(tvec!(t.into_tvalue()))
    }
}

/// `out = a op b`, element by element.
fn apply(op: Arith, out: &mut [f32], a: &[f32], b: &[f32]) {
    let pairs = out.iter_mut().zip(a.iter().zip(b));
    match op {
        Arith::Add => pairs.for_each(|(o, (x, y))| *o = x + y),
        Arith::Sub => pairs.for_each(|(o, (x, y))| *o = x - y),
        Arith::Mul => pairs.for_each(|(o, (x, y))| *o = x * y),
        Arith::Div => pairs.for_each(|(o, (x, y))| *o = x / y),
    }
}

/// How the output is walked: runs of its trailing axes, and the inputs' strides for the others
/// (also [`super::ExactDiv`]'s walk).
pub(crate) struct Plan {
    /// The output's shape.
    pub(crate) out_shape: Vec<usize>,
    /// The length of a run (the product of the trailing axes neither input broadcasts).
    pub(crate) run: usize,
    /// The outer axes: their lengths and each input's stride (0 where it broadcasts).
    outer: Vec<(usize, usize, usize)>,
}

impl Plan {
    /// The plan for inputs of shapes `a` and `b` (one rank), if they broadcast.
    pub(crate) fn of(a: &[usize], b: &[usize]) -> Option<Plan> {
        let out_shape: Vec<usize> = a
            .iter()
            .zip(b)
            .map(|(&x, &y)| match (x, y) {
                _ if x == y => Some(x),
                (1, y) => Some(y),
                (x, 1) => Some(x),
                _ => None,
            })
            .collect::<Option<_>>()?;
        // Trailing axes where both inputs have the output's dim form the run.
        let split = (0..out_shape.len()).rev().find(|&i| a[i] != b[i]).map_or(0, |i| i + 1);
        let run: usize = out_shape[split..].iter().product();
        let strides = |shape: &[usize]| -> Vec<usize> {
            let mut s = vec![0; shape.len()];
            let mut acc = 1;
            for i in (0..shape.len()).rev() {
                s[i] = if shape[i] == 1 { 0 } else { acc };
                acc *= shape[i];
            }
            s
        };
        let (sa, sb) = (strides(a), strides(b));
        let outer = (0..split).map(|i| (out_shape[i], sa[i], sb[i])).collect();
        Some(Plan { out_shape, run, outer })
    }

    /// The number of values of the output.
    pub(crate) fn len(&self) -> usize {
        self.out_shape.iter().product()
    }

    /// The inputs' offsets of each run, in output order.
    pub(crate) fn offsets(&self) -> impl Iterator<Item = (usize, usize)> + '_ {
        let count: usize = self.outer.iter().map(|&(n, _, _)| n).product();
        let mut index = vec![0usize; self.outer.len()];
        let (mut oa, mut ob) = (0usize, 0usize);
        (0..count).map(move |k| {
            if k > 0 {
                // Step the last outer axis, carrying into the ones before.
                for axis in (0..index.len()).rev() {
                    let (n, sa, sb) = self.outer[axis];
                    index[axis] += 1;
                    oa += sa;
                    ob += sb;
                    if index[axis] < n {
                        break;
                    }
                    index[axis] = 0;
                    oa -= sa * n;
                    ob -= sb * n;
                }
            }
            (oa, ob)
        })
    }
}
