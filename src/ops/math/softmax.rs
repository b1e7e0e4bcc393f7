//! ONNX `Softmax` of float16: rounded where numpy rounds ([`HalfSoftmax`]).
//!
//! tract's float16 softmax sums the exponentials in float32 but then multiplies by the sum's
//! reciprocal rounded to float16, which is one rounding more than `e / sum` and lands one float16
//! ulp away on many values (19 of the 144 probabilities of ONNX's `attention_4d_causal_fp16`
//! expanded graph). onnx's reference, and numpy code generally, computes `exp(x - max)` and
//! `e / sum(e)` as numpy float16 operations (see [`crate::kernel::softmax_f16`]); onnxruntime computes
//! in float32 and rounds once, which agrees with it on all but rare ties. The node is typed by tract
//! as before; a float16 softmax over consecutive axes (every ONNX form) then runs as
//! [`HalfSoftmax`]. Other types keep tract's op, untouched.

use crate::ops::stock_node::{Fix, StockNode};
use std::collections::HashMap;
use tract_onnx::model::ParsingContext;
use tract_onnx::pb::NodeProto;
use tract_onnx::prelude::*;
use tract_onnx::tract_core::internal::*;
use tract_onnx::tract_core::ops::nn::{Softmax, SoftmaxKind};
use tract_onnx::tract_hir::internal::*;

/// The Softmax builder: tract's, with its axis checked and float16 computed as numpy does.
pub(crate) fn softmax(ctx: &ParsingContext, node: &NodeProto) -> TractResult<(Box<dyn InferenceOp>, Vec<String>)> {
    let label = crate::node::node_label(node);
    let default = if ctx.onnx_operator_set_version < 13 { 1 } else { -1 };
    let axis = crate::node::attrs::int(&label, node, "axis")?.unwrap_or(default);
    Ok(StockNode::wrap(crate::ops::stock("Softmax")(ctx, node)?, HalfFix { axis }, node))
}

/// What [`softmax`] adds to tract's op: the axis checked against the rank (tract ignored an axis out
/// of range, giving ones), float16 in the typed model as [`HalfSoftmax`].
#[derive(Debug, Clone)]
pub(crate) struct HalfFix {
    /// The attribute `axis`, or its default.
    pub axis: i64,
}

impl Fix for HalfFix {
    fn folds(_this: &StockNode<Self>, inputs: &[TValue]) -> bool {
        // Float16 is left to the typed model, where HalfSoftmax folds it.
        crate::ops::replaced::folds_unless_half(inputs)
    }

    fn to_typed(
        this: &StockNode<Self>,
        source: &InferenceModel,
        inode: &InferenceNode,
        target: &mut TypedModel,
        mapping: &HashMap<OutletId, OutletId>,
    ) -> TractResult<TVec<OutletId>> {
        let input = inode.inputs.first().and_then(|o| mapping.get(o)).context("Softmax's input")?;
        let rank = target.outlet_fact(*input)?.rank();
        let r = i64::try_from(rank)?;
        if this.fix.axis < -r || this.fix.axis >= r {
            let msg = format!("axis is {} for an input of rank {rank}: it must be in [-{rank}, {rank})", this.fix.axis);
            return Err(crate::NodeError::invalid(&this.node, "Softmax", msg));
        }
        let outputs = this.stock.to_typed(source, inode, target, mapping)?;
        if let [out] = &*outputs {
            let node = target.node(out.node);
            let input = node.inputs.first().copied();
            if let (Some(stock), Some(input)) = (node.op_as::<Softmax>(), input) {
                let fact = target.outlet_fact(input)?;
                if let Some(op) = HalfSoftmax::replacing(stock, fact, &this.node) {
                    target.node_mut(out.node).op = Box::new(op);
                }
            }
        }
        Ok(outputs)
    }
}

/// A float16 softmax over consecutive axes, rounded as numpy rounds it.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct HalfSoftmax {
    /// The first axis reduced.
    pub axis: usize,
    /// How many axes are reduced, from `axis` on.
    pub count: usize,
    /// The node, for errors.
    pub node: String,
}

impl HalfSoftmax {
    /// The op in place of tract's `softmax` over an input of type `fact`, when that is a float16
    /// softmax (not a log-softmax, not quantized) over consecutive axes.
    pub(crate) fn replacing(softmax: &Softmax, fact: &TypedFact, node: &str) -> Option<HalfSoftmax> {
        let mut axes = softmax.axes.to_vec();
        axes.sort_unstable();
        let (&axis, count) = (axes.first()?, axes.len());
        let consecutive = axes.iter().enumerate().all(|(i, &a)| a == axis + i);
        let within = axis.checked_add(count).is_some_and(|end| end <= fact.rank());
        let fits = fact.datum_type == DatumType::F16
            && softmax.kind == SoftmaxKind::Softmax
            && softmax.quant_output_dt.is_none()
            && consecutive
            && within;
        fits.then(|| HalfSoftmax { axis, count, node: node.to_string() })
    }
}

impl Op for HalfSoftmax {
    fn name(&self) -> StaticName {
        "HalfSoftmax".into()
    }

    fn info(&self) -> TractResult<Vec<String>> {
        Ok(vec![format!("axes: {}..{}", self.axis, self.axis + self.count)])
    }

    op_as_typed_op!();
}

impl EvalOp for HalfSoftmax {
    op_out_of_plan!();

    fn eval(&self, _ctx: &EvalContext, inputs: TVec<TValue>) -> TractResult<TVec<TValue>> {
        let input = args_1!(inputs);
        let err = |msg: String| crate::NodeError::invalid(&self.node, "Softmax", msg);
        if input.datum_type() != DatumType::F16 {
            return Err(err(format!("HalfSoftmax runs float16, got {:?}", input.datum_type())));
        }
        let end = self.axis + self.count;
        let shape = input.shape();
        if end > shape.len() {
            return Err(err(format!("axes {}..{end} of an input of rank {}", self.axis, shape.len())));
        }
        let n: usize = shape[self.axis..end].iter().product();
        let inner: usize = shape[end..].iter().product();
        let mut output = input.into_tensor();
        let mut view = output.try_as_plain_ram_mut()?;
        crate::kernel::softmax_f16(view.as_slice_mut::<f16>()?, n, inner).map_err(err)?;
        Ok(tvec!(output.into_tvalue()))
    }
}

impl TypedOp for HalfSoftmax {
    as_op!();

    fn output_facts(&self, inputs: &[&TypedFact]) -> TractResult<TVec<TypedFact>> {
        let fact = inputs.first().context("HalfSoftmax takes one input")?;
        Ok(tvec!(fact.datum_type.fact(fact.shape.clone())))
    }
}
