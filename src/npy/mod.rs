//! `.npy` files in and out, for every numeric dtype numpy and tract share (f16 and bool included).
//!
//! Our own reader and writer of numpy's format: the header is parsed once ([`parse_header`]: a
//! duplicated, unknown or missing key is an error), the data length checked against it before anything
//! is allocated, and the data read straight into the tensor's buffer ([`read_npy`]) and written
//! straight from it ([`write_npy`], atomically), so memory holds each tensor once.

mod header;
mod read;
mod write;

pub use header::{parse_header, NpyHeader, NpyHeaderError, MAX_DIMS, MAX_HEADER_LEN};
pub(crate) use read::read_npy_from;
pub use read::{read_npy, read_npy_bytes};
pub(crate) use write::check_writable;
pub use write::{write_npy, write_npy_to};

use anyhow::bail;
use tract_onnx::prelude::*;

/// The tract datum type of a numpy type descriptor.
pub fn datum_type_of(descr: &str) -> anyhow::Result<DatumType> {
    parse_descr(descr).map(|(dt, _)| dt)
}

/// The datum type of a numpy type descriptor, and whether its data is big-endian.
fn parse_descr(descr: &str) -> anyhow::Result<(DatumType, bool)> {
    let (order, code) = match descr.chars().next() {
        Some(c @ ('<' | '>' | '|' | '=')) => (c, &descr[1..]),
        _ => ('=', descr),
    };
    let big_endian = match order {
        '>' => true,
        '<' => false,
        _ => cfg!(target_endian = "big"),
    };
    let dt = match code {
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
        _ => {
            let kind = match code.chars().next() {
                Some('U' | 'S' | 'a') => " (strings)",
                Some('O') => " (Python objects)",
                Some('c') => " (complex numbers)",
                Some('V') => " (raw bytes)",
                Some('M' | 'm') => " (dates and times)",
                _ => "",
            };
            bail!("numpy dtype '{descr}'{kind} is not supported: only numbers and bool are")
        }
    };
    Ok((dt, big_endian))
}

/// A value name as a file name: `%` is written `%25` and `/` is written `%2F` (exporters name values
/// like `1-Default/StridedSlice-op0`); nothing else changes.
pub(crate) fn escape_name(name: &str) -> String {
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

#[cfg(test)]
mod tests;
