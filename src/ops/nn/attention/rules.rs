//! Attention's inference rules: what can be said of the outputs from partial facts (the analysis
//! uses them when a node cannot be wired, to keep typing the rest of the graph).

use super::Attention;
use crate::node::expanded::Io;
use tract_onnx::tract_hir::internal::*;

/// Types, ranks and the dims that follow from the inputs' without arithmetic.
pub(super) fn rules<'r>(op: &'r Attention, s: &mut Solver<'r>, Io { inputs, outputs }: Io<'r>) -> InferenceResult {
    let (q, k, v) = (&inputs[0], &inputs[1], &inputs[2]);
    s.equals(&outputs[0].datum_type, &q.datum_type)?;
    s.equals(&outputs[0].rank, &q.rank)?;
    s.equals(&k.rank, &q.rank)?;
    s.equals(&v.rank, &q.rank)?;
    s.equals(&outputs[0].shape[0], &q.shape[0])?;
    let mut next = 1;
    let present_key = op.out_present_key.then(|| {
        next += 1;
        next - 1
    });
    let present_value = op.out_present_value.then(|| {
        next += 1;
        next - 1
    });
    let qk = op.out_qk.then_some(next);
    if let Some(o) = present_key {
        s.equals(&outputs[o].datum_type, &k.datum_type)?;
        s.equals(&outputs[o].rank, 4)?;
        s.equals(&outputs[o].shape[0], &k.shape[0])?;
    }
    if let Some(o) = present_value {
        s.equals(&outputs[o].datum_type, &v.datum_type)?;
        s.equals(&outputs[o].rank, 4)?;
        s.equals(&outputs[o].shape[0], &v.shape[0])?;
    }
    if let Some(o) = qk {
        s.equals(&outputs[o].datum_type, &q.datum_type)?;
        s.equals(&outputs[o].rank, 4)?;
        s.equals(&outputs[o].shape[0], &q.shape[0])?;
    }
    s.given(&q.rank, move |s, rank| {
        if rank == 4 {
            // (batch, heads, seq, v_head_size)
            s.equals(&outputs[0].shape[1], &q.shape[1])?;
            s.equals(&outputs[0].shape[2], &q.shape[2])?;
            s.equals(&outputs[0].shape[3], &v.shape[3])?;
            if let Some(o) = present_key {
                s.equals(&outputs[o].shape[1], &k.shape[1])?;
                s.equals(&outputs[o].shape[3], &k.shape[3])?;
            }
            if let Some(o) = present_value {
                s.equals(&outputs[o].shape[1], &v.shape[1])?;
                s.equals(&outputs[o].shape[3], &v.shape[3])?;
            }
            if let Some(o) = qk {
                s.equals(&outputs[o].shape[1], &q.shape[1])?;
                s.equals(&outputs[o].shape[2], &q.shape[2])?;
            }
        } else if rank == 3 {
            s.equals(&outputs[0].shape[1], &q.shape[1])?;
            if let Some(o) = qk {
                s.equals(&outputs[o].shape[2], &q.shape[1])?;
            }
        }
        Ok(())
    })
}
