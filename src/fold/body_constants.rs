//! `Constant` nodes of `Loop` and `Scan` bodies become initializers of those bodies.
//!
//! `fold` folds `If` branches as models of their own (`branches`), but leaves `Loop` and `Scan` bodies
//! as they were read; their `Constant` nodes (torchvision's mask-pasting `Loop` has 62) are each a
//! node the runtime schedules every iteration. A `Constant` holding a tensor (`value`) becomes an
//! initializer of the body it is in, under its output's name (the name and its scope do not change);
//! the other forms (`value_float`, `value_ints`, ...) and sparse values stay. Only for IR version 4 and
//! later, where a graph's initializers need not be listed among its inputs.

use super::Report;
use crate::onnx::node::{is_onnx, op_type};
use crate::schema::proto::{GraphProto, NodeProto, TensorProto};

/// Moves the tensor `Constant`s of every `Loop` and `Scan` body under `graph` (nested subgraphs
/// too, up to `depth_left` deep) into their body's initializers; returns whether anything changed.
pub(crate) fn body_constants(graph: &mut GraphProto, depth_left: usize, report: &mut Report) -> bool {
    let mut changed = false;
    if depth_left == 0 {
        return false;
    }
    for node in &mut graph.node {
        let body_op = is_onnx(node) && matches!(op_type(node), "Loop" | "Scan");
        for attr in &mut node.attribute {
            for g in attr.g.iter_mut().chain(attr.graphs.iter_mut()) {
                if body_op {
                    changed |= constants_to_initializers(g, report);
                }
                changed |= body_constants(g, depth_left - 1, report);
            }
        }
    }
    changed
}

/// The tensor of a `Constant` node given as `value`, named after its one output.
fn constant_tensor(node: &NodeProto) -> Option<TensorProto> {
    if !is_onnx(node) || op_type(node) != "Constant" || node.output.len() != 1 || node.attribute.len() != 1 {
        return None;
    }
    let attr = &node.attribute[0];
    if attr.name.as_deref() != Some("value") || attr.ref_attr_name.as_deref().is_some_and(|r| !r.is_empty()) {
        return None;
    }
    let mut t = attr.t.clone()?;
    let name = node.output[0].clone();
    if name.is_empty() {
        return None;
    }
    t.name = Some(name);
    Some(t)
}

fn constants_to_initializers(body: &mut GraphProto, report: &mut Report) -> bool {
    let before = body.node.len();
    let mut kept = Vec::with_capacity(before);
    for node in std::mem::take(&mut body.node) {
        match constant_tensor(&node) {
            Some(t) => body.initializer.push(t),
            None => kept.push(node),
        }
    }
    body.node = kept;
    let moved = before - body.node.len();
    report.count("Constant of a Loop or Scan body made an initializer", moved);
    moved > 0
}
