//! ONNX `ReverseSequence` (opset 10): for each batch entry `b`, the first `sequence_lens[b]`
//! positions along the time axis in reverse order, the rest as they are. `batch_axis` and
//! `time_axis` are 0 and 1 in either order; a length outside `[0, time dim]` is an error.

use super::elements::{gather_flat, strides};
use crate::node::attrs;
use crate::node::expanded::{as_is, Expanded, Io};
use crate::node::Label;
use tract_onnx::model::ParsingContext;
use tract_onnx::pb::NodeProto;
use tract_onnx::prelude::*;
use tract_onnx::tract_core::internal::*;
use tract_onnx::tract_hir::internal::*;

/// The ReverseSequence builder.
pub(crate) fn reverse_sequence(
    _ctx: &ParsingContext,
    node: &NodeProto,
) -> TractResult<(Box<dyn InferenceOp>, Vec<String>)> {
    let label = crate::node::node_label(node);
    let batch_axis = attrs::int(&label, node, "batch_axis")?.unwrap_or(1);
    let time_axis = attrs::int(&label, node, "time_axis")?.unwrap_or(0);
    let (batch_axis, time_axis) = match (batch_axis, time_axis) {
        (0, 1) => (0, 1),
        (1, 0) => (1, 0),
        (b, t) => {
            return Err(label.err(format!("batch_axis is {b} and time_axis {t}: they must be 0 and 1, in either order")))
        }
    };
    if node.input.len() != 2 || node.input.iter().any(|i| i.is_empty()) {
        return Err(label.err("ReverseSequence takes two inputs: input and sequence_lens"));
    }
    let op = ReverseSequence { label, batch_axis, time_axis };
    Expanded::new("ReverseSequence", op, 2, rules, as_is).built()
}

/// `ReverseSequence` with its axes.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct ReverseSequence {
    /// The node, for errors.
    pub label: Label,
    /// The batch axis (0 or 1).
    pub batch_axis: usize,
    /// The time axis (the other one).
    pub time_axis: usize,
}

fn rules<'r>(op: &'r ReverseSequence, s: &mut Solver<'r>, Io { inputs, outputs }: Io<'r>) -> InferenceResult {
    s.equals(&outputs[0].datum_type, &inputs[0].datum_type)?;
    s.equals(&inputs[1].rank, 1)?;
    s.equals(&inputs[1].shape[0], &inputs[0].shape[op.batch_axis])?;
    s.equals(&outputs[0].shape, &inputs[0].shape)
}

impl ReverseSequence {
    fn check_lens(&self, lens: &[i64], batch: usize, time: usize) -> TractResult<()> {
        if lens.len() != batch {
            return Err(self.label.err(format!("sequence_lens has {} entries for a batch of {batch}", lens.len())));
        }
        if let Some((b, l)) = lens.iter().enumerate().find(|(_, &l)| l < 0 || l as u64 > time as u64) {
            return Err(self.label.err(format!("sequence_lens[{b}] is {l}, outside [0, {time}] (the time axis)")));
        }
        Ok(())
    }
}

impl Op for ReverseSequence {
    fn name(&self) -> StaticName {
        "ReverseSequence".into()
    }

    op_as_typed_op!();
}

impl TypedOp for ReverseSequence {
    as_op!();

    fn output_facts(&self, inputs: &[&TypedFact]) -> TractResult<TVec<TypedFact>> {
        let (x, lens) = (inputs[0], inputs[1]);
        if x.rank() < 2 {
            return Err(self.label.err(format!("input must have rank 2 or more, got {}", x.rank())));
        }
        if lens.datum_type != DatumType::I64 || lens.rank() != 1 {
            return Err(self.label.err(format!(
                "sequence_lens must be a 1-D int64 tensor, got {:?} of rank {}",
                lens.datum_type,
                lens.rank()
            )));
        }
        if let (Ok(n), Ok(b)) = (lens.shape[0].to_i64(), x.shape[self.batch_axis].to_i64()) {
            if n != b {
                return Err(self.label.err(format!("sequence_lens has {n} entries for a batch of {b}")));
            }
        }
        if let (Some(k), Ok(b), Ok(t)) =
            (&lens.konst, x.shape[self.batch_axis].to_usize(), x.shape[self.time_axis].to_usize())
        {
            self.check_lens(k.try_as_plain_ram()?.as_slice::<i64>()?, b, t)?;
        }
        Ok(tvec![x.without_value()])
    }
}

impl EvalOp for ReverseSequence {
    op_out_of_plan!();

    fn eval(&self, _ctx: &EvalContext, inputs: TVec<TValue>) -> TractResult<TVec<TValue>> {
        let (x, lens) = args_2!(inputs);
        let shape = x.shape().to_vec();
        let lens = lens.try_as_plain_ram()?.as_slice::<i64>()?.to_vec();
        self.check_lens(&lens, shape[self.batch_axis], shape[self.time_axis])?;
        let st = strides(&shape);
        let (bs, ts, tl) = (st[self.batch_axis], st[self.time_axis], shape[self.time_axis]);
        let from = |o: usize| {
            let b = (o / bs) % shape[self.batch_axis];
            let t = (o / ts) % tl;
            let n = lens[b] as usize;
            Some(if t < n { o - t * ts + (n - 1 - t) * ts } else { o })
        };
        Ok(tvec![gather_flat(&x, &shape, &from)?.into_tvalue()])
    }
}
