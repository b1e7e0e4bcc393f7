//! ONNX's integer `Div` of a shape value truncates toward zero, where a dim's `/` floors: torch's
//! dynamo exporter computes a convolution's output size as `floordiv(height - 1, 4) + 1`, written
//! `Div(height - 1, 4)`, which is `max(0, (height+3)/4-1)` (0 at `height = 0`, where the floor is
//! -1). tract's value was refused there and every dim after it became a fresh symbol. Expected
//! values are the truncated quotient, exact by construction.

mod common;

use common::onnx_build::{Builder, D};
use common::tensors::f32s;
use sliceops::tract_onnx::pb::tensor_proto::DataType;
use sliceops::Model;

/// `y = zeros(Div(len(x) + add, k))`: a value whose one dim is the quotient.
fn quotient_model(add: i64, k: i64) -> Vec<u8> {
    Builder::new(17)
        .input("x", DataType::Float, &[D::S("N")])
        .init_i64("add", &[add])
        .init_i64("k", &[k])
        .node("Shape", "", "shape", &["x"], &["s"], vec![])
        .node("Add", "", "plus", &["s", "add"], &["a"], vec![])
        .node("Div", "", "div", &["a", "k"], &["q"], vec![])
        .node("ConstantOfShape", "", "zeros", &["q"], &["y"], vec![])
        .output("y")
        .bytes()
}

fn inferred_y(bytes: &[u8]) -> String {
    common::inferred(bytes, &["y"]).remove(0)
}

fn run_len(bytes: &[u8], n: usize) -> usize {
    let out = Model::load_bytes(bytes).unwrap().run(vec![f32s(&[n], vec![0.0; n])]).unwrap();
    out[0].1.shape()[0]
}

#[test]
fn numerator_above_minus_k_is_max_zero_of_the_floor() {
    let bytes = quotient_model(-1, 4);
    assert_eq!(inferred_y(&bytes), "F32 [max(0,(N+3)/4-1)]");
    for n in [0usize, 1, 2, 4, 5, 9, 64] {
        // truncation toward zero, as onnxruntime's integer Div
        assert_eq!(run_len(&bytes, n), ((n as i64 - 1) / 4).max(0) as usize, "N = {n}");
    }
}

#[test]
fn numerator_never_negative_is_the_floor() {
    let bytes = quotient_model(6, 4);
    assert_eq!(inferred_y(&bytes), "F32 [(N+2)/4+1]");
    for n in [0usize, 1, 2, 5, 10] {
        assert_eq!(run_len(&bytes, n), (n + 6) / 4, "N = {n}");
    }
}

#[test]
fn numerator_possibly_below_minus_k_stays_unknown() {
    // N - 5 may be -5: trunc(-5/4) = -1, a negative size; the analysis does not guess a dim.
    let bytes = quotient_model(-5, 4);
    let model = Model::load_bytes(&bytes).unwrap();
    let facts = model.infer().unwrap();
    let dim = sliceops::format_dim(&facts.iter().find(|f| f.name == "y").unwrap().shape[0]);
    assert!(!dim.contains('N'), "{dim}");
}

#[test]
fn exact_quotient_of_two_shape_products_is_known() {
    // As torch's dynamo exporter writes a reshape size: (8*B*H) / (8*B), the dims of x [B, H].
    let bytes = Builder::new(17)
        .input("x", DataType::Float, &[D::S("B"), D::S("H")])
        .init_i64("zero", &[0])
        .init_i64("one", &[1])
        .init_i64("eight", &[8])
        .node("Shape", "", "shape", &["x"], &["s"], vec![])
        .node("Gather", "", "b", &["s", "zero"], &["b"], vec![("axis", common::onnx_build::A::I(0))])
        .node("Gather", "", "h", &["s", "one"], &["h"], vec![("axis", common::onnx_build::A::I(0))])
        .node("Mul", "", "b8", &["b", "eight"], &["b8"], vec![])
        .node("Mul", "", "b8h", &["b8", "h"], &["b8h"], vec![])
        .node("Div", "", "div", &["b8h", "b8"], &["q"], vec![])
        .node("ConstantOfShape", "", "zeros", &["q"], &["y"], vec![])
        .output("y")
        .bytes();
    assert_eq!(inferred_y(&bytes), "F32 [H]");
    let model = Model::load_bytes(&bytes).unwrap();
    let out = model.run(vec![f32s(&[2, 5], vec![0.0; 10])]).unwrap();
    assert_eq!(out[0].1.shape(), [5]);
}
