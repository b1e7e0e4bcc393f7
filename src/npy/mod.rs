//! `.npy` files in and out, for every numeric dtype numpy and tract share (f16 and bool included).
//!
//! ndarray-npy does the reading and writing; before it reads, the header is parsed here and the data
//! length checked against it, so a file claiming a huge shape is an error, not an allocation. float16,
//! which ndarray-npy does not know, goes through the [`F16`] element type.

use anyhow::{bail, Context};
use ndarray_npy::{ReadDataError, ReadNpyExt, ReadableElement, WritableElement, WriteDataError, WriteNpyExt};
use py_literal::Value as PyValue;
use std::io::Read;
use std::path::Path;
use tract_onnx::prelude::*;

/// A numpy float16 element.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct F16(pub half::f16);

impl ReadableElement for F16 {
    fn read_to_end_exact_vec<R: std::io::Read>(
        mut reader: R,
        type_desc: &PyValue,
        len: usize,
    ) -> Result<Vec<Self>, ReadDataError> {
        let little = match type_desc {
            PyValue::String(s) if s == "<f2" || s == "=f2" => true,
            PyValue::String(s) if s == ">f2" => false,
            other => return Err(ReadDataError::WrongDescriptor(other.clone())),
        };
        let mut bytes = vec![0u8; len.checked_mul(2).ok_or(ReadDataError::MissingData)?];
        reader.read_exact(&mut bytes).map_err(|_| ReadDataError::MissingData)?;
        let mut rest = vec![];
        let extra = reader.read_to_end(&mut rest).map_err(ReadDataError::Io)?;
        if extra > 0 {
            return Err(ReadDataError::ExtraBytes(extra));
        }
        Ok(bytes
            .chunks_exact(2)
            .map(|c| {
                let bits = if little { u16::from_le_bytes([c[0], c[1]]) } else { u16::from_be_bytes([c[0], c[1]]) };
                F16(half::f16::from_bits(bits))
            })
            .collect())
    }
}

impl WritableElement for F16 {
    fn type_descriptor() -> PyValue {
        PyValue::String("<f2".into())
    }

    fn write<W: std::io::Write>(&self, mut writer: W) -> Result<(), WriteDataError> {
        writer.write_all(&self.0.to_bits().to_le_bytes()).map_err(WriteDataError::Io)
    }

    fn write_slice<W: std::io::Write>(slice: &[Self], mut writer: W) -> Result<(), WriteDataError> {
        let bytes: Vec<u8> = slice.iter().flat_map(|v| v.0.to_bits().to_le_bytes()).collect();
        writer.write_all(&bytes).map_err(WriteDataError::Io)
    }
}

/// What a `.npy` header says.
#[derive(Debug, Clone, PartialEq)]
pub struct NpyHeader {
    /// The type descriptor, e.g. `<f4`.
    pub descr: String,
    /// Whether the data is in Fortran order.
    pub fortran_order: bool,
    /// The shape.
    pub shape: Vec<usize>,
    /// Where the data starts.
    pub data_offset: usize,
}

/// Parses and checks a `.npy` header.
pub fn parse_header(bytes: &[u8]) -> anyhow::Result<NpyHeader> {
    if bytes.len() < 10 || &bytes[..6] != b"\x93NUMPY" {
        bail!("not a .npy file (bad magic)");
    }
    let (len, start): (usize, usize) = match bytes[6] {
        1 => (u16::from_le_bytes([bytes[8], bytes[9]]) as usize, 10),
        2 | 3 if bytes.len() >= 12 => (u32::from_le_bytes([bytes[8], bytes[9], bytes[10], bytes[11]]) as usize, 12),
        v => bail!("unsupported .npy version {v}"),
    };
    let end = start.checked_add(len).filter(|&e| e <= bytes.len()).context("truncated .npy header")?;
    let text = std::str::from_utf8(&bytes[start..end]).context(".npy header is not text")?;
    let dict = text.trim().parse::<PyValue>().context("unreadable .npy header")?;
    let PyValue::Dict(entries) = dict else { bail!(".npy header is not a dict") };
    let get = |key: &str| entries.iter().find(|(k, _)| *k == PyValue::String(key.into())).map(|(_, v)| v);
    let descr = match get("descr") {
        Some(PyValue::String(s)) => s.clone(),
        _ => bail!(".npy header has no simple 'descr' (structured arrays are not supported)"),
    };
    let fortran_order = matches!(get("fortran_order"), Some(PyValue::Boolean(true)));
    let shape = match get("shape") {
        Some(PyValue::Tuple(dims)) => dims
            .iter()
            .map(|d| match d {
                PyValue::Integer(i) => usize::try_from(i.clone()).ok(),
                _ => None,
            })
            .collect::<Option<Vec<usize>>>()
            .context(".npy header has a bad shape")?,
        _ => bail!(".npy header has no shape"),
    };
    Ok(NpyHeader { descr, fortran_order, shape, data_offset: end })
}

/// The tract datum type of a numpy type descriptor.
pub fn datum_type_of(descr: &str) -> anyhow::Result<DatumType> {
    let code = descr.trim_start_matches(['<', '>', '|', '=']);
    Ok(match code {
        "b1" => DatumType::Bool,
        "i1" => DatumType::I8,
        "u1" => DatumType::U8,
        "i2" => DatumType::I16,
        "u2" => DatumType::U16,
        "i4" => DatumType::I32,
        "u4" => DatumType::U32,
        "i8" => DatumType::I64,
        "u8" => DatumType::U64,
        "f2" => DatumType::F16,
        "f4" => DatumType::F32,
        "f8" => DatumType::F64,
        _ => bail!("numpy dtype '{descr}' is not supported"),
    })
}

/// Reads a `.npy` file as a tract tensor.
pub fn read_npy(path: &Path) -> anyhow::Result<Tensor> {
    let mut bytes = vec![];
    std::fs::File::open(path)
        .and_then(|mut f| f.read_to_end(&mut bytes))
        .with_context(|| format!("cannot read {}", path.display()))?;
    read_npy_bytes(&bytes).with_context(|| format!("{}", path.display()))
}

/// Reads `.npy` bytes as a tract tensor.
pub fn read_npy_bytes(bytes: &[u8]) -> anyhow::Result<Tensor> {
    let header = parse_header(bytes)?;
    let dt = datum_type_of(&header.descr)?;
    let numel = header.shape.iter().try_fold(1usize, |acc, &d| acc.checked_mul(d)).context("shape overflows")?;
    let data_len = bytes.len() - header.data_offset;
    if numel.checked_mul(dt.size_of()) != Some(data_len) {
        bail!("holds {data_len} bytes of data but its header says shape {:?} of {}", header.shape, header.descr);
    }
    macro_rules! read {
        ($t:ty) => {
            tract_ndarray::ArrayD::<$t>::read_npy(bytes).map(|a| a.into_tensor())
        };
    }
    let tensor = match dt {
        DatumType::Bool => read!(bool),
        DatumType::I8 => read!(i8),
        DatumType::U8 => read!(u8),
        DatumType::I16 => read!(i16),
        DatumType::U16 => read!(u16),
        DatumType::I32 => read!(i32),
        DatumType::U32 => read!(u32),
        DatumType::I64 => read!(i64),
        DatumType::U64 => read!(u64),
        DatumType::F32 => read!(f32),
        DatumType::F64 => read!(f64),
        DatumType::F16 => tract_ndarray::ArrayD::<F16>::read_npy(bytes).map(|a| a.mapv(|v| v.0).into_tensor()),
        _ => unreachable!("datum_type_of only returns the types above"),
    };
    tensor.map_err(|e| anyhow::anyhow!("{e}"))
}

/// Writes a tensor as a `.npy` file (numpy's format, exact dtype and shape).
pub fn write_npy(path: &Path, tensor: &Tensor) -> anyhow::Result<()> {
    let file = std::fs::File::create(path).with_context(|| format!("cannot create {}", path.display()))?;
    let writer = std::io::BufWriter::new(file);
    macro_rules! write {
        ($t:ty) => {
            tensor.to_plain_array_view::<$t>()?.write_npy(writer)
        };
    }
    let result = match tensor.datum_type() {
        DatumType::Bool => write!(bool),
        DatumType::I8 => write!(i8),
        DatumType::U8 => write!(u8),
        DatumType::I16 => write!(i16),
        DatumType::U16 => write!(u16),
        DatumType::I32 => write!(i32),
        DatumType::U32 => write!(u32),
        DatumType::I64 => write!(i64),
        DatumType::U64 => write!(u64),
        DatumType::F32 => write!(f32),
        DatumType::F64 => write!(f64),
        DatumType::F16 => tensor.to_plain_array_view::<half::f16>()?.mapv(F16).write_npy(writer),
        dt => bail!("cannot write a tensor of {dt:?} as .npy"),
    };
    result.with_context(|| format!("cannot write {}", path.display()))
}

/// A value name as a file name: `%` is written `%25` and `/` is written `%2F` (exporters name values
/// like `1-Default/StridedSlice-op0`); nothing else changes.
pub fn escape_name(name: &str) -> String {
    name.replace('%', "%25").replace('/', "%2F")
}

/// numpy's name for a datum type (`float32`, `int64`, `bool`...); shapes and values held as dims are
/// `int64`, as ONNX stores them.
pub fn numpy_name(dt: DatumType) -> String {
    match dt {
        DatumType::Bool => "bool".into(),
        DatumType::I8 => "int8".into(),
        DatumType::U8 => "uint8".into(),
        DatumType::I16 => "int16".into(),
        DatumType::U16 => "uint16".into(),
        DatumType::I32 => "int32".into(),
        DatumType::U32 => "uint32".into(),
        DatumType::I64 | DatumType::TDim => "int64".into(),
        DatumType::U64 => "uint64".into(),
        DatumType::F16 => "float16".into(),
        DatumType::F32 => "float32".into(),
        DatumType::F64 => "float64".into(),
        DatumType::String => "str".into(),
        other => format!("{other:?}").to_lowercase(),
    }
}
