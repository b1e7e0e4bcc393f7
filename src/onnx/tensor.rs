//! tract tensors and facts as ONNX `TensorProto` / `TypeProto`.

use super::proto::{self, tensor_proto::DataType, tensor_shape_proto::dimension, type_proto};
use crate::dims::format_dim;
use crate::schema::onnx_data_type;
use anyhow::bail;
use tract_onnx::prelude::*;

/// A tensor as an initializer named `name` (raw little-endian data; strings as `string_data`; dims
/// as int64, which fails if one is symbolic).
pub(crate) fn tensor_to_proto(name: &str, tensor: &Tensor) -> anyhow::Result<proto::TensorProto> {
    let tensor =
        if tensor.datum_type() == DatumType::TDim { tensor.cast_to::<i64>()?.into_owned() } else { tensor.clone() };
    let mut p = proto::TensorProto {
        name: Some(name.to_string()),
        data_type: Some(onnx_data_type(tensor.datum_type())? as i32),
        dims: tensor.shape().iter().map(|&d| d as i64).collect(),
        ..Default::default()
    };
    if tensor.datum_type() == DatumType::String {
        let plain = tensor.try_as_plain_ram()?;
        p.string_data = plain.as_slice::<String>()?.iter().map(|s| s.as_bytes().to_vec()).collect();
    } else {
        // tract stores plain data in the machine's order; ONNX raw data is little-endian.
        if cfg!(target_endian = "big") {
            bail!("writing tensors on a big-endian machine is not supported");
        }
        p.raw_data = Some(tensor.try_as_plain_ram()?.as_bytes().to_vec());
    }
    Ok(p)
}

/// A tensor type with this element type and shape (symbolic dims as `dim_param` expressions).
pub(crate) fn type_proto(dt: DatumType, shape: &[TDim]) -> anyhow::Result<proto::TypeProto> {
    let dim = shape
        .iter()
        .map(|d| proto::tensor_shape_proto::Dimension {
            value: Some(match d.as_i64() {
                Some(v) => dimension::Value::DimValue(v),
                None => dimension::Value::DimParam(format_dim(d)),
            }),
            ..Default::default()
        })
        .collect();
    Ok(proto::TypeProto {
        value: Some(type_proto::Value::TensorType(type_proto::Tensor {
            elem_type: Some(onnx_data_type(dt)? as i32),
            shape: Some(proto::TensorShapeProto { dim }),
        })),
        ..Default::default()
    })
}

/// The values of an integer initializer (int64 or int32, raw or typed storage), if it is one. Unlike
/// `proto_ints`, `raw_data` that is present is always what is read (present and empty: no values),
/// and a raw length that is not a whole number of elements gives `None`.
pub(crate) fn ints_of(t: &proto::TensorProto) -> Option<Vec<i64>> {
    let dt = DataType::try_from(t.data_type?).ok()?;
    match (dt, t.raw_data.as_ref()) {
        (DataType::Int64, Some(raw)) if raw.len() % 8 == 0 => {
            Some(raw.chunks_exact(8).map(|c| i64::from_le_bytes(c.try_into().expect("8 bytes"))).collect())
        }
        (DataType::Int32, Some(raw)) if raw.len() % 4 == 0 => {
            Some(raw.chunks_exact(4).map(|c| i64::from(i32::from_le_bytes(c.try_into().expect("4 bytes")))).collect())
        }
        (DataType::Int64, None) => Some(t.int64_data.clone()),
        (DataType::Int32, None) => Some(t.int32_data.iter().map(|&v| i64::from(v)).collect()),
        _ => None,
    }
}

/// The values of a float32 initializer (raw or typed storage), if it is one.
pub(crate) fn f32s_of(t: &proto::TensorProto) -> Option<Vec<f32>> {
    if DataType::try_from(t.data_type?).ok()? != DataType::Float {
        return None;
    }
    match t.raw_data.as_ref() {
        Some(raw) if raw.len() % 4 == 0 => {
            Some(raw.chunks_exact(4).map(|c| f32::from_le_bytes(c.try_into().expect("4 bytes"))).collect())
        }
        Some(_) => None,
        None => Some(t.float_data.clone()),
    }
}

/// The values of an int32 or int64 tensor, as `lower` reads its constants. Unlike [`ints_of`], raw
/// data is read only when it is not empty (an empty `raw_data` falls back to the typed fields), and a
/// raw length that is not a whole number of elements is read up to its last whole element rather
/// than refused.
pub(crate) fn proto_ints(t: &proto::TensorProto) -> Option<Vec<i64>> {
    use proto::tensor_proto::DataType;
    let raw = t.raw_data.as_deref().unwrap_or(&[]);
    match DataType::try_from(t.data_type?).ok()? {
        DataType::Int64 if !raw.is_empty() => {
            Some(raw.chunks_exact(8).map(|c| i64::from_le_bytes(c.try_into().expect("8 bytes"))).collect())
        }
        DataType::Int64 => Some(t.int64_data.clone()),
        DataType::Int32 if !raw.is_empty() => {
            Some(raw.chunks_exact(4).map(|c| i32::from_le_bytes(c.try_into().expect("4 bytes")) as i64).collect())
        }
        DataType::Int32 => Some(t.int32_data.iter().map(|&v| v as i64).collect()),
        _ => None,
    }
}
