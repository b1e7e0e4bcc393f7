//! Our ONNX IR schema: `proto/onnx.proto`, written here from the IR's field numbers and compiled by
//! prost in `build.rs`, and the table between its element types and tract's (`datum_type_of_elem`,
//! `onnx_data_type`).

mod types;

/// The ONNX IR types, generated from `proto/onnx.proto`.
#[allow(missing_docs, clippy::all)]
pub mod proto {
    include!(concat!(env!("OUT_DIR"), "/onnx.rs"));
}

pub(crate) use types::{datum_type_of_elem, onnx_data_type};
