//! A `value_info` on every value: element type, rank, and each dim as `dim_value` or `dim_param`
//! (symbolic dims written as `infer` writes them, fresh symbols included). Graph outputs keep their
//! names and get their inferred types; declared shapes that were wrong are corrected.

use super::facts::{Fact, Facts};
use crate::schema::proto::{self, tensor_proto::DataType, type_proto};
use std::collections::HashMap;

/// The ONNX element type of a fact: the model's own (int32 shape values, bfloat16...).
fn elem_type(f: &Fact) -> Option<i32> {
    let named = match f.dtype_name.as_str() {
        "bfloat16" => Some(DataType::Bfloat16),
        "float8_e4m3fn" => Some(DataType::Float8e4m3fn),
        "float8_e4m3fnuz" => Some(DataType::Float8e4m3fnuz),
        "float8_e5m2" => Some(DataType::Float8e5m2),
        "float8_e5m2fnuz" => Some(DataType::Float8e5m2fnuz),
        "int4" => Some(DataType::Int4),
        "uint4" => Some(DataType::Uint4),
        "int32" => Some(DataType::Int32),
        _ => None,
    };
    match named {
        Some(dt) => Some(dt as i32),
        None => crate::schema::onnx_data_type(f.datum_type).ok().map(|dt| dt as i32),
    }
}

/// The tensor type of a fact.
pub(crate) fn type_of(f: &Fact) -> Option<proto::TypeProto> {
    let mut t = crate::onnx::type_proto(tract_onnx::prelude::DatumType::F32, &f.shape).ok()?;
    if let Some(type_proto::Value::TensorType(tensor)) = t.value.as_mut() {
        tensor.elem_type = Some(elem_type(f)?);
    }
    Some(t)
}

/// Annotates every node output and graph output of `graph`; returns the values left without a type.
pub(crate) fn annotate(graph: &mut proto::GraphProto, facts: &Facts) -> Vec<String> {
    let outputs: std::collections::HashSet<String> = graph.output.iter().filter_map(|o| o.name.clone()).collect();
    let mut existing: HashMap<String, proto::ValueInfoProto> =
        std::mem::take(&mut graph.value_info).into_iter().filter_map(|v| Some((v.name.clone()?, v))).collect();
    let mut infos = vec![];
    let mut missing = vec![];
    for node in &graph.node {
        for name in node.output.iter().filter(|o| !o.is_empty() && !outputs.contains(*o)) {
            let mut info = existing
                .remove(name)
                .unwrap_or_else(|| proto::ValueInfoProto { name: Some(name.clone()), ..Default::default() });
            match facts.get(name).and_then(type_of) {
                Some(t) => info.r#type = Some(merge_type(info.r#type.take(), t)),
                None => missing.push(name.clone()),
            }
            if info.r#type.is_some() {
                infos.push(info);
            }
        }
    }
    graph.value_info = infos;
    for output in &mut graph.output {
        let Some(name) = output.name.clone() else { continue };
        match facts.get(&name).and_then(type_of) {
            Some(t) => output.r#type = Some(merge_type(output.r#type.take(), t)),
            None => missing.push(name),
        }
    }
    missing
}

/// Gives each value of `names` that a node of `graph` makes (and that is not a graph output) a
/// `value_info` if it has none; returns those left without a type. Used by `lower` for the values it
/// creates, leaving every other annotation as the model had it.
pub(crate) fn annotate_values(
    graph: &mut proto::GraphProto,
    facts: &Facts,
    names: &std::collections::HashSet<String>,
) -> Vec<String> {
    let outputs: std::collections::HashSet<&str> = graph.output.iter().filter_map(|o| o.name.as_deref()).collect();
    let annotated: std::collections::HashSet<String> = graph.value_info.iter().filter_map(|v| v.name.clone()).collect();
    let mut missing = vec![];
    let mut infos = vec![];
    for node in &graph.node {
        for name in node.output.iter().filter(|o| names.contains(*o) && !outputs.contains(o.as_str())) {
            if annotated.contains(name) {
                continue;
            }
            match facts.get(name).and_then(type_of) {
                Some(t) => infos.push(proto::ValueInfoProto {
                    name: Some(name.clone()),
                    r#type: Some(t),
                    ..Default::default()
                }),
                None => missing.push(name.clone()),
            }
        }
    }
    graph.value_info.extend(infos);
    missing
}

/// The inferred tensor type, keeping the declared type's other fields: its denotation, and each dim's
/// denotation where the ranks agree.
pub(crate) fn merge_type(declared: Option<proto::TypeProto>, inferred: proto::TypeProto) -> proto::TypeProto {
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
