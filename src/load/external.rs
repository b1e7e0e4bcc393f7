//! External tensor data (`TensorProto.data_location = EXTERNAL`), read by us rather than by tract, so
//! that every location is checked first: a relative path inside the model's folder (after resolving
//! symlinks), naming a regular file, with `offset` and `length` inside it, and a length that matches the
//! tensor's type and shape. Errors name the tensor. Works on both proto flavours (tract's, for loading,
//! and ours, for write-back) through [`TensorFields`].

use anyhow::{bail, Context};
use std::io::{Read, Seek, SeekFrom};
use std::path::{Component, Path};

/// What external-data handling needs of a `TensorProto`.
pub(crate) trait TensorFields {
    /// The tensor's name.
    fn tensor_name(&self) -> &str;
    /// `TensorProto.DataType` as stored.
    fn data_type_code(&self) -> i32;
    /// Its dims.
    fn dim_values(&self) -> &[i64];
    /// Whether `data_location` is `EXTERNAL`.
    fn is_external(&self) -> bool;
    /// The `external_data` entries, as key and value.
    fn external_entries(&self) -> Vec<(&str, &str)>;
    /// Stores the data in `raw_data`, back at the default location, with no `external_data` entry.
    fn set_inline(&mut self, raw: Vec<u8>);
}

impl TensorFields for tract_onnx::pb::TensorProto {
    fn tensor_name(&self) -> &str {
        &self.name
    }
    fn data_type_code(&self) -> i32 {
        self.data_type
    }
    fn dim_values(&self) -> &[i64] {
        &self.dims
    }
    fn is_external(&self) -> bool {
        self.data_location == Some(tract_onnx::pb::tensor_proto::DataLocation::External as i32)
    }
    fn external_entries(&self) -> Vec<(&str, &str)> {
        self.external_data.iter().map(|e| (e.key.as_str(), e.value.as_str())).collect()
    }
    fn set_inline(&mut self, raw: Vec<u8>) {
        self.raw_data = raw;
        self.data_location = None;
        self.external_data.clear();
    }
}

impl TensorFields for crate::schema::proto::TensorProto {
    fn tensor_name(&self) -> &str {
        self.name.as_deref().unwrap_or("")
    }
    fn data_type_code(&self) -> i32 {
        self.data_type.unwrap_or(0)
    }
    fn dim_values(&self) -> &[i64] {
        &self.dims
    }
    fn is_external(&self) -> bool {
        self.data_location == Some(crate::schema::proto::tensor_proto::DataLocation::External as i32)
    }
    fn external_entries(&self) -> Vec<(&str, &str)> {
        self.external_data.iter().map(|e| (e.key.as_deref().unwrap_or(""), e.value.as_deref().unwrap_or(""))).collect()
    }
    fn set_inline(&mut self, raw: Vec<u8>) {
        self.raw_data = Some(raw);
        self.data_location = None;
        self.external_data.clear();
    }
}

/// Bytes per element of an ONNX data type, as `(numerator, denominator)` (4-bit and 2-bit types pack
/// two or four per byte); `None` for strings, 6-bit floats and unknown types, whose length is not
/// checked here.
fn element_size(code: i32) -> Option<(u64, u64)> {
    Some(match code {
        2 | 3 | 9 | 17..=20 | 24 => (1, 1), // uint8, int8, bool, the float8 types
        4 | 5 | 10 | 16 => (2, 1),          // uint16, int16, float16, bfloat16
        1 | 6 | 12 => (4, 1),               // float, int32, uint32
        7 | 11 | 13 | 14 => (8, 1),         // int64, double, uint64, complex64
        15 => (16, 1),                      // complex128
        21..=23 => (1, 2),                  // uint4, int4, float4e2m1
        25 | 26 => (1, 4),                  // uint2, int2
        _ => return None,
    })
}

/// The byte length a tensor's data must have, when its type has a fixed size.
fn expected_len(t: &impl TensorFields) -> anyhow::Result<Option<u64>> {
    let Some((num, den)) = element_size(t.data_type_code()) else { return Ok(None) };
    let mut numel: u64 = 1;
    for &d in t.dim_values() {
        let d = u64::try_from(d).map_err(|_| anyhow::anyhow!("tensor '{}' has a negative dim {d}", t.tensor_name()))?;
        numel = numel.checked_mul(d).with_context(|| format!("tensor '{}' has too many elements", t.tensor_name()))?;
    }
    let bits = numel.checked_mul(num).with_context(|| format!("tensor '{}' has too many elements", t.tensor_name()))?;
    Ok(Some(bits.div_ceil(den)))
}

/// The one value of a key among the external-data entries (a key given twice is an error).
fn entry<'a>(t: &'a impl TensorFields, entries: &[(&'a str, &'a str)], key: &str) -> anyhow::Result<Option<&'a str>> {
    let mut found = entries.iter().filter(|(k, _)| *k == key).map(|(_, v)| *v);
    let first = found.next();
    if found.next().is_some() {
        bail!("tensor '{}': its external data gives '{key}' twice", t.tensor_name());
    }
    Ok(first)
}

fn number(t: &impl TensorFields, key: &str, value: Option<&str>) -> anyhow::Result<Option<u64>> {
    value
        .map(|v| {
            v.trim().parse::<u64>().map_err(|_| {
                anyhow::anyhow!(
                    "tensor '{}': its external data {key} '{v}' is not a non-negative integer",
                    t.tensor_name()
                )
            })
        })
        .transpose()
}

/// `TensorProto.DataType.STRING`.
const STRING: i32 = 8;

/// Reads a tensor's external data from `dir` (the model's folder), checked as the module says.
pub(crate) fn read_external(t: &impl TensorFields, dir: Option<&Path>) -> anyhow::Result<Vec<u8>> {
    let name = t.tensor_name();
    let entries = t.external_entries();
    let location = entry(t, &entries, "location")?.unwrap_or("");
    let offset = number(t, "offset", entry(t, &entries, "offset")?)?.unwrap_or(0);
    let length = number(t, "length", entry(t, &entries, "length")?)?;
    if location.is_empty() {
        bail!("tensor '{name}' keeps its data in an external file but gives no location");
    }
    let relative = Path::new(location);
    if relative.components().any(|c| !matches!(c, Component::Normal(_) | Component::CurDir)) {
        bail!("tensor '{name}': external data location '{location}' must be a relative path inside the model's folder");
    }
    let Some(dir) = dir else {
        bail!("tensor '{name}' keeps its data in the external file '{location}', but the model was given without a folder to find it in");
    };
    let dir = if dir.as_os_str().is_empty() { Path::new(".") } else { dir };
    let folder = dir.canonicalize().with_context(|| format!("cannot find the model's folder {}", dir.display()))?;
    let path = folder.join(relative).canonicalize().with_context(|| {
        format!("tensor '{name}': cannot find its external data file '{location}' in {}", folder.display())
    })?;
    if !path.starts_with(&folder) {
        bail!("tensor '{name}': external data location '{location}' resolves outside the model's folder");
    }
    let (mut file, size) =
        crate::io::regular::open_regular(&path).with_context(|| format!("tensor '{name}': external data"))?;
    let available = size.checked_sub(offset).with_context(|| {
        format!("tensor '{name}': its external data offset {offset} is past the end of '{location}' ({size} bytes)")
    })?;
    let length = length.unwrap_or(available);
    if length > available {
        bail!(
            "tensor '{name}': its external data (offset {offset}, length {length}) goes past the end of '{location}' ({size} bytes)"
        );
    }
    if let Some(want) = expected_len(t)? {
        if want != length {
            bail!("tensor '{name}' needs {want} bytes of data but its external data has {length}");
        }
    }
    let len = usize::try_from(length).with_context(|| format!("tensor '{name}': external data too large"))?;
    let mut bytes = vec![0u8; len];
    file.seek(SeekFrom::Start(offset))
        .and_then(|_| file.read_exact(&mut bytes))
        .with_context(|| format!("tensor '{name}': cannot read its external data from '{location}'"))?;
    Ok(bytes)
}

/// Replaces a tensor's external data with the bytes themselves; other tensors are left alone. Returns
/// whether it was external.
pub(crate) fn inline_tensor(t: &mut impl TensorFields, dir: Option<&Path>) -> anyhow::Result<bool> {
    if !t.is_external() {
        return Ok(false);
    }
    if t.data_type_code() == STRING {
        bail!("tensor '{}' is a string tensor with external data, which ONNX does not allow", t.tensor_name());
    }
    let bytes = read_external(t, dir)?;
    t.set_inline(bytes);
    Ok(true)
}
