//! The reports users and snapshot tests read: inferred facts as JSON (DESIGN.md §5) and tensors as text.

use crate::dims::format_dim;
use crate::npy::numpy_name;
use crate::ValueFact;
use tract_onnx::prelude::*;

/// A dim as JSON: an integer, or an expression string.
pub fn dim_json(d: &TDim) -> serde_json::Value {
    match d.as_i64() {
        Some(v) => serde_json::json!(v),
        None => serde_json::json!(format_dim(d)),
    }
}

/// `{"values": [{"name", "dtype", "shape"}]}`.
pub fn facts_json(facts: &[ValueFact]) -> serde_json::Value {
    let values: Vec<serde_json::Value> = facts
        .iter()
        .map(|f| {
            serde_json::json!({
                "name": f.name,
                "dtype": numpy_name(f.dtype),
                "shape": f.shape.iter().map(dim_json).collect::<Vec<_>>(),
            })
        })
        .collect();
    serde_json::json!({ "values": values })
}

/// The values of a tensor, flattened, as text (`[1.5, -2.0]`), at most `limit` of them.
pub fn values_text(t: &Tensor, limit: usize) -> anyhow::Result<String> {
    fn list<T: Datum + std::fmt::Debug>(t: &Tensor, limit: usize) -> anyhow::Result<String> {
        let plain = t.try_as_plain_ram()?;
        let values = plain.as_slice::<T>()?;
        let shown: Vec<String> = values.iter().take(limit).map(|v| format!("{v:?}")).collect();
        let more = if values.len() > limit { format!(", ... ({} values)", values.len()) } else { String::new() };
        Ok(format!("[{}{more}]", shown.join(", ")))
    }
    match t.datum_type() {
        DatumType::Bool => list::<bool>(t, limit),
        DatumType::I8 => list::<i8>(t, limit),
        DatumType::U8 => list::<u8>(t, limit),
        DatumType::I16 => list::<i16>(t, limit),
        DatumType::U16 => list::<u16>(t, limit),
        DatumType::I32 => list::<i32>(t, limit),
        DatumType::U32 => list::<u32>(t, limit),
        DatumType::I64 => list::<i64>(t, limit),
        DatumType::U64 => list::<u64>(t, limit),
        DatumType::F16 => list::<half::f16>(t, limit),
        DatumType::F32 => list::<f32>(t, limit),
        DatumType::F64 => list::<f64>(t, limit),
        DatumType::String => list::<String>(t, limit),
        DatumType::TDim => list::<TDim>(t, limit),
        dt => anyhow::bail!("cannot show values of {dt:?}"),
    }
}

/// One line describing an error: our own `node 'x' (Op): ...` message when the chain has one; else a
/// tract context that names a node (`Failed analyse for node #3 "x" Pad`, `Evaluating #3 "x" Pad`)
/// rewritten in that form with the causes after it; else the whole chain.
pub fn describe_error(e: &anyhow::Error) -> String {
    let chain: Vec<String> = e.chain().map(|c| c.to_string()).collect();
    let line = if let Some(ours) = chain.iter().find(|m| m.starts_with("node '")) {
        ours.clone()
    } else if let Some((ix, (name, op))) = chain.iter().enumerate().find_map(|(i, m)| tract_node(m).map(|n| (i, n))) {
        let rest: Vec<&str> = chain[ix + 1..].iter().map(String::as_str).filter(|m| tract_node(m).is_none()).collect();
        format!(
            "node '{name}' ({op}): {}",
            if rest.is_empty() { chain[ix].as_str() } else { rest.last().copied().unwrap_or("") }
        )
    } else {
        chain.join(": ")
    };
    line.lines().next().unwrap_or_default().to_string()
}

/// The `(name, op)` in a tract context such as `Failed analyse for node #3 "x" Pad`.
pub(crate) fn tract_node(message: &str) -> Option<(String, String)> {
    let hash = message.find('#')?;
    let after = &message[hash + 1..];
    let digits = after.find(|c: char| !c.is_ascii_digit())?;
    let rest = after[digits..].strip_prefix(" \"")?;
    let close = rest.find('"')?;
    let name = &rest[..close];
    let op = rest[close + 1..].split_whitespace().next()?;
    Some((name.to_string(), op.trim_end_matches([':', ',']).to_string()))
}
