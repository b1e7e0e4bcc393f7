//! ONNX `Gather`, recognizing constant affine index tables as views.
//!
//! torch exports `as_strided` and `unfold` as `Reshape(x, [-1])` + a Gather over a constant table of
//! `offset + Σ j_k * stride_k`, and integer indexing as a Gather with a scalar index. Such a Gather is
//! wired as a [`ViewOp`] (a strided copy instead of a table lookup per element, and it joins the view
//! chain around it); any other Gather is tract's.

use crate::node::expanded::{Expanded, Io};
use crate::slicing::AffineGather;
use crate::slicing::ViewOp;
use crate::slicing::{Label, SliceStep};
use tract_onnx::model::ParsingContext;
use tract_onnx::pb::NodeProto;
use tract_onnx::prelude::*;
use tract_onnx::tract_hir::internal::*;

/// The Gather builder.
pub(crate) fn gather(_ctx: &ParsingContext, node: &NodeProto) -> TractResult<(Box<dyn InferenceOp>, Vec<String>)> {
    let axis = node.attribute.iter().find(|a| a.name == "axis").map_or(0, |a| a.i);
    let label = crate::node::node_label(node);
    let op = ViewGather { axis, label, inner: tract_onnx::tract_hir::ops::array::Gather::new(axis) };
    Expanded::new("Gather", op, 2, ViewGather::rules, ViewGather::wire).built()
}

/// tract's Gather, wired as a view when its indices are a constant affine table.
#[derive(Debug, Clone)]
pub(crate) struct ViewGather {
    /// The ONNX axis (may be negative).
    pub axis: i64,
    /// Node, for errors.
    pub label: Label,
    /// tract's Gather, for everything else.
    pub inner: tract_onnx::tract_hir::ops::array::Gather,
}

impl ViewGather {
    fn rules<'r>(&'r self, s: &mut Solver<'r>, Io { inputs, outputs }: Io<'r>) -> InferenceResult {
        self.inner.rules(s, inputs, outputs)
    }

    fn wire(&self, prefix: &str, model: &mut TypedModel, inputs: &[OutletId]) -> TractResult<TVec<OutletId>> {
        let data = model.outlet_fact(inputs[0])?.clone();
        let rank = data.rank() as i64;
        let axis = if self.axis < 0 { self.axis + rank } else { self.axis };
        if (0..rank).contains(&axis) {
            if let Some(table) = model.outlet_fact(inputs[1])?.konst.clone() {
                let dim = data.shape[axis as usize].as_i64();
                // A constant index out of range is an error here, not a panic when the model runs.
                if let (Some(d), Ok(values)) = (dim, crate::dims::dims_of(&table)) {
                    if let Some(bad) = values.iter().filter_map(TDim::as_i64).find(|&i| i < -d || i >= d) {
                        return Err(self.label.err(format!("index {bad} is out of range for axis {axis} of size {d}")));
                    }
                }
                if let Some(g) = AffineGather::from_table(axis as usize, &table, dim) {
                    // Out-of-range indices stay tract's to report.
                    if g.resolve(data.shape.dims()).is_ok() {
                        let op = ViewOp { chain: vec![(self.label.clone(), SliceStep::Gather(g))] };
                        return model.wire_node(prefix, op, &inputs[..1]);
                    }
                }
            }
        }
        self.inner.wire(prefix, model, inputs)
    }
}
