//! ONNX `LogSoftmax` as one log-softmax: `x - max - ln(sum(exp(x - max)))`.
//!
//! tract-onnx wires `LogSoftmax` as a `Softmax` followed by `Ln`: once a value's probability
//! underflows (a row spanning more than about 88 in float32, `[0, -200]`), `ln(0)` gives `-inf` where
//! the definition gives `-200`. tract's typed `Softmax` has a log-softmax kind computed from the
//! shifted values; [`log_softmax`] wires that instead (the plan runs it as
//! `plan::AxisSoftmax` where our kernel takes it). The axis is checked
//! against the rank, as for `Softmax`.

use tract_onnx::model::ParsingContext;
use tract_onnx::pb::NodeProto;
use tract_onnx::prelude::*;
use tract_onnx::tract_core::ops::nn::{Softmax, SoftmaxKind};
use tract_onnx::tract_hir::internal::*;

/// The LogSoftmax builder: opset 1-12 reduce every axis from `axis` on (default 1), opset 13 and
/// later the one `axis` (default -1).
pub(crate) fn log_softmax(ctx: &ParsingContext, node: &NodeProto) -> TractResult<(Box<dyn InferenceOp>, Vec<String>)> {
    let label = crate::node::node_label(node);
    let to_end = ctx.onnx_operator_set_version < 13;
    let axis = crate::node::attrs::int(&label, node, "axis")?.unwrap_or(if to_end { 1 } else { -1 });
    Ok((expand(LogSoftmax { axis, to_end, node: label.node }), vec![]))
}

/// A log-softmax over `axis` (and every later axis when `to_end`).
#[derive(Debug, Clone, Hash, PartialEq, Eq)]
pub(crate) struct LogSoftmax {
    /// The attribute `axis`, or its default.
    pub axis: i64,
    /// Opset 1-12: the input read as 2-D, every axis from `axis` on reduced together.
    pub to_end: bool,
    /// The node's name, for errors.
    pub node: String,
}

impl Expansion for LogSoftmax {
    fn name(&self) -> StaticName {
        "LogSoftmax".into()
    }

    fn rules<'r, 'p: 'r, 's: 'r>(
        &'s self,
        s: &mut Solver<'r>,
        inputs: &'p [TensorProxy],
        outputs: &'p [TensorProxy],
    ) -> InferenceResult {
        check_input_arity(inputs, 1)?;
        check_output_arity(outputs, 1)?;
        s.equals(&outputs[0].datum_type, &inputs[0].datum_type)?;
        s.equals(&outputs[0].rank, &inputs[0].rank)?;
        s.equals(&outputs[0].shape, &inputs[0].shape)?;
        Ok(())
    }

    fn wire(&self, prefix: &str, model: &mut TypedModel, inputs: &[OutletId]) -> TractResult<TVec<OutletId>> {
        let input = *inputs.first().context("LogSoftmax takes one input")?;
        let fact = model.outlet_fact(input)?.clone();
        let rank = fact.rank();
        let r = i64::try_from(rank)?;
        if self.axis < -r || self.axis >= r {
            let msg = format!("axis is {} for an input of rank {rank}: it must be in [-{rank}, {rank})", self.axis);
            return Err(crate::NodeError::invalid(&self.node, "LogSoftmax", msg));
        }
        // In range, so the sum is in [0, rank).
        let axis = usize::try_from(if self.axis < 0 { self.axis + r } else { self.axis })?;
        let axes: TVec<usize> = if self.to_end { (axis..rank).collect() } else { tvec!(axis) };
        if !fact.datum_type.is_float() {
            let msg = format!("LogSoftmax is defined over floats, got {:?}", fact.datum_type);
            return Err(crate::NodeError::invalid(&self.node, "LogSoftmax", msg));
        }
        let op = Softmax { axes, quant_output_dt: None, kind: SoftmaxKind::LogSoftmax };
        model.wire_node(prefix, op, &[input])
    }
}
