//! ONNX `SpaceToDepth` with `mode="CRD"` (opset 28): each `blocksize x blocksize` block of a channel
//! becomes consecutive channels of that channel, `y[b, (c*bs + i)*bs + j, h, w] =
//! x[b, c, h*bs + i, w*bs + j]`.
//!
//! tract-onnx reads only `blocksize` and always moves blocks in the default `DCR` order (depth, then
//! block row, then block column), so a `CRD` node came out in the wrong channel order. The default
//! mode stays tract's; `CRD` is wired here as tract's axis ops (one reshape, moves, one reshape),
//! with the spatial dims known as numbers.

use crate::node::expanded::{Expanded, Io};
use tract_onnx::model::ParsingContext;
use tract_onnx::pb::NodeProto;
use tract_onnx::prelude::*;
use tract_onnx::tract_hir::internal::*;

/// The SpaceToDepth builder: tract's for `DCR`, ours for `CRD`.
pub(crate) fn space_to_depth(
    ctx: &ParsingContext,
    node: &NodeProto,
) -> TractResult<(Box<dyn InferenceOp>, Vec<String>)> {
    let label = crate::node::node_label(node);
    match node.attribute.iter().find(|a| a.name == "mode").map(|a| a.s.as_slice()) {
        None | Some(b"DCR") => return crate::ops::stock("SpaceToDepth")(ctx, node),
        Some(b"CRD") => {}
        Some(other) => {
            let msg = format!("mode is {:?}: it must be DCR or CRD", String::from_utf8_lossy(other));
            return Err(label.err(msg));
        }
    }
    let blocksize = node.attribute.iter().find(|a| a.name == "blocksize").map(|a| a.i);
    let blocksize = match blocksize {
        Some(b) if b >= 1 => usize::try_from(b).map_err(|_| label.err(format!("blocksize {b} is too large")))?,
        Some(b) => return Err(label.err(format!("blocksize is {b}: it must be at least 1"))),
        None => return Err(label.err("the attribute blocksize is required")),
    };
    let op = SpaceToDepthCrd { blocksize, node: label.node };
    Expanded::new("SpaceToDepth", op, 1, SpaceToDepthCrd::rules, SpaceToDepthCrd::wire).built()
}

/// `SpaceToDepth` in `CRD` order.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct SpaceToDepthCrd {
    /// The block's side.
    pub blocksize: usize,
    /// Node name, for errors.
    pub node: String,
}

impl SpaceToDepthCrd {
    fn rules<'r>(&'r self, s: &mut Solver<'r>, Io { inputs, outputs }: Io<'r>) -> InferenceResult {
        s.equals(&inputs[0].rank, 4)?;
        s.equals(&outputs[0].rank, 4)?;
        s.equals(&outputs[0].datum_type, &inputs[0].datum_type)?;
        s.given(&inputs[0].shape, move |s, shape| {
            let bs = self.blocksize;
            let out = tvec![
                shape[0].clone(),
                shape[1].clone() * (bs * bs) as i64,
                shape[2].clone() / bs as u64,
                shape[3].clone() / bs as u64
            ];
            s.equals(&outputs[0].shape, ShapeFactoid::from(out))
        })
    }

    fn wire(&self, prefix: &str, model: &mut TypedModel, inputs: &[OutletId]) -> TractResult<TVec<OutletId>> {
        let invalid = |m: String| crate::NodeError::invalid(&self.node, "SpaceToDepth", m);
        let shape = model.outlet_fact(inputs[0])?.shape.to_tvec();
        if shape.len() != 4 {
            return Err(invalid(format!("the input must have rank 4, got {}", shape.len())));
        }
        let bs = self.blocksize;
        let mut spatial = vec![];
        for (axis, d) in shape.iter().enumerate().skip(2) {
            let n = d.to_usize().map_err(|_| invalid(format!("dim {axis} must be known, got {d}")))?;
            if n % bs != 0 {
                return Err(invalid(format!("dim {axis} is {n}, not a multiple of blocksize {bs}")));
            }
            spatial.push(n / bs);
        }
        let (h, w) = (spatial[0].to_dim(), spatial[1].to_dim());
        let block = bs.to_dim();
        // [b, c, h*bs, w*bs] -> [b, c, h, bs, w, bs] -> [b, c, bs, bs, h, w] -> [b, c*bs*bs, h, w].
        let split = AxisOp::Reshape(
            2,
            tvec![shape[2].clone(), shape[3].clone()],
            tvec![h.clone(), block.clone(), w.clone(), block.clone()],
        );
        let mut wire = model.wire_node(format!("{prefix}.split"), split, &[inputs[0]])?[0];
        // Axis 3 (block row) to 2, then axis 5 (block column) to 3.
        wire = model.wire_node(format!("{prefix}.block_row"), AxisOp::Move(3, 2), &[wire])?[0];
        wire = model.wire_node(format!("{prefix}.block_col"), AxisOp::Move(5, 3), &[wire])?[0];
        let merge = AxisOp::Reshape(
            1,
            tvec![shape[1].clone(), block.clone(), block.clone()],
            tvec![shape[1].clone() * (bs * bs) as i64],
        );
        model.wire_node(prefix, merge, &[wire])
    }
}
