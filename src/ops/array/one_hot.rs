//! ONNX `OneHot` with the specification's rule for indices out of range.
//!
//! `OneHot(indices, depth, values)` writes `values[1]` at position `indices[i]` (negative counting
//! from `depth`) along the new axis `axis`, and `values[0]` everywhere else; an index outside
//! `[-depth, depth - 1]` gives a row of `values[0]` only. tract wrote such an index through an
//! unchecked ndarray subscript (a panic), and read indices as i32, so an int64 index past 2^31
//! wrapped into range. Here indices are read as i64 and checked, the output size is checked before
//! it is allocated. `depth` and `values` given at run time are read when the model runs (the typed
//! node is built again then, as for any node whose output shape depends on a value).

use crate::kernel::check_allocation;
use crate::node::expanded::{as_is, Expanded, Io};
use tract_onnx::model::ParsingContext;
use tract_onnx::pb::NodeProto;
use tract_onnx::prelude::*;
use tract_onnx::tract_hir::internal::*;

/// The OneHot builder.
pub(crate) fn one_hot(_ctx: &ParsingContext, node: &NodeProto) -> TractResult<(Box<dyn InferenceOp>, Vec<String>)> {
    let label = crate::node::node_label(node);
    let axis = node.attribute.iter().find(|a| a.name == "axis").map_or(-1, |a| a.i);
    Expanded::new("OneHot", OneHotNode { axis, node: label.node }, 3, OneHotNode::rules, OneHotNode::wire).built()
}

/// The ONNX node before typing: its attribute.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct OneHotNode {
    /// The ONNX `axis` (negative counts from the output's rank).
    pub axis: i64,
    /// Node name, for errors.
    pub node: String,
}

impl OneHotNode {
    /// The output axis for indices of rank `rank`, or an error naming the node.
    fn axis(&self, rank: usize) -> TractResult<usize> {
        let out_rank = rank as i64 + 1;
        let axis = if self.axis < 0 { self.axis + out_rank } else { self.axis };
        if !(0..out_rank).contains(&axis) {
            let msg = format!("axis {} is out of range for an output of rank {out_rank}", self.axis);
            return Err(crate::NodeError::invalid(&self.node, "OneHot", msg));
        }
        Ok(axis as usize)
    }

    /// `depth` as a length, from its tensor (any numeric type, one element).
    fn depth(&self, depth: &Tensor) -> TractResult<usize> {
        let invalid = |msg: String| crate::NodeError::invalid(&self.node, "OneHot", msg);
        if depth.len() != 1 {
            return Err(invalid(format!("depth must hold one value, it holds {}", depth.len())));
        }
        let value = depth.cast_to::<f64>()?.try_as_plain_ram()?.as_slice::<f64>()?[0];
        if !(value.is_finite() && value >= 1.0 && value < 2f64.powi(53)) {
            return Err(invalid(format!("depth is {value}: it must be a positive integer")));
        }
        Ok(value as usize)
    }

    fn rules<'r>(&'r self, s: &mut Solver<'r>, Io { inputs, outputs }: Io<'r>) -> InferenceResult {
        s.equals(&inputs[2].datum_type, &outputs[0].datum_type)?;
        s.equals(inputs[0].rank.bex() + 1, &outputs[0].rank)?;
        s.equals(&inputs[2].rank, 1)?;
        s.equals(&inputs[2].shape[0], 2.to_dim())?;
        s.given(&inputs[0].rank, move |s, rank| {
            let axis = self.axis(rank as usize)?;
            for ix in 0..rank as usize {
                s.equals(&inputs[0].shape[ix], &outputs[0].shape[ix + usize::from(ix >= axis)])?;
            }
            s.given(&inputs[1].value, move |s, depth| {
                let depth = self.depth(&depth)?;
                s.equals(&outputs[0].shape[axis], depth.to_dim())
            })
        })
    }

    fn wire(&self, prefix: &str, model: &mut TypedModel, inputs: &[OutletId]) -> TractResult<TVec<OutletId>> {
        let rank = model.outlet_fact(inputs[0])?.rank();
        let depth = model.outlet_fact(inputs[1])?.konst.clone();
        let values = model.outlet_fact(inputs[2])?.konst.clone();
        let (Some(depth), Some(values)) = (depth, values) else {
            // A value given at run time: the analysis mints the new axis and builds the node again
            // with the values when the model runs.
            let msg = "depth and values are only known when the model runs";
            return Err(crate::NodeError::not_static(&self.node, "OneHot", msg));
        };
        if values.len() != 2 {
            let msg = format!("values must hold [off, on], it holds {} values", values.len());
            return Err(crate::NodeError::invalid(&self.node, "OneHot", msg));
        }
        let op = OneHot {
            axis: self.axis(rank)?,
            depth: self.depth(&depth)?,
            off: values.nth(0)?.into_arc_tensor(),
            on: values.nth(1)?.into_arc_tensor(),
            node: self.node.clone(),
        };
        as_is(&op, prefix, model, &inputs[..1])
    }
}

/// The typed `OneHot`: indices in, `depth` values along `axis` out.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct OneHot {
    /// The new axis of the output.
    pub axis: usize,
    /// Its length.
    pub depth: usize,
    /// The value written off the index (a scalar).
    pub off: Arc<Tensor>,
    /// The value written at the index (a scalar of the same type).
    pub on: Arc<Tensor>,
    /// Node name, for errors.
    pub node: String,
}

impl Op for OneHot {
    fn name(&self) -> StaticName {
        "OneHot".into()
    }

    fn info(&self) -> TractResult<Vec<String>> {
        Ok(vec![format!("axis {}, depth {}", self.axis, self.depth)])
    }

    op_as_typed_op!();
}

impl OneHot {
    /// Writes `on` at every in-range index of `indices` into `output` (already full of `off`).
    fn fill<T: Datum + Clone>(&self, indices: &[i64], inner: usize, output: &mut Tensor) -> TractResult<()> {
        let on = self.on.try_as_plain_ram()?.as_slice::<T>()?[0].clone();
        let mut plain = output.try_as_plain_ram_mut()?;
        let out = plain.as_slice_mut::<T>()?;
        let depth = self.depth as i64;
        for (i, &index) in indices.iter().enumerate() {
            let index = if index < 0 { index.checked_add(depth) } else { Some(index) };
            let Some(index) = index.filter(|ix| (0..depth).contains(ix)) else { continue };
            let (outer, within) = (i / inner, i % inner);
            out[(outer * self.depth + index as usize) * inner + within] = on.clone();
        }
        Ok(())
    }
}

impl EvalOp for OneHot {
    op_out_of_plan!();

    fn eval(&self, _ctx: &EvalContext, inputs: TVec<TValue>) -> TractResult<TVec<TValue>> {
        let indices = args_1!(inputs);
        let mut shape: TVec<usize> = indices.shape().into();
        shape.insert(self.axis, self.depth);
        let numel = shape.iter().try_fold(1u64, |n, &d| n.checked_mul(d as u64)).unwrap_or(u64::MAX);
        check_allocation(numel, self.off.datum_type().size_of())
            .map_err(|e| crate::NodeError::invalid(&self.node, "OneHot", e))?;
        let inner: usize = indices.shape()[self.axis..].iter().product();
        let indices = indices.cast_to::<i64>()?;
        let indices = indices.try_as_plain_ram()?.as_slice::<i64>()?.to_vec();
        let mut output = self.off.broadcast_scalar_to_shape(&shape)?;
        if inner > 0 {
            dispatch_datum!(Self::fill(self.off.datum_type())(self, &indices, inner, &mut output))?;
        }
        Ok(tvec!(output.into_tvalue()))
    }
}

impl TypedOp for OneHot {
    as_op!();

    fn output_facts(&self, inputs: &[&TypedFact]) -> TractResult<TVec<TypedFact>> {
        let mut shape = inputs[0].shape.to_tvec();
        shape.insert(self.axis, self.depth.to_dim());
        Ok(tvec!(self.off.datum_type().fact(&*shape)))
    }
}
