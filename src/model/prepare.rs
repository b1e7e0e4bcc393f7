//! What is done to a decoded model before tract-onnx parses it: structural checks (every input
//! defined, no cycle), unique node names, and symbolic dims removed from the declared types (the
//! analysis binds the inputs itself, so tract's own reading of `dim_param` text is never needed).

use crate::plan::names::NameIndex;
use anyhow::bail;
use tract_onnx::pb;

/// The model tract-onnx parses: node names made unique, `dim_param` text removed everywhere (graph
/// inputs, outputs and value infos, in subgraphs too).
pub(crate) fn for_tract(proto: &pb::ModelProto) -> pb::ModelProto {
    let mut prepared = unique_node_names(proto).unwrap_or_else(|| proto.clone());
    if let Some(graph) = prepared.graph.as_mut() {
        strip_dim_params(graph);
    }
    for f in &mut prepared.functions {
        for node in &mut f.node {
            strip_in_attributes(node);
        }
    }
    prepared
}

fn strip_dim_params(graph: &mut pb::GraphProto) {
    for info in graph.input.iter_mut().chain(graph.output.iter_mut()).chain(graph.value_info.iter_mut()) {
        strip_type(info.r#type.as_mut());
    }
    for node in &mut graph.node {
        strip_in_attributes(node);
    }
}

fn strip_in_attributes(node: &mut pb::NodeProto) {
    for attr in &mut node.attribute {
        for g in attr.g.iter_mut().chain(attr.graphs.iter_mut()) {
            strip_dim_params(g);
        }
    }
}

fn strip_type(t: Option<&mut pb::TypeProto>) {
    use pb::tensor_shape_proto::dimension::Value;
    let Some(t) = t else { return };
    match t.value.as_mut() {
        Some(pb::type_proto::Value::TensorType(tensor)) => {
            for d in tensor.shape.iter_mut().flat_map(|s| s.dim.iter_mut()) {
                if matches!(d.value, Some(Value::DimParam(_))) {
                    d.value = None;
                }
            }
        }
        None => {}
    }
}

/// The model with its nodes renamed where two share a name (`name`, then `name.1`, `name.2`, ..), or
/// `None` if every name is already unique. tract names a node after its name, else its first output, and
/// refuses duplicates ("Duplicate node name"), which ONNX allows: names are for diagnostics. Unique names
/// also let translation skip tract's scan of every node for a duplicate, quadratic over a large graph.
pub(crate) fn unique_node_names(proto: &pb::ModelProto) -> Option<pb::ModelProto> {
    use std::collections::HashSet;
    let effective =
        |n: &pb::NodeProto| if n.name.is_empty() { n.output.first().cloned() } else { Some(n.name.clone()) };
    let nodes = &proto.graph.as_ref()?.node;
    let mut seen = HashSet::new();
    if nodes.iter().filter_map(effective).all(|name| seen.insert(name)) {
        return None;
    }
    let mut renamed = proto.clone();
    let graph = renamed.graph.as_mut()?;
    let mut taken = NameIndex::of(graph.node.iter().filter_map(effective));
    let mut seen = HashSet::new();
    for node in &mut graph.node {
        let Some(name) = effective(node) else { continue };
        if !seen.insert(name.clone()) {
            let fresh = taken.suffixed(&name);
            taken.add(&fresh);
            seen.insert(fresh.clone());
            node.name = fresh;
        }
    }
    Some(renamed)
}

/// Structural checks of a graph before tract sees it: every node input is defined (by a graph input, an
/// initializer, dense or sparse, or a node), and the nodes have no cycle. Errors name a node.
pub(crate) fn check_structure(graph: &pb::GraphProto) -> anyhow::Result<()> {
    use std::collections::{HashMap, HashSet};
    let invalid = |n: &pb::NodeProto, message: String| crate::node::node_label(n).err(message);
    let mut defined: HashSet<&str> = graph.input.iter().map(|i| i.name.as_str()).collect();
    defined.extend(graph.initializer.iter().map(|t| t.name.as_str()));
    defined.extend(graph.sparse_initializer.iter().filter_map(|s| s.values.as_ref()).map(|t| t.name.as_str()));
    let mut producer: HashMap<&str, usize> = HashMap::new();
    for (ix, node) in graph.node.iter().enumerate() {
        for o in node.output.iter().filter(|o| !o.is_empty()) {
            producer.insert(o.as_str(), ix);
        }
    }
    for node in &graph.node {
        for input in node.input.iter().filter(|i| !i.is_empty()) {
            if !defined.contains(input.as_str()) && !producer.contains_key(input.as_str()) {
                let message = format!("input '{input}' is not defined by any graph input, initializer or node");
                return Err(invalid(node, message));
            }
        }
    }
    for output in &graph.output {
        if !defined.contains(output.name.as_str()) && !producer.contains_key(output.name.as_str()) {
            bail!("graph output '{}' is not defined by any graph input, initializer or node", output.name);
        }
    }
    check_acyclic(graph)
}

/// No cycle among the nodes of `graph`, counting the outer values their subgraphs read as inputs
/// ([`super::outer_refs`]), nor inside any of its subgraphs. Errors name a node on or behind a cycle.
fn check_acyclic(graph: &pb::GraphProto) -> anyhow::Result<()> {
    // An explicit stack of graphs: nesting depth cannot overflow the thread's stack.
    let mut todo = vec![graph];
    while let Some(g) = todo.pop() {
        check_acyclic_one(g)?;
        todo.extend(g.node.iter().flat_map(super::outer_refs::subgraphs));
    }
    Ok(())
}

/// Kahn's algorithm over the nodes of one graph: whatever cannot be ordered is on or behind a cycle.
fn check_acyclic_one(graph: &pb::GraphProto) -> anyhow::Result<()> {
    use std::collections::HashMap;
    let mut producer: HashMap<&str, usize> = HashMap::new();
    for (ix, node) in graph.node.iter().enumerate() {
        for o in node.output.iter().filter(|o| !o.is_empty()) {
            producer.insert(o.as_str(), ix);
        }
    }
    let reads: Vec<Vec<&str>> = graph.node.iter().map(super::outer_refs::reads).collect();
    let mut pending: Vec<usize> =
        reads.iter().map(|r| r.iter().filter(|i| producer.contains_key(*i)).count()).collect();
    let mut readers: HashMap<usize, Vec<usize>> = HashMap::new();
    for (ix, names) in reads.iter().enumerate() {
        for input in names {
            if let Some(&p) = producer.get(input) {
                readers.entry(p).or_default().push(ix);
            }
        }
    }
    let mut ready: Vec<usize> = (0..graph.node.len()).filter(|&i| pending[i] == 0).collect();
    let mut ordered = 0;
    while let Some(ix) = ready.pop() {
        ordered += 1;
        for &r in readers.get(&ix).map(Vec::as_slice).unwrap_or(&[]) {
            pending[r] -= 1;
            if pending[r] == 0 {
                ready.push(r);
            }
        }
    }
    if ordered < graph.node.len() {
        // From an unordered node, step to an unordered producer of what it reads until a node comes
        // again: that one is on a cycle, and so is the value it was left through.
        let mut at = (0..graph.node.len()).find(|&i| pending[i] > 0).expect("some node is not ordered");
        let mut visited = vec![false; graph.node.len()];
        let (on_cycle, through) = loop {
            let (name, p) = reads[at]
                .iter()
                .find_map(|name| producer.get(name).filter(|&&p| pending[p] > 0).map(|&p| (*name, p)))
                .expect("an unordered node reads an unordered one");
            if visited[at] {
                break (at, name);
            }
            visited[at] = true;
            at = p;
        };
        let node = &graph.node[on_cycle];
        let how = if node.input.iter().any(|i| i == through) {
            format!("it reads '{through}'")
        } else {
            format!("a subgraph of it reads '{through}' from the graph")
        };
        let message = format!("the graph is not acyclic: it has a cycle through this node ({how})");
        return Err(crate::node::node_label(node).err(message));
    }
    Ok(())
}
