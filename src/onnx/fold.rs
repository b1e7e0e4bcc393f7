//! `fold`: the model written back with what analysis computed.
//!
//! - every node whose outputs are all constant (a slice of an initializer, a Shape over known dims and
//!   what follows it) is replaced by initializers holding those values;
//! - nodes and initializers nothing reads any more are removed;
//! - every remaining value gets a `value_info` with its inferred type and shape (symbolic dims as
//!   `dim_param` expressions), and graph outputs get their inferred type;
//! - everything else (metadata, doc strings, opset imports, functions, nodes of unknown domains,
//!   subgraphs) is written back as it was.

use super::proto::{self, type_proto};
use super::{names_read, tensor_to_proto, type_proto};
use crate::Model;
use prost::Message;
use std::collections::{HashMap, HashSet};
use std::path::Path;
use tract_onnx::prelude::*;
use tract_onnx::tract_hir::internal::*;

/// Folds a model (its bytes); `dir` is where its external data lives.
pub fn fold(bytes: &[u8], dir: Option<&Path>) -> anyhow::Result<Vec<u8>> {
    let mut model = proto::ModelProto::decode(bytes).map_err(|e| anyhow::anyhow!("not a valid ONNX model: {e}"))?;
    let loaded = Model::load_bytes_in(bytes, dir)?;
    let facts = loaded.value_facts()?;
    // Names the main graph's values are known by outside its nodes: training info binds and reads
    // initializers; they must outlive folding.
    let mut outside: HashSet<String> = HashSet::new();
    for t in &model.training_info {
        for b in t.initialization_binding.iter().chain(&t.update_binding) {
            outside.extend(b.key.clone());
            outside.extend(b.value.clone());
        }
        for g in t.initialization.iter().chain(&t.algorithm) {
            outside.extend(names_read(g));
        }
    }
    let graph = model.graph.as_mut().ok_or_else(|| anyhow::anyhow!("not a valid ONNX model: it has no graph"))?;
    fold_graph(graph, &facts, &outside)?;
    Ok(model.encode_to_vec())
}

/// The constant value of a fact, if analysis found one and it is concrete.
fn constant(fact: &InferenceFact) -> Option<Tensor> {
    let value = fact.value.concretize()?;
    if value.datum_type() == DatumType::TDim {
        return value.cast_to::<i64>().ok().map(|t| t.into_owned());
    }
    Some(value.into_tensor())
}

fn known_type(fact: &InferenceFact) -> Option<proto::TypeProto> {
    let dt = fact.datum_type.concretize()?;
    let shape = fact.shape.concretize()?;
    type_proto(dt, &shape).ok()
}

fn fold_graph(
    graph: &mut proto::GraphProto,
    facts: &HashMap<String, InferenceFact>,
    outside: &HashSet<String>,
) -> anyhow::Result<()> {
    // Quantization annotations name values and their parameter tensors: all stay.
    let mut outside = outside.clone();
    for a in &graph.quantization_annotation {
        outside.extend(a.tensor_name.clone());
        outside.extend(a.quant_parameter_tensor_names.iter().filter_map(|e| e.value.clone()));
    }
    // 1. Nodes whose outputs are all known constants become initializers.
    let mut new_inits = vec![];
    let mut kept = vec![];
    for node in std::mem::take(&mut graph.node) {
        let outputs: Vec<&String> = node.output.iter().filter(|o| !o.is_empty()).collect();
        let values: Option<Vec<Tensor>> = outputs.iter().map(|o| facts.get(o.as_str()).and_then(constant)).collect();
        match values {
            Some(values) if !outputs.is_empty() => {
                for (name, value) in outputs.iter().zip(values) {
                    new_inits.push(tensor_to_proto(name, &value)?);
                }
            }
            _ => kept.push(node),
        }
    }
    graph.node = kept;
    graph.initializer.extend(new_inits);

    // 2. Remove what nothing reads, until nothing changes.
    let names_read = |g: &proto::GraphProto| -> HashSet<String> {
        let mut read = names_read(g);
        read.extend(outside.iter().cloned());
        read
    };
    loop {
        let read = names_read(graph);
        let before = graph.node.len();
        graph.node.retain(|n| n.output.iter().any(|o| !o.is_empty() && read.contains(o)));
        if graph.node.len() == before {
            break;
        }
    }
    let read = names_read(graph);
    let dropped: HashSet<String> =
        graph.initializer.iter().filter_map(|t| t.name.clone()).filter(|n| !read.contains(n)).collect();
    graph.initializer.retain(|t| t.name.as_ref().is_none_or(|n| !dropped.contains(n)));
    // An initializer listed among the inputs (IR < 4 style) goes with it.
    graph.input.retain(|i| i.name.as_ref().is_none_or(|n| !dropped.contains(n)));

    // 3. A value_info for every value a node produces; graph outputs get their inferred type.
    let outputs: HashSet<String> = graph.output.iter().filter_map(|o| o.name.clone()).collect();
    let mut existing: HashMap<String, proto::ValueInfoProto> =
        std::mem::take(&mut graph.value_info).into_iter().filter_map(|v| Some((v.name.clone()?, v))).collect();
    let mut infos = vec![];
    for node in &graph.node {
        for name in node.output.iter().filter(|o| !o.is_empty() && !outputs.contains(*o)) {
            let mut info = existing
                .remove(name)
                .unwrap_or_else(|| proto::ValueInfoProto { name: Some(name.clone()), ..Default::default() });
            if let Some(t) = facts.get(name).and_then(known_type) {
                info.r#type = Some(merge_type(info.r#type.take(), t));
            }
            if info.r#type.is_some() {
                infos.push(info);
            }
        }
    }
    graph.value_info = infos;
    for output in &mut graph.output {
        if let Some(t) = output.name.as_ref().and_then(|n| facts.get(n)).and_then(known_type) {
            output.r#type = Some(merge_type(output.r#type.take(), t));
        }
    }
    Ok(())
}

/// The inferred tensor type, keeping the declared type's other fields: its denotation, and each dim's
/// denotation where the ranks agree.
fn merge_type(declared: Option<proto::TypeProto>, inferred: proto::TypeProto) -> proto::TypeProto {
    let Some(mut declared) = declared else { return inferred };
    let Some(type_proto::Value::TensorType(mut new)) = inferred.value else { return declared };
    match &declared.value {
        Some(type_proto::Value::TensorType(old)) => {
            if let (Some(old_shape), Some(new_shape)) = (&old.shape, &mut new.shape) {
                if old_shape.dim.len() == new_shape.dim.len() {
                    for (o, n) in old_shape.dim.iter().zip(&mut new_shape.dim) {
                        n.denotation = o.denotation.clone();
                    }
                }
            }
        }
        None => {}
        // Not a tensor type (a sequence...): what was declared stays.
        Some(_) => return declared,
    }
    declared.value = Some(type_proto::Value::TensorType(new));
    declared
}
