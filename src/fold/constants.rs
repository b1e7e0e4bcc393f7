//! Constant folding: a node whose outputs analysis computed becomes initializers holding them.
//!
//! Any op tract evaluates folds, over initializers, `Constant` nodes and `Shape` of known dims, under
//! one size rule so that folding never inflates the file: a node is folded when its outputs take at
//! most as many bytes as its constant inputs, or at most [`SMALL`] bytes. A `ConstantOfShape`,
//! `Expand`, `Tile` or `Range` larger than that stays, with its output shape written.

use super::Report;
use crate::onnx::node::{has_subgraphs, op_type};
use crate::onnx::Facts;
use crate::schema::proto::GraphProto;
use tract_onnx::prelude::*;

pub(crate) use crate::onnx::SMALL;

/// Folds what can be folded; returns whether anything changed.
pub(crate) fn fold_constants(graph: &mut GraphProto, facts: &Facts, report: &mut Report) -> anyhow::Result<bool> {
    let initializer_bytes: std::collections::HashMap<String, u64> =
        graph.initializer.iter().filter_map(|t| Some((t.name.clone()?, tensor_bytes(t)))).collect();
    let mut kept = Vec::with_capacity(graph.node.len());
    let mut new_inits = vec![];
    let mut changed = false;
    for node in std::mem::take(&mut graph.node) {
        let outputs: Vec<&String> = node.output.iter().filter(|o| !o.is_empty()).collect();
        let values: Option<Vec<Tensor>> = if outputs.is_empty() || has_subgraphs(&node) {
            None
        } else {
            outputs.iter().map(|o| facts.get(o).filter(|f| exact_type(f)).and_then(|f| f.concrete())).collect()
        };
        let Some(values) = values else {
            kept.push(node);
            continue;
        };
        let out_bytes: u64 = values.iter().map(|t| (t.len() * t.datum_type().size_of()) as u64).sum();
        let in_bytes: u64 = node
            .input
            .iter()
            .filter(|i| !i.is_empty())
            .map(|i| {
                initializer_bytes
                    .get(i)
                    .copied()
                    .or_else(|| facts.get(i).and_then(|f| f.konst.as_ref().map(|_| f.bytes().unwrap_or(0))))
                    .unwrap_or(0)
            })
            .sum();
        // A Constant node's value is in the file already.
        if op_type(&node) != "Constant" && out_bytes > in_bytes.max(SMALL) {
            kept.push(node);
            continue;
        }
        for (name, value) in outputs.iter().zip(&values) {
            new_inits.push(crate::onnx::tensor_to_proto(name, value)?);
        }
        let kind = if op_type(&node) == "Constant" {
            "Constant nodes made initializers"
        } else {
            "nodes folded into constants"
        };
        report.count(kind, 1);
        changed = true;
    }
    graph.node = kept;
    graph.initializer.extend(new_inits);
    Ok(changed)
}

/// Whether the fact's type is the one the model declares (a proxy type, bfloat16 held as float16,
/// does not fold: its bits would be written as another type).
pub(super) fn exact_type(f: &crate::onnx::Fact) -> bool {
    f.datum_type.is_tdim() || crate::npy::numpy_name(f.datum_type) == f.dtype_name
}

fn tensor_bytes(t: &crate::schema::proto::TensorProto) -> u64 {
    let raw = t.raw_data.as_ref().map_or(0, |r| r.len() as u64);
    let typed = (t.float_data.len() + t.int32_data.len()) as u64 * 4
        + (t.int64_data.len() + t.double_data.len() + t.uint64_data.len()) as u64 * 8;
    raw + typed
}
