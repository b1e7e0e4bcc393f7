//! Common subexpressions: two nodes of the same op, attributes and inputs compute the same values,
//! so the second goes and its readers read the first (exporters repeat `Shape(x)` and its casts once
//! per use). Ops that draw random numbers, and nodes with subgraphs, are never merged.

use super::graph::{output_names, rename_reads};
use super::Report;
use crate::onnx::node::{has_subgraphs, op_type};
use crate::schema::proto::GraphProto;
use prost::Message;
use std::collections::{HashMap, HashSet};

const RANDOM: &[&str] =
    &["RandomNormal", "RandomUniform", "RandomNormalLike", "RandomUniformLike", "Multinomial", "Bernoulli", "Dropout"];

/// Merges repeated nodes; returns whether anything changed.
pub(crate) fn merge_repeats(graph: &mut GraphProto, report: &mut Report) -> bool {
    let outputs = output_names(graph);
    let mut alias: HashMap<String, String> = HashMap::new();
    let mut seen: HashMap<Vec<u8>, usize> = HashMap::new();
    let mut removed: HashSet<usize> = HashSet::new();
    for ix in 0..graph.node.len() {
        // Inputs as their first occurrence names them.
        let node = &mut graph.node[ix];
        for i in &mut node.input {
            if let Some(a) = alias.get(i.as_str()) {
                *i = a.clone();
            }
        }
        let node = &graph.node[ix];
        if RANDOM.contains(&op_type(node)) || has_subgraphs(node) || node.output.iter().any(|o| outputs.contains(o)) {
            continue;
        }
        let mut key = vec![];
        key.extend(node.domain.clone().unwrap_or_default().into_bytes());
        key.push(0);
        key.extend(op_type(node).as_bytes());
        key.push(0);
        for i in &node.input {
            key.extend(i.as_bytes());
            key.push(0);
        }
        key.push(1);
        for a in &node.attribute {
            key.extend(a.encode_to_vec());
        }
        key.push(2);
        key.extend((node.output.len() as u64).to_le_bytes());
        match seen.get(&key) {
            Some(&first) => {
                let firsts = graph.node[first].output.clone();
                for (o, f) in graph.node[ix].output.clone().into_iter().zip(firsts) {
                    if !o.is_empty() && !f.is_empty() {
                        alias.insert(o, f);
                    }
                }
                removed.insert(ix);
            }
            None => {
                seen.insert(key, ix);
            }
        }
    }
    if removed.is_empty() {
        return false;
    }
    report.count("repeated nodes merged", removed.len());
    super::graph::remove_nodes(graph, &removed);
    if graph.node.iter().any(has_subgraphs) {
        for (from, to) in &alias {
            rename_reads(graph, from, to);
        }
    }
    true
}

/// Initializers holding the same values under different names become one (exporters repeat shape
/// constants per use), so the nodes reading them can merge too; returns whether anything changed.
pub(crate) fn merge_initializers(graph: &mut GraphProto, outside: &HashSet<String>, report: &mut Report) -> bool {
    let inputs: HashSet<String> = graph.input.iter().filter_map(|i| i.name.clone()).collect();
    let mut first: HashMap<Vec<u8>, String> = HashMap::new();
    let mut alias: HashMap<String, String> = HashMap::new();
    for t in &graph.initializer {
        let Some(name) = t.name.clone() else { continue };
        // An initializer that is also a graph input can be overridden by the caller: not merged.
        if inputs.contains(&name) || outside.contains(&name) || t.data_location.is_some_and(|l| l != 0) {
            continue;
        }
        let mut content = t.clone();
        content.name = None;
        content.doc_string = None;
        let key = content.encode_to_vec();
        match first.get(&key) {
            Some(f) => {
                alias.insert(name, f.clone());
            }
            None => {
                first.insert(key, name);
            }
        }
    }
    if alias.is_empty() {
        return false;
    }
    let outputs = output_names(graph);
    alias.retain(|from, _| !outputs.contains(from));
    for n in &mut graph.node {
        for i in &mut n.input {
            if let Some(a) = alias.get(i.as_str()) {
                *i = a.clone();
            }
        }
    }
    if graph.node.iter().any(has_subgraphs) {
        for (from, to) in &alias {
            rename_reads(graph, from, to);
        }
    }
    report.count("identical initializers merged", alias.len());
    !alias.is_empty()
}
