//! Regressions for what the fuzz targets (fuzz/) found: each once panicked, now each is an error.

mod common;

use common::onnx_build::{Builder, A, D};
use sliceops::view::{View, ViewAxis};
use sliceops::Model;
use tract_onnx::pb::tensor_proto::DataType;
use tract_onnx::prelude::*;

/// An empty view whose shape tract cannot hold (`[2^62 - 1, 0]`: its size overflows before the 0).
fn unrepresentable() -> View<i64> {
    View { offset: 0, axes: vec![ViewAxis { len: (1 << 62) - 1, stride: 0 }, ViewAxis { len: 0, stride: 0 }] }
}

#[test]
fn executing_an_unrepresentable_empty_view_is_an_error_for_every_dtype() {
    let t = tract_ndarray::arr1(&[0i64, 1, 2, 3]).into_tensor();
    for dt in [DatumType::I64, DatumType::String, DatumType::TDim] {
        let input = t.cast_to_dt(dt).unwrap().into_owned();
        let err = sliceops::kernel::execute(&input, &unrepresentable()).unwrap_err();
        assert!(err.to_string().contains("cannot be allocated"), "{dt:?}: {err}");
    }
}

fn as_strided_model(size: Vec<i64>, stride: Vec<i64>) -> Vec<u8> {
    Builder::new(13)
        .input("x", DataType::Float, &[D::N(4)])
        .node("AsStrided", "ai.sliceops", "as", &["x"], &["y"], vec![("size", A::Is(size)), ("stride", A::Is(stride))])
        .output("y")
        .bytes()
}

#[test]
fn lowering_an_unrepresentable_as_strided_is_an_error() {
    let bytes = as_strided_model(vec![(1 << 62) - 1, 0], vec![0, 0]);
    let err = format!("{:#}", sliceops::onnx::lower(&bytes, None).unwrap_err());
    assert!(err.contains("node 'as' (AsStrided)"), "{err}");
}

#[test]
fn an_unrepresentable_output_shape_is_an_error_before_tract_builds_it() {
    let bytes = as_strided_model(vec![0, 2, i64::MAX - 1, 2], vec![0, 0, 0, 0]);
    let err = format!("{:#}", Model::load_bytes(&bytes).and_then(|m| m.infer()).unwrap_err());
    assert!(err.contains("node 'as' (AsStrided): an output of shape"), "{err}");
}

#[test]
fn a_constant_gather_index_out_of_range_is_an_error_naming_the_node() {
    let bytes = Builder::new(13)
        .input("x", DataType::Float, &[D::N(2), D::N(4)])
        .init("i", DataType::Int64, &[], 281474976710400i64.to_le_bytes().to_vec())
        .node("Gather", "", "g", &["x", "i"], &["y"], vec![("axis", A::I(1))])
        .output("y")
        .bytes();
    let err = format!("{:#}", Model::load_bytes(&bytes).and_then(|m| m.typed().map(|_| ())).unwrap_err());
    assert!(err.contains("node 'g' (Gather): index 281474976710400 is out of range for axis 1 of size 4"), "{err}");
}

#[test]
fn a_panic_inside_tract_is_an_error() {
    // tract's Unsqueeze indexes past its shape for an axis of 10^16 (found by the model_bytes target).
    let bytes = Builder::new(13)
        .input("x", DataType::Float, &[D::N(2), D::N(3)])
        .init_i64("axes", &[13229323905400832])
        .node("Unsqueeze", "", "u", &["x", "axes"], &["y"], vec![])
        .output("y")
        .bytes();
    let result = Model::load_bytes(&bytes).and_then(|m| m.infer());
    let err = format!("{:#}", result.unwrap_err());
    assert!(err.contains("tract failed while") || err.contains("node 'u'"), "{err}");
}
