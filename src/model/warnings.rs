//! Declared shapes that contradict inference: exporters write wrong ones; they are hints. Only a real
//! contradiction is reported: another rank, or a number against another number.

use super::ValueFact;
use anyhow::Context;
use tract_onnx::pb;

/// Declared shapes (value_info, graph outputs) that contradict the inferred `facts` (from
/// [`crate::Model::infer`]): one message each. Declared shapes are hints; inference wins.
pub(super) fn shape_warnings(proto: &pb::ModelProto, facts: &[ValueFact]) -> anyhow::Result<Vec<String>> {
    let graph = proto.graph.as_ref().context("the model has no graph")?;
    let mut warnings = vec![];
    let by_name: std::collections::HashMap<&str, &ValueFact> = facts.iter().map(|f| (f.name.as_str(), f)).collect();
    for info in graph.value_info.iter().chain(graph.output.iter()) {
        let Some(pb::type_proto::Value::TensorType(t)) = info.r#type.as_ref().and_then(|t| t.value.as_ref()) else {
            continue;
        };
        let Some(declared) = &t.shape else { continue };
        let Some(fact) = by_name.get(info.name.as_str()) else { continue };
        let declared_dims: Vec<String> = declared
            .dim
            .iter()
            .map(|d| match &d.value {
                Some(pb::tensor_shape_proto::dimension::Value::DimValue(v)) => v.to_string(),
                Some(pb::tensor_shape_proto::dimension::Value::DimParam(p)) => p.clone(),
                None => "?".to_string(),
            })
            .collect();
        let inferred: Vec<String> = fact.shape.iter().map(crate::dims::format_dim).collect();
        // A contradiction is another rank, or a number against another number. A name the exporter
        // made up for a dim (`Resizemask_dim_1`) against a number or an expression contradicts
        // nothing, and neither does a number against an expression (it may hold for every input).
        let contradicts = declared_dims.len() != inferred.len()
            || declared.dim.iter().zip(&fact.shape).any(|(d, f)| match &d.value {
                Some(pb::tensor_shape_proto::dimension::Value::DimValue(v)) => f.as_i64().is_some_and(|x| x != *v),
                _ => false,
            });
        if contradicts {
            warnings.push(format!(
                "value '{}' is declared with shape [{}] but inference gives [{}]; using the inferred shape",
                info.name,
                declared_dims.join(","),
                inferred.join(",")
            ));
        }
    }
    Ok(warnings)
}
