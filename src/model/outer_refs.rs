//! The values a node reads: its inputs, and the outer values its subgraphs (a `Loop` body, an `If`
//! branch, a `Scan` body, nested at any depth) read from the enclosing graphs.
//!
//! ONNX lets a subgraph name any value of an enclosing scope; that reference is an edge of the outer
//! graph as much as a node input is, so the cycle check counts it: a `Loop` body reading a value
//! computed from the `Loop`'s own outputs, or an `If` branch reading the `If`'s output, is a cycle.

use std::collections::HashSet;
use tract_onnx::pb;

/// The names `node` reads in its own graph: its non-empty inputs, then the free names of its
/// subgraphs (each once, in the order first met).
pub(crate) fn reads(node: &pb::NodeProto) -> Vec<&str> {
    let mut seen = HashSet::new();
    let mut names: Vec<&str> = node.input.iter().filter(|i| !i.is_empty()).map(String::as_str).collect();
    let inputs: HashSet<&str> = names.iter().copied().collect();
    for g in subgraphs(node) {
        for name in free_names(g) {
            if !inputs.contains(name) && seen.insert(name) {
                names.push(name);
            }
        }
    }
    names
}

/// The subgraphs held by the attributes of `node`.
pub(crate) fn subgraphs(node: &pb::NodeProto) -> impl Iterator<Item = &pb::GraphProto> {
    node.attribute.iter().flat_map(|a| a.g.iter().chain(a.graphs.iter()))
}

/// The names `graph` reads but does not define: the inputs of its nodes, the free names of their
/// subgraphs and its outputs, less its inputs, initializers and node outputs.
/// An explicit stack, so that deeply nested subgraphs cannot overflow the thread's stack.
fn free_names(graph: &pb::GraphProto) -> Vec<&str> {
    // Each frame: a graph and the names it defines; names read in it are free unless some frame from
    // it outwards (up to `graph`) defines them.
    struct Frame<'a> {
        defined: HashSet<&'a str>,
        parent: Option<usize>,
    }
    let mut frames: Vec<Frame> = vec![];
    let mut todo: Vec<(&pb::GraphProto, Option<usize>)> = vec![(graph, None)];
    let mut free = vec![];
    let mut seen = HashSet::new();
    while let Some((g, parent)) = todo.pop() {
        let mut defined: HashSet<&str> = g.input.iter().map(|i| i.name.as_str()).collect();
        defined.extend(g.initializer.iter().map(|t| t.name.as_str()));
        defined.extend(g.sparse_initializer.iter().filter_map(|s| s.values.as_ref()).map(|t| t.name.as_str()));
        defined.extend(g.node.iter().flat_map(|n| n.output.iter()).filter(|o| !o.is_empty()).map(String::as_str));
        frames.push(Frame { defined, parent });
        let me = frames.len() - 1;
        let used = g
            .node
            .iter()
            .flat_map(|n| n.input.iter())
            .chain(g.output.iter().map(|o| &o.name))
            .filter(|n| !n.is_empty());
        for name in used {
            let mut frame = Some(me);
            let mut bound = false;
            while let Some(f) = frame {
                if frames[f].defined.contains(name.as_str()) {
                    bound = true;
                    break;
                }
                frame = frames[f].parent;
            }
            if !bound && seen.insert(name.as_str()) {
                free.push(name.as_str());
            }
        }
        for node in &g.node {
            for sub in subgraphs(node) {
                todo.push((sub, Some(me)));
            }
        }
    }
    free
}
