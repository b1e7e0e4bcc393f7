//! ONNX models as data, for the write-back: node and tensor helpers over our IR schema
//! (`schema`), the facts of a model's values written into it as `value_info` (`Facts`),
//! external data placed beside a model, and [`lower`] (our ops rewritten into standard ONNX).
//!
//! Models are decoded into these types, edited, and encoded again, so every field the transform does
//! not touch (metadata, doc strings, opset imports, functions, training info, unknown domains' nodes)
//! is written back as it was read.

mod annotate;
mod external;
mod facts;
mod lower;
pub(crate) mod node;
pub(crate) mod tensor;

pub use crate::schema::proto;

pub(crate) use annotate::{annotate, annotate_values, type_of};
pub(crate) use external::{write_model_file, Placement};
pub(crate) use facts::{Fact, Facts, SMALL};
pub use lower::{lower, lower_model, LowerReport};
pub(crate) use tensor::{f32s_of, tensor_to_proto};
pub(crate) use tensor::{ints_of, type_proto};

use std::collections::HashSet;

/// Every value name a graph reads, including those its subgraphs read from the enclosing scopes.
pub(crate) fn names_read(graph: &proto::GraphProto) -> HashSet<String> {
    let mut used: HashSet<String> = HashSet::new();
    for node in &graph.node {
        used.extend(node.input.iter().filter(|s| !s.is_empty()).cloned());
        for attr in &node.attribute {
            for g in attr.g.iter().chain(attr.graphs.iter()) {
                used.extend(names_read(g));
            }
        }
    }
    used.extend(graph.output.iter().filter_map(|o| o.name.clone()));
    used
}

/// The names a graph defines itself: its inputs, initializers (dense and sparse) and node outputs
/// (a subgraph defining a name hides the outer value of that name).
pub(crate) fn defined_names(graph: &proto::GraphProto) -> impl Iterator<Item = &str> {
    let inputs = graph.input.iter().filter_map(|i| i.name.as_deref());
    let dense = graph.initializer.iter().filter_map(|t| t.name.as_deref());
    let sparse = graph.sparse_initializer.iter().filter_map(|s| s.values.as_ref()?.name.as_deref());
    let outputs = graph.node.iter().flat_map(|n| n.output.iter().map(String::as_str).filter(|o| !o.is_empty()));
    inputs.chain(dense).chain(sparse).chain(outputs)
}

/// [`defined_names`], as a set.
pub(crate) fn names_defined(graph: &proto::GraphProto) -> HashSet<String> {
    defined_names(graph).map(str::to_string).collect()
}

/// The names a subgraph reads from the scopes around it: what it or its own subgraphs read (graph
/// outputs included) and no graph on the way defines.
pub(crate) fn outer_reads(graph: &proto::GraphProto) -> HashSet<String> {
    let defined = names_defined(graph);
    let mut read: HashSet<String> = HashSet::new();
    for node in &graph.node {
        read.extend(node.input.iter().filter(|s| !s.is_empty()).cloned());
        for attr in &node.attribute {
            for g in attr.g.iter().chain(attr.graphs.iter()) {
                read.extend(outer_reads(g));
            }
        }
    }
    read.extend(graph.output.iter().filter_map(|o| o.name.clone()));
    read.retain(|n| !defined.contains(n));
    read
}

/// Every name defined anywhere in a graph: by it and, recursively, by its subgraphs.
pub(crate) fn names_defined_deep(graph: &proto::GraphProto) -> HashSet<String> {
    let mut defined = names_defined(graph);
    for node in &graph.node {
        for attr in &node.attribute {
            for g in attr.g.iter().chain(attr.graphs.iter()) {
                defined.extend(names_defined_deep(g));
            }
        }
    }
    defined
}
