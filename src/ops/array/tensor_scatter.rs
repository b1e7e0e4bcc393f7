//! ONNX `TensorScatter` (opset 24): a key/value cache update. The output is `past_cache` with, for
//! each index of the axes before `axis` (the first of them being the batch `b`), the `update` rows
//! written along `axis` from `write_indices[b]` (0 without it) on; `mode="circular"` wraps the
//! positions modulo the cache length, `linear` requires them inside it. `update` has the cache's
//! shape except along `axis`, where it is at most as long.

use crate::node::expanded::{as_is, Expanded, Io};
use crate::node::Label;
use tract_onnx::model::ParsingContext;
use tract_onnx::pb::NodeProto;
use tract_onnx::prelude::*;
use tract_onnx::tract_core::internal::*;
use tract_onnx::tract_hir::internal::*;

/// `TensorScatter`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct TensorScatter {
    /// `axis`, as given (negative from the end).
    pub axis: i64,
    /// `mode="circular"`.
    pub circular: bool,
    /// Whether `write_indices` is given.
    pub has_indices: bool,
    /// The node, for errors.
    pub label: Label,
}

/// The TensorScatter builder.
pub(crate) fn tensor_scatter(
    _ctx: &ParsingContext,
    node: &NodeProto,
) -> TractResult<(Box<dyn InferenceOp>, Vec<String>)> {
    let label = crate::node::node_label(node);
    let given = |i: usize| node.input.get(i).is_some_and(|n| !n.is_empty());
    if !given(0) || !given(1) || node.input.len() > 3 {
        return Err(label.err("the inputs are past_cache, update and optional write_indices"));
    }
    let circular = match crate::node::attrs::string(&label, node, "mode")?.as_deref() {
        None | Some("linear") => false,
        Some("circular") => true,
        Some(other) => return Err(label.err(format!("mode is {other:?}: it must be linear or circular"))),
    };
    let axis = crate::node::attrs::int(&label, node, "axis")?.unwrap_or(-2);
    let op = TensorScatter { axis, circular, has_indices: given(2), label };
    let inputs = 2 + usize::from(op.has_indices);
    Expanded::new("TensorScatter", op, inputs, rules, as_is).built()
}

fn rules<'r>(_: &'r TensorScatter, s: &mut Solver<'r>, Io { inputs, outputs }: Io<'r>) -> InferenceResult {
    s.equals(&outputs[0].datum_type, &inputs[0].datum_type)?;
    s.equals(&inputs[1].datum_type, &inputs[0].datum_type)?;
    s.equals(&outputs[0].shape, &inputs[0].shape)
}

impl TensorScatter {
    /// The axis, normalized; it must leave a batch axis before it.
    fn axis(&self, rank: usize) -> TractResult<usize> {
        let axis = crate::ops::params::normalize_axis(self.axis, rank).map_err(|m| self.label.err(m))?;
        if axis == 0 {
            return Err(self.label.err("axis is the first axis: the batch axis must come before it"));
        }
        Ok(axis)
    }

    fn scatter<T: Datum>(&self, cache: &Tensor, update: &Tensor, starts: &[i64], axis: usize) -> TractResult<Tensor> {
        let (shape, ushape) = (cache.shape(), update.shape());
        let outer: usize = shape[..axis].iter().product();
        let inner: usize = shape[axis + 1..].iter().product();
        let per_batch = outer / shape[0].max(1);
        let (max_len, len) = (shape[axis], ushape[axis]);
        let mut out = cache.clone();
        {
            let mut out_plain = out.try_as_plain_ram_mut()?;
            let dst = out_plain.as_slice_mut::<T>()?;
            let src = update.try_as_plain_ram()?.as_slice::<T>()?;
            for o in 0..outer {
                let start = starts[o / per_batch.max(1)];
                for j in 0..len {
                    let pos = start.checked_add(j as i64).ok_or_else(|| self.label.err("a write index overflows"))?;
                    let pos = if self.circular { pos.rem_euclid(max_len.max(1) as i64) } else { pos };
                    let pos = usize::try_from(pos).ok().filter(|&p| p < max_len).ok_or_else(|| {
                        self.label.err(format!("write position {pos} is outside the cache of length {max_len}"))
                    })?;
                    let (to, from) = ((o * max_len + pos) * inner, (o * len + j) * inner);
                    dst[to..to + inner].clone_from_slice(&src[from..from + inner]);
                }
            }
        }
        Ok(out)
    }
}

impl Op for TensorScatter {
    fn name(&self) -> StaticName {
        "TensorScatter".into()
    }

    op_as_typed_op!();
}

impl TypedOp for TensorScatter {
    as_op!();

    fn output_facts(&self, inputs: &[&TypedFact]) -> TractResult<TVec<TypedFact>> {
        let (cache, update) = (inputs[0], inputs[1]);
        if cache.datum_type != update.datum_type || cache.rank() != update.rank() {
            return Err(self.label.err("past_cache and update must have one type and rank"));
        }
        self.axis(cache.rank())?;
        Ok(tvec![cache.datum_type.fact(cache.shape.clone())])
    }
}

impl EvalOp for TensorScatter {
    op_out_of_plan!();

    fn eval(&self, _ctx: &EvalContext, inputs: TVec<TValue>) -> TractResult<TVec<TValue>> {
        let (cache, update) = (&inputs[0], &inputs[1]);
        let axis = self.axis(cache.rank())?;
        let (shape, ushape) = (cache.shape(), update.shape());
        let fits = ushape.len() == shape.len()
            && (0..shape.len()).all(|i| if i == axis { ushape[i] <= shape[i] } else { ushape[i] == shape[i] });
        if !fits || cache.datum_type() != update.datum_type() {
            let msg = format!("update {ushape:?} does not fit past_cache {shape:?} along axis {axis}");
            return Err(self.label.err(msg));
        }
        let starts: Vec<i64> = match inputs.get(2) {
            Some(w) => {
                if w.shape() != [shape[0]] {
                    let msg = format!("write_indices has shape {:?}, [{}] is needed", w.shape(), shape[0]);
                    return Err(self.label.err(msg));
                }
                w.cast_to::<i64>()?.try_as_plain_ram()?.as_slice::<i64>()?.to_vec()
            }
            None => vec![0; shape[0]],
        };
        let out = dispatch_datum!(Self::scatter(cache.datum_type())(self, cache, update, &starts, axis))?;
        Ok(tvec![out.into_tvalue()])
    }
}
