//! Softmax and LogSoftmax over an axis that is not the last: the plan runs them with our row-sweeping
//! kernel (`AxisSoftmax`) and gives the formula's values; trailing axes keep tract's own op.

mod common;

use common::onnx_build::{Builder, A, D};
use sliceops::tract_onnx::pb::tensor_proto::DataType;
use sliceops::tract_onnx::prelude::*;
use sliceops::Model;

const SHAPE: [usize; 4] = [2, 5, 3, 4];

/// One `op` node over an input of [`SHAPE`] and element type `dt`, at `opset`, with `axis`.
fn model(op: &str, dt: DataType, opset: i64, axis: i64) -> Model {
    let dims: Vec<D> = SHAPE.iter().map(|&d| D::N(d as i64)).collect();
    let bytes = Builder::new(opset)
        .input("x", dt, &dims)
        .node(op, "", "sm", &["x"], &["y"], vec![("axis", A::I(axis))])
        .output("y")
        .bytes();
    Model::load_bytes(&bytes).unwrap()
}

/// Values over the whole range softmax cares about: negatives, ties, a spread of 20.
fn values() -> Vec<f64> {
    (0..SHAPE.iter().product::<usize>()).map(|i| ((i * 37 % 41) as f64 - 20.0) / 2.0).collect()
}

/// The formula over `axis` (of a tensor of [`SHAPE`] in standard order), in f64.
fn formula(x: &[f64], axis: usize, log: bool) -> Vec<f64> {
    let n = SHAPE[axis];
    let inner: usize = SHAPE[axis + 1..].iter().product();
    let mut out = vec![0.0; x.len()];
    for (b, block) in x.chunks(n * inner).enumerate() {
        for j in 0..inner {
            let lane: Vec<f64> = (0..n).map(|k| block[k * inner + j]).collect();
            let max = lane.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
            let sum: f64 = lane.iter().map(|v| (v - max).exp()).sum();
            for (k, v) in lane.iter().enumerate() {
                out[b * n * inner + k * inner + j] = if log { v - max - sum.ln() } else { (v - max).exp() / sum };
            }
        }
    }
    out
}

/// The op names of the plan `m` makes for `input`.
fn plan_ops(m: &Model, input: &Tensor) -> Vec<String> {
    let plan = m.plan_for(std::slice::from_ref(input)).unwrap();
    plan.model().nodes().iter().map(|n| n.op().name().to_string()).collect()
}

fn input_f32() -> Tensor {
    let v: Vec<f32> = values().iter().map(|&v| v as f32).collect();
    tensor1(&v).into_shape(&SHAPE).unwrap()
}

fn input_f64() -> Tensor {
    tensor1(&values()).into_shape(&SHAPE).unwrap()
}

fn output_f64(m: &Model, input: Tensor) -> Vec<f64> {
    let out = m.run(vec![input]).unwrap().remove(0).1;
    assert_eq!(out.shape(), SHAPE);
    out.cast_to::<f64>().unwrap().try_as_plain_ram().unwrap().as_slice::<f64>().unwrap().to_vec()
}

#[test]
fn softmax_and_log_softmax_over_middle_axes_follow_the_formula() {
    for (op, log) in [("Softmax", false), ("LogSoftmax", true)] {
        for axis in [0usize, 1, 2] {
            let want = formula(&values(), axis, log);
            // float32: within a few units in the last place of the f64 formula.
            let m = model(op, DataType::Float, 13, axis as i64);
            // tract writes LogSoftmax as a softmax followed by Ln.
            let ops: &[&str] = if log { &["Source", "AxisSoftmax", "Ln"] } else { &["Source", "AxisSoftmax"] };
            assert_eq!(plan_ops(&m, &input_f32()), ops, "{op} axis {axis}");
            for (got, want) in output_f64(&m, input_f32()).iter().zip(&want) {
                assert!(
                    (got - want).abs() <= 4.0 * f32::EPSILON as f64 * want.abs().max(1.0),
                    "{op} {axis}: {got} {want}"
                );
            }
            // float64: the same formula in the same type.
            let m = model(op, DataType::Double, 13, axis as i64);
            for (got, want) in output_f64(&m, input_f64()).iter().zip(&want) {
                assert!((got - want).abs() <= 4.0 * f64::EPSILON * want.abs().max(1.0), "{op} {axis}: {got} {want}");
            }
        }
    }
}

#[test]
fn a_negative_axis_that_is_not_the_last_is_replaced_too() {
    let m = model("Softmax", DataType::Float, 13, -3);
    assert_eq!(plan_ops(&m, &input_f32()), ["Source", "AxisSoftmax"]);
    let want = formula(&values(), 1, false);
    for (got, want) in output_f64(&m, input_f32()).iter().zip(&want) {
        assert!((got - want).abs() <= 4.0 * f32::EPSILON as f64, "{got} {want}");
    }
}

#[test]
fn trailing_axes_keep_tracts_softmax() {
    // The last axis at opset 13, and opset 11's flattened softmax over axes 1.. (trailing, several).
    for (opset, axis) in [(13, 3), (13, -1), (11, 1)] {
        let m = model("Softmax", DataType::Float, opset, axis);
        assert_eq!(plan_ops(&m, &input_f32()), ["Source", "Softmax"], "opset {opset} axis {axis}");
    }
}
