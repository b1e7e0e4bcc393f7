//! `Pad` with `mode="wrap"` (opset 19), which tract-onnx refuses: the data repeated around itself,
//! as if each padded axis were a ring. The element at output position `i` of an axis of `n`
//! elements padded by `before` is the input's at `(i - before) mod n`, so pads longer than the axis
//! go round it more than once (as numpy's `wrap` mode).
//!
//! [`wrap_pad`] is the inference op the Pad builder puts in [`crate::ops::params`]' hands in place of
//! tract's: its rules give the output dims when the pads are known, and it wires a [`WrapPad`] with
//! the pads as dims (numbers, or expressions of symbols valued when the model runs). Pads and axes
//! known only at run time are the parameter mechanism's, which checks them (no negative pad, no pad
//! of an empty axis) with [`crate::ops::array::pad::params::PadRule`].

use crate::node::expanded::{Expanded, Io};
use crate::node::Label;
use crate::ops::array::elements::{check_output, gather_flat, strides};
use tract_onnx::prelude::*;
use tract_onnx::tract_core::internal::*;
use tract_onnx::tract_hir::internal::*;

/// The inference op of a wrap-mode Pad with `inputs` inputs, `axes` at inlet `axes` when given.
pub(crate) fn wrap_pad(label: Label, inputs: usize, axes: Option<usize>) -> Box<dyn InferenceOp> {
    let spec = WrapSpec { label, axes };
    Expanded::new("Pad", spec, inputs, rules, wire).built().expect("an op without checks").0
}

/// A wrap-mode Pad as the model gives it.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct WrapSpec {
    label: Label,
    /// The inlet of `axes`, when the node has it.
    axes: Option<usize>,
}

impl WrapSpec {
    /// `(before, after)` for every axis of a tensor of rank `rank`, from pads and axes as dims.
    fn pads(&self, rank: usize, pads: &[TDim], axes: Option<&[TDim]>) -> TractResult<Vec<(TDim, TDim)>> {
        let axes: Vec<usize> = match axes {
            None => (0..rank).collect(),
            Some(axes) => {
                let values: Vec<i64> = axes
                    .iter()
                    .map(|a| a.to_i64().map_err(|_| self.label.err(format!("axis {a} is not a number"))))
                    .collect::<TractResult<_>>()?;
                crate::ops::params::distinct_axes(&values, rank).map_err(|m| self.label.err(m))?
            }
        };
        if pads.len() != 2 * axes.len() {
            return Err(self.label.err(format!(
                "{} pads for {} padded axes: 2 per axis are needed",
                pads.len(),
                axes.len()
            )));
        }
        let mut out = vec![(TDim::Val(0), TDim::Val(0)); rank];
        for (k, &axis) in axes.iter().enumerate() {
            let (b, a) = (&pads[k], &pads[k + axes.len()]);
            if b.to_i64().is_ok_and(|v| v < 0) || a.to_i64().is_ok_and(|v| v < 0) {
                return Err(self
                    .label
                    .err(format!("pads [{b}, {a}] on axis {axis} are negative: cropping is not supported")));
            }
            out[axis] = (b.clone(), a.clone());
        }
        Ok(out)
    }
}

fn rules<'r>(spec: &'r WrapSpec, s: &mut Solver<'r>, Io { inputs, outputs }: Io<'r>) -> InferenceResult {
    s.equals(&outputs[0].datum_type, &inputs[0].datum_type)?;
    s.equals(&outputs[0].rank, &inputs[0].rank)?;
    let out = move |s: &mut Solver<'r>, shape: TVec<TDim>, pads: &Tensor, axes: Option<&Tensor>| {
        let pads = crate::dims::dims_of(pads)?;
        let axes = axes.map(crate::dims::dims_of).transpose()?;
        let pads = spec.pads(shape.len(), &pads, axes.as_deref())?;
        for (k, (d, (b, a))) in shape.iter().zip(pads).enumerate() {
            s.equals(&outputs[0].shape[k], (d.clone() + b + a).simplify())?;
        }
        Ok(())
    };
    match spec.axes {
        None => s.given_2(&inputs[0].shape, &inputs[1].value, move |s, shape, pads| out(s, shape, &pads, None)),
        Some(ix) => s.given_3(&inputs[0].shape, &inputs[1].value, &inputs[ix].value, move |s, shape, pads, axes| {
            out(s, shape, &pads, Some(&axes))
        }),
    }
}

/// A [`WrapPad`] with the pads' values (numbers or dim expressions), which must be known.
fn wire(spec: &WrapSpec, prefix: &str, model: &mut TypedModel, inputs: &[OutletId]) -> TractResult<TVec<OutletId>> {
    let rank = model.outlet_fact(inputs[0])?.rank();
    let value = |ix: usize| -> TractResult<Vec<TDim>> {
        let fact = model.outlet_fact(inputs[ix])?;
        let konst = fact.konst.as_ref().ok_or_else(|| spec.label.not_static("the pads are known only at run time"))?;
        crate::dims::dims_of(konst)
    };
    let pads = value(1)?;
    let axes = spec.axes.map(value).transpose()?;
    let pads = spec.pads(rank, &pads, axes.as_deref())?;
    model.wire_node(prefix, WrapPad { label: spec.label.clone(), pads }, &inputs[..1])
}

/// A Pad in wrap mode with its pads known as dims.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct WrapPad {
    /// The node, for errors.
    pub label: Label,
    /// `(before, after)` per axis.
    pub pads: Vec<(TDim, TDim)>,
}

impl Op for WrapPad {
    fn name(&self) -> StaticName {
        "WrapPad".into()
    }

    op_as_typed_op!();
}

impl EvalOp for WrapPad {
    op_out_of_plan!();

    fn eval(&self, ctx: &EvalContext, inputs: TVec<TValue>) -> TractResult<TVec<TValue>> {
        let x = args_1!(inputs);
        let shape = x.shape().to_vec();
        if shape.len() != self.pads.len() {
            return Err(self.label.err(format!("pads for rank {}, data of rank {}", self.pads.len(), shape.len())));
        }
        let mut before = Vec::with_capacity(shape.len());
        let mut out_shape = Vec::with_capacity(shape.len());
        for (axis, ((b, a), &n)) in self.pads.iter().zip(&shape).enumerate() {
            let value = |d: &TDim| d.eval(ctx.symbols).to_i64().ok().and_then(|v| usize::try_from(v).ok());
            let (Some(b), Some(a)) = (value(b), value(a)) else {
                return Err(self.label.err(format!("pads ({b}, {a}) on axis {axis} are not non-negative numbers")));
            };
            if n == 0 && b.max(a) > 0 {
                return Err(self.label.err(format!("wrap pads [{b}, {a}] on axis {axis}, which is empty")));
            }
            let len = n.checked_add(b).and_then(|v| v.checked_add(a));
            out_shape.push(len.ok_or_else(|| self.label.err(format!("axis {axis}: {n} + {b} + {a} overflows")))?);
            before.push(b);
        }
        check_output(&self.label, &out_shape, x.datum_type().size_of())?;
        let (in_strides, out_strides) = (strides(&shape), strides(&out_shape));
        let from = |o: usize| {
            let mut i = 0;
            for k in 0..shape.len() {
                let c = (o / out_strides[k]) % out_shape[k];
                // (c - before) mod n, without going negative.
                let n = shape[k];
                let c = (c % n + n - before[k] % n) % n;
                i += c * in_strides[k];
            }
            Some(i)
        };
        Ok(tvec![gather_flat(&x, &out_shape, &from)?.into_tvalue()])
    }
}

impl TypedOp for WrapPad {
    as_op!();

    fn output_facts(&self, inputs: &[&TypedFact]) -> TractResult<TVec<TypedFact>> {
        let x = inputs[0];
        if x.rank() != self.pads.len() {
            return Err(self.label.err(format!("pads for rank {}, data of rank {}", self.pads.len(), x.rank())));
        }
        let shape: TVec<TDim> =
            x.shape.iter().zip(&self.pads).map(|(d, (b, a))| (d.clone() + b.clone() + a.clone()).simplify()).collect();
        Ok(tvec![x.datum_type.fact(&*shape)])
    }
}
