//! ONNX `MaxUnpool` (opsets 9, 11): the inverse of `MaxPool` with its `Indices` output, each value
//! of `X` written at the flat position its index gives, every other position zero.
//!
//! The pooled-from shape is `[N, C, (x - 1) * stride + kernel - pad_begin - pad_end, ...]`; the
//! indices are flat positions in that whole tensor (as `MaxPool` counts them), each checked to lie in
//! it. With `output_shape` the output has that shape instead, at least the pooled-from one on each
//! axis, the pooled-from block at its start and zeros beyond (as the specification's reference
//! does). Its dims are exact when `output_shape` is known to analysis (numbers or dims from `Shape`)
//! and fresh symbols bound when the node runs otherwise. Later values win where indices repeat.

use crate::node::attrs;
use crate::node::expanded::{Expanded, Io};
use crate::node::Label;
use crate::ops::array::center_crop_pad::OutDim;
use crate::ops::array::elements::{check_output, gather_flat, strides};
use tract_onnx::model::ParsingContext;
use tract_onnx::pb::NodeProto;
use tract_onnx::prelude::*;
use tract_onnx::tract_core::internal::*;
use tract_onnx::tract_hir::internal::*;

/// The MaxUnpool builder.
pub(crate) fn max_unpool(_ctx: &ParsingContext, node: &NodeProto) -> TractResult<(Box<dyn InferenceOp>, Vec<String>)> {
    let label = crate::node::node_label(node);
    let given = |i: usize| node.input.get(i).is_some_and(|n| !n.is_empty());
    if !given(0) || !given(1) || node.input.len() > 3 {
        return Err(label.err("MaxUnpool takes X, I and an optional output_shape"));
    }
    let Some(kernel) = attrs::sizes(&label, node, "kernel_shape", 1)? else {
        return Err(label.err("the attribute kernel_shape is required"));
    };
    let n = kernel.len();
    let strides = attrs::sizes(&label, node, "strides", 1)?;
    let pads = attrs::sizes(&label, node, "pads", 0)?;
    attrs::check_len(&label, "strides", strides.as_ref(), n)?;
    attrs::check_len(&label, "pads", pads.as_ref(), 2 * n)?;
    let spec = Spec {
        label,
        strides: strides.unwrap_or_else(|| vec![1; n]),
        pads: pads.unwrap_or_else(|| vec![0; 2 * n]),
        kernel,
    };
    Expanded::new("MaxUnpool", spec, 2 + usize::from(given(2)), rules, wire).built()
}

/// The node's attributes, checked.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct Spec {
    label: Label,
    kernel: Vec<usize>,
    strides: Vec<usize>,
    pads: Vec<usize>,
}

impl Spec {
    /// The extent the pooling windows cover on spatial axis `a` beyond `(x - 1) * stride`.
    fn extra(&self, a: usize) -> i64 {
        let n = self.kernel.len();
        self.kernel[a] as i64 - self.pads[a] as i64 - self.pads[n + a] as i64
    }

    /// The pooled-from sizes of the spatial axes of an `X` of spatial sizes `x`, checked.
    fn unpooled(&self, x: &[usize]) -> TractResult<Vec<usize>> {
        x.iter().enumerate().map(|(a, &d)| self.unpooled_axis(a, d)).collect()
    }

    /// The pooled-from size of spatial axis `a` of `d` positions, checked (at least 1, in an i64).
    fn unpooled_axis(&self, a: usize, d: usize) -> TractResult<usize> {
        let v = (d as i128 - 1) * self.strides[a] as i128 + self.extra(a) as i128;
        i64::try_from(v).ok().and_then(|v| usize::try_from(v).ok()).filter(|v| *v >= 1).ok_or_else(|| {
            self.label.err(format!("spatial axis {a} of X has {d} positions: unpooled it would have {v}"))
        })
    }
}

fn rules<'r>(_: &'r Spec, s: &mut Solver<'r>, Io { inputs, outputs }: Io<'r>) -> InferenceResult {
    s.equals(&outputs[0].datum_type, &inputs[0].datum_type)?;
    s.equals(&outputs[0].rank, &inputs[0].rank)?;
    s.equals(&inputs[1].rank, &inputs[0].rank)?;
    if inputs.len() == 3 {
        s.equals(&inputs[2].rank, 1)?;
    }
    Ok(())
}

/// A [`MaxUnpool`] with its output dims from the pooling, from a known `output_shape`, or minted.
fn wire(spec: &Spec, prefix: &str, model: &mut TypedModel, inputs: &[OutletId]) -> TractResult<TVec<OutletId>> {
    let x = model.outlet_fact(inputs[0])?.clone();
    let i = model.outlet_fact(inputs[1])?.clone();
    let n = spec.kernel.len();
    if x.rank() != n + 2 {
        return Err(spec
            .label
            .err(format!("X has rank {} but the kernel has {n} dims: X must be (N, C, {n} spatial dims)", x.rank())));
    }
    if i.datum_type != DatumType::I64 || i.rank() != x.rank() {
        return Err(spec.label.err(format!(
            "I must be int64 of X's rank, got {:?} of rank {}",
            i.datum_type,
            i.rank()
        )));
    }
    let mut unpooled: Vec<TDim> = x.shape[..2].to_vec();
    for a in 0..n {
        let d = match x.shape[a + 2].to_usize() {
            // Known: computed with checks (TDim arithmetic does not check overflows).
            Ok(v) => spec.unpooled_axis(a, v)?.to_dim(),
            Err(_) => ((x.shape[a + 2].clone() - 1) * spec.strides[a] as i64 + spec.extra(a)).simplify(),
        };
        unpooled.push(d);
    }
    let dims: Vec<OutDim> = if inputs.len() == 3 {
        let shape = model.outlet_fact(inputs[2])?.clone();
        if shape.rank() != 1 || !(shape.datum_type.is_integer() || shape.datum_type.is_tdim()) {
            return Err(spec.label.err(format!(
                "output_shape must be a 1-D int64 tensor, got {:?} of rank {}",
                shape.datum_type,
                shape.rank()
            )));
        }
        if let Ok(len) = shape.shape[0].to_usize() {
            if len != x.rank() {
                return Err(spec.label.err(format!("output_shape has {len} values for X of rank {}", x.rank())));
            }
        }
        match shape.konst.as_ref().map(|k| crate::dims::dims_of(k)).transpose()? {
            Some(values) => {
                for (k, (v, u)) in values.iter().zip(&unpooled).enumerate() {
                    if let (Ok(v), Ok(u)) = (v.to_i64(), u.to_i64()) {
                        if v < u {
                            return Err(spec
                                .label
                                .err(format!("output_shape[{k}] is {v}: too small for the {u} positions unpooled")));
                        }
                    }
                }
                values.into_iter().map(OutDim::Fixed).collect()
            }
            None => {
                (0..x.rank()).map(|k| OutDim::Fresh(model.symbols.new_with_prefix(&format!("{prefix}_{k}")))).collect()
            }
        }
    } else {
        unpooled.into_iter().map(OutDim::Fixed).collect()
    };
    let op = MaxUnpool {
        label: spec.label.clone(),
        kernel: spec.kernel.clone(),
        strides: spec.strides.clone(),
        pads: spec.pads.clone(),
        dims,
    };
    model.wire_node(prefix, op, inputs)
}

/// `MaxUnpool` with its output dims decided.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct MaxUnpool {
    /// The node, for errors.
    pub label: Label,
    /// The pooling windows' sizes.
    pub kernel: Vec<usize>,
    /// The pooling's strides.
    pub strides: Vec<usize>,
    /// The pooling's pads, all begins then all ends.
    pub pads: Vec<usize>,
    /// The output dims.
    pub dims: Vec<OutDim>,
}

impl Op for MaxUnpool {
    fn name(&self) -> StaticName {
        "MaxUnpool".into()
    }

    fn mints_runtime_symbols(&self) -> bool {
        OutDim::any_fresh(&self.dims)
    }

    op_as_typed_op!();
}

impl TypedOp for MaxUnpool {
    as_op!();

    fn output_facts(&self, inputs: &[&TypedFact]) -> TractResult<TVec<TypedFact>> {
        let x = inputs[0];
        ensure!(x.rank() == self.dims.len(), self.label.err("rank changed"));
        let shape = OutDim::resolve(&self.dims, &x.shape)?;
        Ok(tvec![x.datum_type.fact(&*shape)])
    }
}

impl EvalOp for MaxUnpool {
    op_out_of_plan!();

    fn eval(&self, ctx: &EvalContext, inputs: TVec<TValue>) -> TractResult<TVec<TValue>> {
        let (x, i) = (&inputs[0], &inputs[1]);
        if i.shape() != x.shape() {
            return Err(self.label.err(format!("I has shape {:?}, X {:?}: they must be equal", i.shape(), x.shape())));
        }
        let spec = Spec {
            label: self.label.clone(),
            kernel: self.kernel.clone(),
            strides: self.strides.clone(),
            pads: self.pads.clone(),
        };
        let mut unpooled = x.shape()[..2].to_vec();
        unpooled.extend(spec.unpooled(&x.shape()[2..])?);
        let out_shape: Vec<usize> = match inputs.get(2) {
            None => unpooled.clone(),
            Some(shape) => {
                let values = crate::slicing::read_ints_with(&self.label, "output_shape", shape, ctx.symbols)?;
                if values.len() != unpooled.len() {
                    return Err(self.label.err(format!(
                        "output_shape has {} values for X of rank {}",
                        values.len(),
                        unpooled.len()
                    )));
                }
                let mut out = vec![];
                for (k, (&v, &u)) in values.iter().zip(&unpooled).enumerate() {
                    match usize::try_from(v) {
                        Ok(v) if v >= u => out.push(v),
                        _ => {
                            return Err(self
                                .label
                                .err(format!("output_shape[{k}] is {v}: too small for the {u} positions unpooled")))
                        }
                    }
                }
                out
            }
        };
        let numel = check_output(&self.label, &out_shape, x.datum_type().size_of().max(8))?;
        let total: usize = unpooled.iter().product();
        let (ust, ost) = (strides(&unpooled), strides(&out_shape));
        let mut from = vec![usize::MAX; numel];
        let indices = i.try_as_plain_ram()?;
        for (e, &at) in indices.as_slice::<i64>()?.iter().enumerate() {
            let flat = usize::try_from(at).ok().filter(|&f| f < total).ok_or_else(|| {
                self.label.err(format!("I holds {at} at flat position {e}: outside the {total} positions unpooled"))
            })?;
            let o: usize = (0..unpooled.len()).map(|k| (flat / ust[k]) % unpooled[k] * ost[k]).sum();
            from[o] = e;
        }
        let y = gather_flat(x, &out_shape, &|o| Some(from[o]).filter(|&e| e != usize::MAX))?;
        Ok(tvec![y.into_tvalue()])
    }
}
