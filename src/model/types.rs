//! ONNX element types tract has no type for (bfloat16, the float8 types, int4, uint4), for analysis.
//!
//! Shapes do not depend on element values, so before tract parses a model, each such type is
//! replaced by one tract has with the same size per element: bfloat16 by float16, float8 by uint8,
//! int4/uint4 by int8/uint8 (their initializers unpacked, two values per byte, low nibble first).
//! Analysis then reports the model's own type names: a proxy type maps back to the type it stands for
//! when the model does not also use the proxy type itself. Running such a model is refused (the
//! arithmetic would be the proxy's), naming the type.

use tract_onnx::pb::{self, tensor_proto::DataType};
use tract_onnx::prelude::*;

/// The proxy of an ONNX type tract lacks, and whether its data must be unpacked from 4 bits.
fn proxy(dt: DataType) -> Option<(DataType, Option<bool>)> {
    Some(match dt {
        DataType::Bfloat16 => (DataType::Float16, None),
        DataType::Float8e4m3fn | DataType::Float8e4m3fnuz | DataType::Float8e5m2 | DataType::Float8e5m2fnuz => {
            (DataType::Uint8, None)
        }
        DataType::Int4 => (DataType::Int8, Some(true)),
        DataType::Uint4 => (DataType::Uint8, Some(false)),
        _ => return None,
    })
}

/// The numpy-style name of an ONNX type tract lacks.
pub(crate) fn type_name(dt: DataType) -> &'static str {
    match dt {
        DataType::Bfloat16 => "bfloat16",
        DataType::Float8e4m3fn => "float8_e4m3fn",
        DataType::Float8e4m3fnuz => "float8_e4m3fnuz",
        DataType::Float8e5m2 => "float8_e5m2",
        DataType::Float8e5m2fnuz => "float8_e5m2fnuz",
        DataType::Int4 => "int4",
        DataType::Uint4 => "uint4",
        _ => "unknown",
    }
}

/// What the replacement did: which proxies stand for which types.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Proxies {
    /// `(tract type, ONNX type it stands for)`, one per proxy whose meaning is unambiguous.
    pub names: Vec<(DatumType, &'static str)>,
    /// Every ONNX type the model uses that tract lacks.
    pub replaced: Vec<&'static str>,
}

/// Replaces, in place, every element type tract lacks by its proxy; returns what was replaced.
pub(super) fn replace(model: &mut pb::ModelProto) -> anyhow::Result<Proxies> {
    let mut used: Vec<DataType> = vec![];
    let mut native: Vec<DataType> = vec![];
    if let Some(g) = model.graph.as_mut() {
        graph(g, &mut used, &mut native)?;
    }
    for f in &mut model.functions {
        for n in &mut f.node {
            node(n, &mut used, &mut native)?;
        }
    }
    let mut proxies = Proxies::default();
    for dt in used {
        let name = type_name(dt);
        if !proxies.replaced.contains(&name) {
            proxies.replaced.push(name);
        }
        let Some((p, _)) = proxy(dt) else { continue };
        let Ok(tract_dt) = crate::schema::datum_type_of_elem(p as i32) else { continue };
        // A proxy stands for one type only if the model uses neither the proxy type itself nor a
        // second type with the same proxy.
        let shared = native.contains(&p) || proxies.names.iter().any(|(q, n)| *q == tract_dt && *n != name);
        proxies.names.retain(|(q, _)| !(shared && *q == tract_dt));
        if !shared && !proxies.names.iter().any(|(q, _)| *q == tract_dt) {
            proxies.names.push((tract_dt, name));
        }
    }
    Ok(proxies)
}

fn elem(code: &mut i32, used: &mut Vec<DataType>, native: &mut Vec<DataType>) {
    let Ok(dt) = DataType::try_from(*code) else { return };
    match proxy(dt) {
        Some((p, _)) => {
            if !used.contains(&dt) {
                used.push(dt);
            }
            *code = p as i32;
        }
        None => {
            if !native.contains(&dt) {
                native.push(dt);
            }
        }
    }
}

fn type_proto(t: Option<&mut pb::TypeProto>, used: &mut Vec<DataType>, native: &mut Vec<DataType>) {
    if let Some(pb::TypeProto { value: Some(pb::type_proto::Value::TensorType(tensor)), .. }) = t {
        elem(&mut tensor.elem_type, used, native);
    }
}

fn tensor(t: &mut pb::TensorProto, used: &mut Vec<DataType>, native: &mut Vec<DataType>) -> anyhow::Result<()> {
    let Ok(dt) = DataType::try_from(t.data_type) else { return Ok(()) };
    let Some((_, unpack)) = proxy(dt) else {
        elem(&mut t.data_type, used, native);
        return Ok(());
    };
    elem(&mut t.data_type, used, native);
    if let Some(signed) = unpack {
        let count = t.dims.iter().try_fold(1usize, |acc, &d| acc.checked_mul(usize::try_from(d).ok()?));
        let count = count.ok_or_else(|| anyhow::anyhow!("tensor '{}' has invalid dims {:?}", t.name, t.dims))?;
        let packed: Vec<u8> =
            if !t.raw_data.is_empty() { t.raw_data.clone() } else { t.int32_data.iter().map(|&v| v as u8).collect() };
        anyhow::ensure!(
            packed.len() == count.div_ceil(2),
            "tensor '{}' holds {} bytes of 4-bit data for {count} elements",
            t.name,
            packed.len()
        );
        let mut values = Vec::with_capacity(count);
        for i in 0..count {
            let nibble = (packed[i / 2] >> (4 * (i % 2))) & 0x0f;
            values.push(if signed && nibble >= 8 { nibble.wrapping_sub(16) } else { nibble });
        }
        t.raw_data = values;
        t.int32_data.clear();
    }
    Ok(())
}

fn node(n: &mut pb::NodeProto, used: &mut Vec<DataType>, native: &mut Vec<DataType>) -> anyhow::Result<()> {
    for a in &mut n.attribute {
        let names_a_type = matches!(a.name.as_str(), "to" | "dtype" | "output_datatype");
        if names_a_type && a.r#type == pb::attribute_proto::AttributeType::Int as i32 {
            let mut code = a.i as i32;
            elem(&mut code, used, native);
            a.i = i64::from(code);
        }
        if let Some(t) = a.t.as_mut() {
            tensor(t, used, native)?;
        }
        for t in &mut a.tensors {
            tensor(t, used, native)?;
        }
        for g in a.g.iter_mut().chain(a.graphs.iter_mut()) {
            graph(g, used, native)?;
        }
    }
    Ok(())
}

fn graph(g: &mut pb::GraphProto, used: &mut Vec<DataType>, native: &mut Vec<DataType>) -> anyhow::Result<()> {
    for info in g.input.iter_mut().chain(g.output.iter_mut()).chain(g.value_info.iter_mut()) {
        type_proto(info.r#type.as_mut(), used, native);
    }
    for t in &mut g.initializer {
        tensor(t, used, native)?;
    }
    for n in &mut g.node {
        node(n, used, native)?;
    }
    Ok(())
}
