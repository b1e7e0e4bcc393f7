//! Editing a graph in place: who produces and who reads each value, renaming a value everywhere it
//! is read (subgraphs included). Node and attribute access is [`crate::onnx::node`]'s.

use crate::schema::proto::GraphProto;
use std::collections::{HashMap, HashSet};

/// How many times each value is read: by nodes (subgraphs' reads of outer values included) and as a
/// graph output.
pub(crate) fn readers(graph: &GraphProto) -> HashMap<String, usize> {
    let mut count: HashMap<String, usize> = HashMap::new();
    for n in &graph.node {
        for i in n.input.iter().filter(|i| !i.is_empty()) {
            *count.entry(i.clone()).or_default() += 1;
        }
        for a in &n.attribute {
            for g in a.g.iter().chain(a.graphs.iter()) {
                for name in crate::onnx::names_read(g) {
                    *count.entry(name).or_default() += 1;
                }
            }
        }
    }
    for o in &graph.output {
        if let Some(name) = &o.name {
            *count.entry(name.clone()).or_default() += 1;
        }
    }
    count
}

/// The node index producing each value.
pub(crate) fn producers(graph: &GraphProto) -> HashMap<String, usize> {
    let mut map = HashMap::new();
    for (ix, n) in graph.node.iter().enumerate() {
        for o in n.output.iter().filter(|o| !o.is_empty()) {
            map.insert(o.clone(), ix);
        }
    }
    map
}

/// The names of the graph outputs.
pub(crate) fn output_names(graph: &GraphProto) -> HashSet<String> {
    graph.output.iter().filter_map(|o| o.name.clone()).collect()
}

/// Makes every reader of `from` read `to` instead (node inputs, subgraphs reading it from the outer
/// scope), except a graph output, which keeps its name.
pub(crate) fn rename_reads(graph: &mut GraphProto, from: &str, to: &str) {
    for n in &mut graph.node {
        for i in &mut n.input {
            if i == from {
                *i = to.to_string();
            }
        }
        for a in &mut n.attribute {
            for g in a.g.iter_mut().chain(a.graphs.iter_mut()) {
                if !crate::onnx::defined_names(g).any(|n| n == from) {
                    rename_reads(g, from, to);
                    for o in &mut g.output {
                        if o.name.as_deref() == Some(from) {
                            // A subgraph output naming an outer value: the outer value's new name.
                            o.name = Some(to.to_string());
                        }
                    }
                }
            }
        }
    }
}

/// A name no value, initializer or input of `graph` has: `base`, else `base_1`, `base_2`...
/// (nor any of its subgraphs, which a new name would otherwise shadow).
pub(crate) fn fresh_name(graph: &GraphProto, base: &str) -> String {
    fresh_name_in(&crate::onnx::names_defined_deep(graph), base)
}

/// A name not in `taken`: `base`, else `base_1`, `base_2`...
pub(crate) fn fresh_name_in(taken: &HashSet<String>, base: &str) -> String {
    first_free(base, |n| taken.contains(n))
}

fn first_free(base: &str, taken: impl Fn(&str) -> bool) -> String {
    if !taken(base) {
        return base.to_string();
    }
    (1u64..).map(|i| format!("{base}_{i}")).find(|n| !taken(n)).expect("an unused name")
}

/// Renames a value `graph` defines (a node output, an initializer) and every read of it, its own
/// outputs included.
pub(crate) fn rename_defined(graph: &mut GraphProto, from: &str, to: &str) {
    rename_reads(graph, from, to);
    for n in &mut graph.node {
        for out in n.output.iter_mut().filter(|o| *o == from) {
            *out = to.to_string();
        }
    }
    for t in graph.initializer.iter_mut().filter(|t| t.name.as_deref() == Some(from)) {
        t.name = Some(to.to_string());
    }
    for v in graph.sparse_initializer.iter_mut().filter_map(|s| s.values.as_mut()) {
        if v.name.as_deref() == Some(from) {
            v.name = Some(to.to_string());
        }
    }
    for o in graph.output.iter_mut().chain(graph.value_info.iter_mut()) {
        if o.name.as_deref() == Some(from) {
            o.name = Some(to.to_string());
        }
    }
}

/// Removes the nodes at the indices in `remove`, keeping the others in order.
pub(crate) fn remove_nodes(graph: &mut GraphProto, remove: &HashSet<usize>) {
    let mut ix = 0;
    graph.node.retain(|_| {
        ix += 1;
        !remove.contains(&(ix - 1))
    });
}
