//! Loading model files safely, before tract sees them: the file itself ([`read_model_file`]: a regular
//! file, at most protobuf's 2 GiB), then the decoded model ([`prepare_for_tract`]): every tensor's
//! external data checked and read by us into `raw_data`, so tract never opens a file, and
//! `uint64_data` moved into `raw_data` where tract cannot read it.

mod external;
mod uint;

pub use external::{inline_tensor, read_external, TensorFields};
pub use uint::uint64_data_to_raw;

use std::path::Path;
use tract_onnx::pb;

/// The largest model file read: protobuf messages cannot exceed 2 GiB.
pub const MAX_MODEL_BYTES: u64 = i32::MAX as u64;

/// Reads a model file: only a regular file (FIFOs, devices and directories are refused by name), at
/// most [`MAX_MODEL_BYTES`], checked before reading.
pub fn read_model_file(path: &Path) -> anyhow::Result<Vec<u8>> {
    crate::io::regular::read_regular(path, MAX_MODEL_BYTES, "an ONNX model is at most 2 GiB (protobuf's limit)")
}

/// Calls `f` on every tensor of a model tract reads: initializers and sparse initializers of the main
/// graph and of every subgraph, tensors in node attributes (graphs and functions). An explicit stack,
/// not recursion, walks the subgraphs.
pub fn for_each_tensor(
    model: &mut pb::ModelProto,
    f: &mut dyn FnMut(&mut pb::TensorProto) -> anyhow::Result<()>,
) -> anyhow::Result<()> {
    let mut graphs: Vec<&mut pb::GraphProto> = model.graph.iter_mut().collect();
    let mut nodes: Vec<&mut pb::NodeProto> = model.functions.iter_mut().flat_map(|func| func.node.iter_mut()).collect();
    loop {
        if let Some(node) = nodes.pop() {
            for attr in node.attribute.iter_mut() {
                let pb::AttributeProto { t, tensors, sparse_tensor, sparse_tensors, g, graphs: subgraphs, .. } = attr;
                for tensor in t.iter_mut().chain(tensors.iter_mut()) {
                    f(tensor)?;
                }
                for sparse in sparse_tensor.iter_mut().chain(sparse_tensors.iter_mut()) {
                    for tensor in sparse.values.iter_mut().chain(sparse.indices.iter_mut()) {
                        f(tensor)?;
                    }
                }
                graphs.extend(g.iter_mut().chain(subgraphs.iter_mut()));
            }
        } else if let Some(graph) = graphs.pop() {
            let pb::GraphProto { node, initializer, sparse_initializer, .. } = graph;
            for tensor in initializer.iter_mut() {
                f(tensor)?;
            }
            for sparse in sparse_initializer.iter_mut() {
                for tensor in sparse.values.iter_mut().chain(sparse.indices.iter_mut()) {
                    f(tensor)?;
                }
            }
            nodes.extend(node.iter_mut());
        } else {
            return Ok(());
        }
    }
}

/// Prepares a decoded model for tract: external data read (and checked) from `dir`, the model's
/// folder, into `raw_data`; `uint64_data` moved into `raw_data`.
pub fn prepare_for_tract(model: &mut pb::ModelProto, dir: Option<&Path>) -> anyhow::Result<()> {
    for_each_tensor(model, &mut |t| {
        inline_tensor(t, dir)?;
        uint64_data_to_raw(t)
    })
}
