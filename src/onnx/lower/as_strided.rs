//! AsStrided and ATen `as_strided`: a flat Reshape, then one Slice for a contiguous view or a Gather
//! over a constant index table.

use super::emit::Lowering;
use crate::onnx::node::int_attr;
use crate::onnx::tensor_to_proto;
use crate::schema::proto::NodeProto;
use crate::semantics::AsStrided;
use crate::view::View;
use anyhow::{bail, Context};
use tract_onnx::prelude::*;

/// The largest index table an AsStrided may lower to.
const MAX_TABLE: usize = 1 << 26;

impl Lowering<'_> {
    /// `op` over the node's data input, as standard nodes.
    pub(super) fn as_strided(&mut self, node: &NodeProto, op: AsStrided) -> anyhow::Result<Vec<NodeProto>> {
        op.check()?;
        let data = node.input.first().filter(|s| !s.is_empty()).cloned().context("the data input is missing")?;
        if let Some(shape) = self.shape_of(&data) {
            let dims: Option<Vec<i64>> = shape.iter().map(|d| d.as_i64()).collect();
            if let Some(dims) = dims {
                op.resolve(&dims)?;
            }
        }
        let view = View::<i64> {
            offset: op.offset,
            axes: op.size.iter().zip(&op.stride).map(|(&len, &stride)| crate::view::ViewAxis { len, stride }).collect(),
        }
        .normalized();
        let numel = view.numel().context("output size overflows")?;
        let output = node.output.first().cloned();
        let mut nodes = vec![];
        let flat_shape = self.init_i64(node, "flat", &[-1])?;
        let (n, flat) = self.new_node(node, "Reshape", vec![data, flat_shape], None, vec![]);
        nodes.push(n);
        let size = self.init_i64(node, "size", &op.size)?;
        if view.is_contiguous() {
            let end = view.offset.checked_add(numel as i64).context("view extent overflows")?;
            let (s, e, a) = (
                self.init_i64(node, "starts", &[view.offset])?,
                self.init_i64(node, "ends", &[end])?,
                self.init_i64(node, "axes", &[0])?,
            );
            let (n, run) = self.new_node(node, "Slice", vec![flat, s, e, a], None, vec![]);
            nodes.push(n);
            let (n, _) = self.new_node(node, "Reshape", vec![run, size], output, vec![]);
            nodes.push(n);
            return Ok(nodes);
        }
        // Every index of the table lies within the view's extent, which must fit i64.
        view.index_range()?;
        let shape: Vec<usize> = op.size.iter().map(|&s| s as usize).collect();
        if !crate::kernel::representable(&shape, 8) {
            bail!("an index table of shape {shape:?} cannot be represented");
        }
        if numel as usize > MAX_TABLE {
            bail!("as_strided of {numel} elements needs an index table larger than {MAX_TABLE} entries");
        }
        // The table: offset + Σ j_k * stride_k for every output index, shaped like the output.
        let mut table = Vec::with_capacity(numel as usize);
        let mut index = vec![0i64; op.size.len()];
        for _ in 0..numel {
            let flat_ix =
                index.iter().zip(&op.stride).try_fold(op.offset, |acc, (j, s)| acc.checked_add(j.checked_mul(*s)?));
            table.push(flat_ix.context("an index of the view overflows i64")?);
            for k in (0..index.len()).rev() {
                index[k] += 1;
                if index[k] < op.size[k] {
                    break;
                }
                index[k] = 0;
            }
        }
        let name = self.fresh(node, "indices");
        let t = tract_ndarray::ArrayD::from_shape_vec(shape, table)?.into_tensor();
        self.inits.push(tensor_to_proto(&name, &t)?);
        let (n, _) = self.new_node(node, "Gather", vec![flat, name], output, vec![int_attr("axis", 0)]);
        nodes.push(n);
        Ok(nodes)
    }
}
