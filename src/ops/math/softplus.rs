//! ONNX `Softplus`, `ln(1 + exp(x))`, as `max(x, 0) + ln(1 + exp(-|x|))`.
//!
//! tract-onnx expands `Softplus` into `Ln(Exp(x) + 1)`: `exp` overflows past 88.7 in float32 (709 in
//! float64, 11 in float16), so a large `x` gave `inf` where onnxruntime and onnx's reference
//! (`numpy.logaddexp(0, x)`) give `x`. Float32 runs as one op, [`FusedSoftplus`], on our kernel
//! (`crate::kernel::softplus_into`, vectorized); other float types are wired with tract's
//! element-wise ops in the same stable form.

use crate::node::expanded::{Expanded, Io};
use std::mem::MaybeUninit;
use tract_onnx::model::ParsingContext;
use tract_onnx::pb::NodeProto;
use tract_onnx::prelude::*;
use tract_onnx::tract_core::internal::*;
use tract_onnx::tract_core::ops::change_axes::wire_with_rank_broadcast;
use tract_onnx::tract_core::ops::math;
use tract_onnx::tract_hir::internal::*;

/// The Softplus builder.
pub(crate) fn softplus(_ctx: &ParsingContext, node: &NodeProto) -> TractResult<(Box<dyn InferenceOp>, Vec<String>)> {
    let label = crate::node::node_label(node);
    Expanded::new("Softplus", Softplus { node: label.node }, 1, Softplus::rules, Softplus::wire).built()
}

/// ONNX's `Softplus` node.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Softplus {
    /// Node name, for errors.
    pub node: String,
}

impl Softplus {
    fn rules<'r>(&'r self, s: &mut Solver<'r>, Io { inputs, outputs }: Io<'r>) -> InferenceResult {
        s.equals(&outputs[0].datum_type, &inputs[0].datum_type)?;
        s.equals(&outputs[0].shape, &inputs[0].shape)
    }

    fn wire(&self, prefix: &str, model: &mut TypedModel, inputs: &[OutletId]) -> TractResult<TVec<OutletId>> {
        let dt = model.outlet_fact(inputs[0])?.datum_type;
        if dt == DatumType::F32 {
            return model.wire_node(prefix, FusedSoftplus, inputs);
        }
        if !dt.is_float() {
            let msg = format!("Softplus is defined on floats, got {dt:?}");
            return Err(crate::NodeError::invalid(&self.node, "Softplus", msg));
        }
        let x = inputs[0];
        let mut konst = |name: &str, v: f32| -> TractResult<OutletId> {
            model.add_const(format!("{prefix}.{name}"), tensor0(v).cast_to_dt(dt)?.into_owned())
        };
        let (zero, one) = (konst("zero", 0.0)?, konst("one", 1.0)?);
        let abs = model.wire_node(format!("{prefix}.abs"), math::abs(), &[x])?[0];
        let neg = model.wire_node(format!("{prefix}.neg"), math::neg(), &[abs])?[0];
        let exp = model.wire_node(format!("{prefix}.exp"), math::exp(), &[neg])?[0];
        let plus_one = wire_with_rank_broadcast(format!("{prefix}.plus_one"), model, math::add(), &[exp, one])?[0];
        let ln = model.wire_node(format!("{prefix}.ln"), math::ln(), &[plus_one])?[0];
        let positive = wire_with_rank_broadcast(format!("{prefix}.positive"), model, math::max(), &[x, zero])?[0];
        wire_with_rank_broadcast(prefix, model, math::add(), &[positive, ln])
    }
}

/// `Softplus` of a float32 tensor on our kernel, in one pass.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct FusedSoftplus;

impl Op for FusedSoftplus {
    fn name(&self) -> StaticName {
        "FusedSoftplus".into()
    }

    op_as_typed_op!();
}

impl EvalOp for FusedSoftplus {
    op_out_of_plan!();

    fn eval(&self, _ctx: &EvalContext, inputs: TVec<TValue>) -> TractResult<TVec<TValue>> {
        let x = args_1!(inputs);
        ensure!(x.datum_type() == f32::datum_type(), "FusedSoftplus of {:?}", x.datum_type());
        if !x.is_exclusive() {
            let plain = x.try_as_plain_ram()?;
            let src = plain.as_slice::<f32>()?;
            // Safety: a float32 tensor of `x`'s shape, written in full just below before anything
            // reads it (a tensor of plain data has no destructor that reads its contents).
            let mut y = unsafe { Tensor::uninitialized::<f32>(x.shape())? };
            ensure!(y.len() == src.len(), "FusedSoftplus: an output of {} values for {}", y.len(), src.len());
            // Safety: `y`'s buffer holds `src.len()` float32 (checked above), aligned for them, a
            // fresh allocation that does not overlap `src`; viewed as `MaybeUninit` it is only written.
            let dst = unsafe {
                std::slice::from_raw_parts_mut(y.as_ptr_mut_unchecked::<f32>().cast::<MaybeUninit<f32>>(), src.len())
            };
            crate::kernel::softplus_into(src, dst);
            return Ok(tvec!(y.into_tvalue()));
        }
        let mut y = x.into_tensor();
        {
            let mut plain = y.try_as_plain_ram_mut()?;
            crate::kernel::softplus_in_place(plain.as_slice_mut::<f32>()?);
        }
        Ok(tvec!(y.into_tvalue()))
    }
}

impl TypedOp for FusedSoftplus {
    fn output_facts(&self, inputs: &[&TypedFact]) -> TractResult<TVec<TypedFact>> {
        let x = inputs.first().context("FusedSoftplus takes an input")?;
        ensure!(x.datum_type == f32::datum_type(), "FusedSoftplus of {:?}", x.datum_type);
        Ok(tvec!(f32::fact(x.shape.clone())))
    }

    fn axes_mapping(&self, inputs: &[&TypedFact], outputs: &[&TypedFact]) -> TractResult<AxesMapping> {
        AxesMapping::natural(inputs, outputs)
    }

    fn change_axes(
        &self,
        model: &TypedModel,
        node: &TypedNode,
        _io: InOut,
        change: &AxisOp,
    ) -> TractResult<Option<AxisChangeConsequence>> {
        Ok(Some(AxisChangeConsequence::new(model, node, None, change)))
    }

    as_op!();
}
