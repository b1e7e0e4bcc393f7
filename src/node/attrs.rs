//! Reading node attributes with errors that name the node, the attribute and what was found.

use super::Label;
use tract_onnx::pb::attribute_proto::AttributeType;
use tract_onnx::pb::{AttributeProto, NodeProto};
use tract_onnx::prelude::*;

fn find<'a>(node: &'a NodeProto, name: &str) -> Option<&'a AttributeProto> {
    node.attribute.iter().find(|a| a.name == name)
}

fn check_kind(label: &Label, a: &AttributeProto, want: AttributeType) -> TractResult<()> {
    match AttributeType::try_from(a.r#type) {
        Ok(kind) if kind == want => Ok(()),
        // Old writers leave the type unset and fill the field; accept it when it is the one we read.
        Ok(AttributeType::Undefined) => Ok(()),
        Ok(kind) => Err(label.err(format!("attribute {} must be {:?}, got {:?}", a.name, want, kind))),
        Err(_) => Err(label.err(format!("attribute {} has an unknown type code {}", a.name, a.r#type))),
    }
}

/// An `int` attribute, if present.
pub(crate) fn int(label: &Label, node: &NodeProto, name: &str) -> TractResult<Option<i64>> {
    match find(node, name) {
        None => Ok(None),
        Some(a) => check_kind(label, a, AttributeType::Int).map(|_| Some(a.i)),
    }
}

/// A `float` attribute, if present.
pub(crate) fn float(label: &Label, node: &NodeProto, name: &str) -> TractResult<Option<f32>> {
    match find(node, name) {
        None => Ok(None),
        Some(a) => check_kind(label, a, AttributeType::Float).map(|_| Some(a.f)),
    }
}

/// An `ints` attribute, if present.
pub(crate) fn ints(label: &Label, node: &NodeProto, name: &str) -> TractResult<Option<Vec<i64>>> {
    match find(node, name) {
        None => Ok(None),
        Some(a) => check_kind(label, a, AttributeType::Ints).map(|_| Some(a.ints.clone())),
    }
}

/// A `floats` attribute, if present.
pub(crate) fn floats(label: &Label, node: &NodeProto, name: &str) -> TractResult<Option<Vec<f32>>> {
    match find(node, name) {
        None => Ok(None),
        Some(a) => check_kind(label, a, AttributeType::Floats).map(|_| Some(a.floats.clone())),
    }
}

/// A `string` attribute, if present.
pub(crate) fn string(label: &Label, node: &NodeProto, name: &str) -> TractResult<Option<String>> {
    match find(node, name) {
        None => Ok(None),
        Some(a) => {
            check_kind(label, a, AttributeType::String)?;
            String::from_utf8(a.s.clone())
                .map(Some)
                .map_err(|_| label.err(format!("attribute {name} is not valid UTF-8")))
        }
    }
}

/// A boolean given as an `int` attribute: 0 or 1 only.
pub(crate) fn flag(label: &Label, node: &NodeProto, name: &str) -> TractResult<bool> {
    match int(label, node, name)? {
        None | Some(0) => Ok(false),
        Some(1) => Ok(true),
        Some(v) => Err(label.err(format!("attribute {name} is {v}: it must be 0 or 1"))),
    }
}

/// The ONNX element type code `code` as a tract type, for attributes naming one.
pub(crate) fn elem_type(label: &Label, name: &str, code: i64) -> TractResult<DatumType> {
    let code = i32::try_from(code).map_err(|_| label.err(format!("attribute {name}: {code} is no ONNX type")))?;
    crate::schema::datum_type_of_elem(code).map_err(|e| label.err(format!("attribute {name}: {e}")))
}

/// An `ints` attribute of sizes, if present: each value at least `min` (1 for kernels, strides and
/// dilations, 0 for pads), as `usize`.
pub(crate) fn sizes(label: &Label, node: &NodeProto, name: &str, min: i64) -> TractResult<Option<Vec<usize>>> {
    let Some(values) = ints(label, node, name)? else { return Ok(None) };
    values
        .iter()
        .map(|&v| match usize::try_from(v) {
            Ok(u) if v >= min => Ok(u),
            _ => Err(label.err(format!("attribute {name} holds {v}: it must be at least {min}"))),
        })
        .collect::<TractResult<Vec<usize>>>()
        .map(Some)
}

/// Checks that the attribute `name`, when given, has `want` values (the spatial rank or twice it).
pub(crate) fn check_len(label: &Label, name: &str, values: Option<&Vec<usize>>, want: usize) -> TractResult<()> {
    match values {
        Some(v) if v.len() != want => {
            Err(label.err(format!("attribute {name} has {} values, {want} expected for {} spatial axes", v.len(), {
                if name == "pads" {
                    want / 2
                } else {
                    want
                }
            })))
        }
        _ => Ok(()),
    }
}
