//! `UINT32` and `UINT64` tensors stored in `uint64_data`, as the ONNX specification says they are:
//! tract 0.23 reads those types from `int32_data` / `int64_data` only and fails on them ("out of bounds
//! indexing"). They are rewritten as little-endian `raw_data`, which tract reads, after checking the
//! element count against the dims and every `UINT32` value against its range.

use anyhow::{bail, Context};
use tract_onnx::pb::tensor_proto::DataType;
use tract_onnx::pb::TensorProto;

/// Moves a `UINT32`/`UINT64` tensor's `uint64_data` into `raw_data`; other tensors are left alone.
pub(crate) fn uint64_data_to_raw(t: &mut TensorProto) -> anyhow::Result<()> {
    let width = match t.data_type {
        x if x == DataType::Uint32 as i32 => 4,
        x if x == DataType::Uint64 as i32 => 8,
        _ => return Ok(()),
    };
    if t.uint64_data.is_empty() || !t.raw_data.is_empty() {
        return Ok(());
    }
    let name = &t.name;
    let mut numel: u64 = 1;
    for &d in &t.dims {
        let d = u64::try_from(d).map_err(|_| anyhow::anyhow!("tensor '{name}' has a negative dim {d}"))?;
        numel = numel.checked_mul(d).with_context(|| format!("tensor '{name}' has too many elements"))?;
    }
    if numel != t.uint64_data.len() as u64 {
        bail!("tensor '{name}' has dims {:?} ({numel} elements) but holds {} values", t.dims, t.uint64_data.len());
    }
    let mut raw = Vec::with_capacity(t.uint64_data.len() * width);
    for &v in &t.uint64_data {
        if width == 4 {
            let v =
                u32::try_from(v).map_err(|_| anyhow::anyhow!("tensor '{name}' (uint32) holds {v}, out of range"))?;
            raw.extend_from_slice(&v.to_le_bytes());
        } else {
            raw.extend_from_slice(&v.to_le_bytes());
        }
    }
    t.raw_data = raw;
    t.uint64_data = vec![];
    Ok(())
}
