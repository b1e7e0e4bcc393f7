//! The table between ONNX element types (`TensorProto.DataType`) and tract's datum types.

use super::proto::tensor_proto::DataType;
use anyhow::bail;
use tract_onnx::prelude::*;

/// The ONNX element type of a datum type (dims are written as int64).
pub(crate) fn onnx_data_type(dt: DatumType) -> anyhow::Result<DataType> {
    Ok(match dt {
        DatumType::Bool => DataType::Bool,
        DatumType::I8 => DataType::Int8,
        DatumType::U8 => DataType::Uint8,
        DatumType::I16 => DataType::Int16,
        DatumType::U16 => DataType::Uint16,
        DatumType::I32 => DataType::Int32,
        DatumType::U32 => DataType::Uint32,
        DatumType::I64 | DatumType::TDim => DataType::Int64,
        DatumType::U64 => DataType::Uint64,
        DatumType::F16 => DataType::Float16,
        DatumType::F32 => DataType::Float,
        DatumType::F64 => DataType::Double,
        DatumType::String => DataType::String,
        other => bail!("no ONNX type for {other:?}"),
    })
}

/// The tract datum type of an ONNX element type (`TensorProto.DataType`), or an error naming the
/// ONNX type when tract has none.
pub(crate) fn datum_type_of_elem(code: i32) -> anyhow::Result<DatumType> {
    let Ok(dt) = DataType::try_from(code) else { bail!("unknown ONNX element type {code}") };
    Ok(match dt {
        DataType::Bool => DatumType::Bool,
        DataType::Int8 => DatumType::I8,
        DataType::Uint8 => DatumType::U8,
        DataType::Int16 => DatumType::I16,
        DataType::Uint16 => DatumType::U16,
        DataType::Int32 => DatumType::I32,
        DataType::Uint32 => DatumType::U32,
        DataType::Int64 => DatumType::I64,
        DataType::Uint64 => DatumType::U64,
        DataType::Float16 => DatumType::F16,
        DataType::Float => DatumType::F32,
        DataType::Double => DatumType::F64,
        DataType::String => DatumType::String,
        DataType::Undefined => bail!("the element type is not declared"),
        other => bail!("element type {} is not supported", other.as_str_name()),
    })
}
