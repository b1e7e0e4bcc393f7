//! ONNX `CenterCropPad` (opset 18): each axis listed (all by default) cropped or zero-padded to the
//! size in `shape`, centred: cropping `d` positions removes `d / 2` at the start (the odd one at the
//! end), padding adds `d / 2` at the start likewise.
//!
//! The output dims are the values of `shape` when analysis knows them (numbers or symbolic dims from
//! `Shape`), and otherwise symbols of their own, bound when the node runs.

use super::elements::{gather_flat, strides};
use crate::node::attrs;
use crate::node::expanded::{Expanded, Io};
use crate::node::Label;
use tract_onnx::model::ParsingContext;
use tract_onnx::pb::NodeProto;
use tract_onnx::prelude::*;
use tract_onnx::tract_core::internal::*;
use tract_onnx::tract_hir::internal::*;

/// The CenterCropPad builder.
pub(crate) fn center_crop_pad(
    _ctx: &ParsingContext,
    node: &NodeProto,
) -> TractResult<(Box<dyn InferenceOp>, Vec<String>)> {
    let label = crate::node::node_label(node);
    let axes = attrs::ints(&label, node, "axes")?;
    if node.input.len() != 2 || node.input.iter().any(|i| i.is_empty()) {
        return Err(label.err("CenterCropPad takes two inputs: input_data and shape"));
    }
    Expanded::new("CenterCropPad", Spec { label, axes }, 2, rules, wire).built()
}

/// The node's attributes, before its input facts are known.
#[derive(Debug, Clone)]
struct Spec {
    label: Label,
    axes: Option<Vec<i64>>,
}

impl Spec {
    fn axes(&self, rank: usize) -> TractResult<Vec<usize>> {
        let Some(axes) = &self.axes else { return Ok((0..rank).collect()) };
        let r = rank as i64;
        let mut out = vec![];
        for &a in axes {
            if a < -r || a >= r {
                return Err(self.label.err(format!("axis {a} is out of range for rank {rank}")));
            }
            let a = if a < 0 { (a + r) as usize } else { a as usize };
            if out.contains(&a) {
                return Err(self.label.err(format!("axis {a} appears more than once in axes")));
            }
            out.push(a);
        }
        Ok(out)
    }
}

fn rules<'r>(_: &'r Spec, s: &mut Solver<'r>, Io { inputs, outputs }: Io<'r>) -> InferenceResult {
    s.equals(&outputs[0].datum_type, &inputs[0].datum_type)?;
    s.equals(&outputs[0].rank, &inputs[0].rank)?;
    s.equals(&inputs[1].rank, 1)
}

/// A [`CenterCropPad`] with the output dims known from `shape` or minted.
fn wire(spec: &Spec, prefix: &str, model: &mut TypedModel, inputs: &[OutletId]) -> TractResult<TVec<OutletId>> {
    let x = model.outlet_fact(inputs[0])?.clone();
    let shape = model.outlet_fact(inputs[1])?.clone();
    let axes = spec.axes(x.rank())?;
    if shape.rank() != 1 {
        return Err(spec.label.err(format!("shape must be a 1-D tensor, got rank {}", shape.rank())));
    }
    if !(shape.datum_type.is_integer() || shape.datum_type.is_tdim()) {
        return Err(spec.label.err(format!("shape must be int32 or int64, got {:?}", shape.datum_type)));
    }
    if let Ok(n) = shape.shape[0].to_usize() {
        if n != axes.len() {
            return Err(spec.label.err(format!("shape has {n} entries for {} axes", axes.len())));
        }
    }
    let known = shape.konst.as_ref().map(|k| crate::dims::dims_of(k)).transpose()?;
    let mut dims = vec![];
    for (k, d) in x.shape.iter().enumerate() {
        dims.push(match (axes.iter().position(|&a| a == k), &known) {
            (None, _) => OutDim::Same,
            (Some(i), Some(values)) => {
                let v = values.get(i).cloned().context("shape is shorter than axes")?;
                if let Ok(n) = v.to_i64() {
                    if n < 0 {
                        return Err(spec.label.err(format!("shape[{i}] is {n}: sizes cannot be negative")));
                    }
                }
                if v == *d {
                    OutDim::Same
                } else {
                    OutDim::Fixed(v)
                }
            }
            (Some(_), None) => OutDim::Fresh(model.symbols.new_with_prefix(&format!("{prefix}_{k}"))),
        });
    }
    let op = CenterCropPad { label: spec.label.clone(), axes, dims };
    model.wire_node(prefix, op, inputs)
}

/// An output dim of [`CenterCropPad`].
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) enum OutDim {
    /// The input's.
    Same,
    /// Known (a number or an expression).
    Fixed(TDim),
    /// Known only when the node runs.
    Fresh(Symbol),
}

impl OutDim {
    /// Whether any of `dims` is known only when the node runs (the op mints runtime symbols).
    pub(crate) fn any_fresh(dims: &[OutDim]) -> bool {
        dims.iter().any(|d| matches!(d, OutDim::Fresh(_)))
    }

    /// The output shape `dims` give, `Same` axes read from `input` (the input's dims).
    pub(crate) fn resolve(dims: &[OutDim], input: &[TDim]) -> TractResult<TVec<TDim>> {
        dims.iter()
            .enumerate()
            .map(|(axis, d)| match d {
                OutDim::Same => input.get(axis).cloned().with_context(|| format!("the input has no axis {axis}")),
                OutDim::Fixed(v) => Ok(v.clone()),
                OutDim::Fresh(s) => Ok(TDim::Sym(s.clone())),
            })
            .collect()
    }
}

/// `CenterCropPad` over known axes.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct CenterCropPad {
    /// The node, for errors.
    pub label: Label,
    /// The axes `shape` gives sizes for, in its order.
    pub axes: Vec<usize>,
    /// The output dims.
    pub dims: Vec<OutDim>,
}

impl Op for CenterCropPad {
    fn name(&self) -> StaticName {
        "CenterCropPad".into()
    }

    fn mints_runtime_symbols(&self) -> bool {
        OutDim::any_fresh(&self.dims)
    }

    op_as_typed_op!();
}

impl TypedOp for CenterCropPad {
    as_op!();

    fn output_facts(&self, inputs: &[&TypedFact]) -> TractResult<TVec<TypedFact>> {
        let x = inputs[0];
        ensure!(x.rank() == self.dims.len(), self.label.err("rank changed"));
        let shape = OutDim::resolve(&self.dims, &x.shape)?;
        Ok(tvec![x.datum_type.fact(&*shape)])
    }
}

impl EvalOp for CenterCropPad {
    op_out_of_plan!();

    fn eval(&self, ctx: &EvalContext, inputs: TVec<TValue>) -> TractResult<TVec<TValue>> {
        let (x, sizes) = args_2!(inputs);
        let sizes = crate::slicing::read_ints_with(&self.label, "shape", &sizes, ctx.symbols)?;
        if sizes.len() != self.axes.len() {
            return Err(self.label.err(format!("shape has {} entries for {} axes", sizes.len(), self.axes.len())));
        }
        let in_shape = x.shape().to_vec();
        let mut out_shape = in_shape.clone();
        // Per axis: output index o reads input index o + shift (a crop shifts forwards, a pad back).
        let mut shift = vec![0i64; in_shape.len()];
        for (&a, &s) in self.axes.iter().zip(&sizes) {
            let s = usize::try_from(s)
                .map_err(|_| self.label.err(format!("shape gives axis {a} the size {s}: sizes cannot be negative")))?;
            let d = in_shape[a];
            out_shape[a] = s;
            shift[a] = if s <= d { ((d - s) / 2) as i64 } else { -(((s - d) / 2) as i64) };
        }
        crate::kernel::check_allocation(
            out_shape.iter().try_fold(1u64, |acc, &d| acc.checked_mul(d as u64)).unwrap_or(u64::MAX),
            x.datum_type().size_of(),
        )
        .map_err(|e| self.label.err(e))?;
        let (ost, ist) = (strides(&out_shape), strides(&in_shape));
        let from = |o: usize| {
            let mut at = 0usize;
            for k in 0..out_shape.len() {
                let i = ((o / ost[k]) % out_shape[k]) as i64 + shift[k];
                if i < 0 || i >= in_shape[k] as i64 {
                    return None;
                }
                at += i as usize * ist[k];
            }
            Some(at)
        };
        Ok(tvec![gather_flat(&x, &out_shape, &from)?.into_tvalue()])
    }
}
