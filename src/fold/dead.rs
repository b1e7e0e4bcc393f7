//! Removing what nothing reads: nodes (repeatedly, as their readers go) and initializers.

use super::Report;
use crate::schema::proto::GraphProto;
use std::collections::HashSet;

/// Removes dead nodes and initializers; `outside` are names read from outside the graph (training
/// info, quantization annotations). Returns whether anything changed.
pub(crate) fn remove_dead(graph: &mut GraphProto, outside: &HashSet<String>, report: &mut Report) -> bool {
    let read = |g: &GraphProto| -> HashSet<String> {
        let mut r = crate::onnx::names_read(g);
        r.extend(outside.iter().cloned());
        r
    };
    let before = graph.node.len();
    loop {
        let r = read(graph);
        let n = graph.node.len();
        graph.node.retain(|node| node.output.iter().any(|o| !o.is_empty() && r.contains(o)));
        if graph.node.len() == n {
            break;
        }
    }
    let dead_nodes = before - graph.node.len();
    report.count("dead nodes removed", dead_nodes);
    let r = read(graph);
    let unused: HashSet<String> =
        graph.initializer.iter().filter_map(|t| t.name.clone()).filter(|n| !r.contains(n)).collect();
    graph.initializer.retain(|t| t.name.as_ref().is_none_or(|n| !unused.contains(n)));
    // An initializer listed among the inputs (IR < 4 style) goes with it.
    graph.input.retain(|i| i.name.as_ref().is_none_or(|n| !unused.contains(n)));
    report.count("unused initializers removed", unused.len());
    dead_nodes > 0 || !unused.is_empty()
}
