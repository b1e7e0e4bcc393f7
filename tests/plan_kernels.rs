//! The ops the optimized plan runs with our kernels instead of tract's (src/graph/plan_ops):
//! - Softmax and LogSoftmax over any axes (`AxisSoftmax`) give the formula's values, on our kernel
//!   or, for f32 rows a multiple of 4 long, on tract's row kernel;
//! - `Resize` on f32 (`RowResize`) gives tract's own op's values bit for bit, in every mode.

mod common;

use common::onnx_build::{Builder, A, D};
use sliceops::tract_onnx::pb::tensor_proto::DataType;
use sliceops::tract_onnx::prelude::*;
use sliceops::tract_onnx::tract_core::internal::EvalOp;
use sliceops::tract_onnx::tract_core::ops::nn::resize::{CoordTransformer, Interpolator, Nearest, Resize};
use sliceops::Model;

/// One `op` node over an input of `shape` and element type `dt`, at `opset`, with `axis`.
fn model(op: &str, dt: DataType, shape: &[usize], opset: i64, axis: i64) -> Model {
    let dims: Vec<D> = shape.iter().map(|&d| D::N(d as i64)).collect();
    let bytes = Builder::new(opset)
        .input("x", dt, &dims)
        .node(op, "", "sm", &["x"], &["y"], vec![("axis", A::I(axis))])
        .output("y")
        .bytes();
    Model::load_bytes(&bytes).unwrap()
}

/// Values over the whole range softmax cares about: negatives, ties, a spread of 20.
fn values(shape: &[usize]) -> Vec<f64> {
    (0..shape.iter().product::<usize>()).map(|i| ((i * 37 % 41) as f64 - 20.0) / 2.0).collect()
}

/// The formula over the axes `axes` (consecutive) of a tensor of `shape` in standard order, in f64.
fn formula(x: &[f64], shape: &[usize], axes: std::ops::Range<usize>, log: bool) -> Vec<f64> {
    let n: usize = shape[axes.clone()].iter().product();
    let inner: usize = shape[axes.end..].iter().product();
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

fn input(shape: &[usize], dt: DataType) -> Tensor {
    let t = tensor1(&values(shape)).into_shape(shape).unwrap();
    match dt {
        DataType::Float => t.cast_to::<f32>().unwrap().into_owned(),
        _ => t,
    }
}

fn output_f64(m: &Model, input: Tensor) -> Vec<f64> {
    let shape = input.shape().to_vec();
    let out = m.run(vec![input]).unwrap().remove(0).1;
    assert_eq!(out.shape(), shape);
    out.cast_to::<f64>().unwrap().try_as_plain_ram().unwrap().as_slice::<f64>().unwrap().to_vec()
}

/// Runs `op` at `opset` with `axis` on f32 and f64 inputs of `shape`: the plan has an `AxisSoftmax`
/// (then `Ln` for LogSoftmax, which tract writes as a softmax and a log) and the values are the
/// formula's over `axes`, within 4 units of rounding of the type.
fn check_softmax(op: &str, shape: &[usize], opset: i64, axis: i64, axes: std::ops::Range<usize>) {
    let log = op == "LogSoftmax";
    let want = formula(&values(shape), shape, axes, log);
    let what = format!("{op} opset {opset} axis {axis} over {shape:?}");
    for (dt, eps) in [(DataType::Float, f32::EPSILON as f64), (DataType::Double, f64::EPSILON)] {
        let m = model(op, dt, shape, opset, axis);
        let x = input(shape, dt);
        let ops: &[&str] = if log { &["Source", "AxisSoftmax", "Ln"] } else { &["Source", "AxisSoftmax"] };
        assert_eq!(plan_ops(&m, &x), ops, "{what}");
        for (got, want) in output_f64(&m, x).iter().zip(&want) {
            assert!((got - want).abs() <= 4.0 * eps * want.abs().max(1.0), "{what} {dt:?}: {got} vs {want}");
        }
    }
}

#[test]
fn softmax_and_log_softmax_over_any_axis_follow_the_formula() {
    let shape = [2, 5, 3, 6];
    for op in ["Softmax", "LogSoftmax"] {
        // Axes before the last (whole rows at a time), the last one (rows of 6), a negative axis.
        for (axis, axes) in [(0, 0..1), (1, 1..2), (2, 2..3), (3, 3..4), (-1, 3..4), (-3, 1..2)] {
            check_softmax(op, &shape, 13, axis, axes);
        }
    }
    // Opset 11 flattens every axis from `axis` on into one row (of 90 and 18 values here).
    check_softmax("Softmax", &shape, 11, 1, 1..4);
    check_softmax("Softmax", &shape, 11, 2, 2..4);
}

#[test]
fn rows_a_multiple_of_four_long_keep_tracts_row_kernel_and_its_values() {
    // AxisSoftmax hands these to tract's vectorized row kernel; the values are the formula's still.
    check_softmax("Softmax", &[3, 8], 13, 1, 1..2);
    check_softmax("Softmax", &[2, 3, 4], 11, 1, 1..3);
}

/// A Resize case: mode, coordinate transformation, nearest mode, and scales or sizes over an input
/// of shape `[1, 2, 3, 4]`.
struct ResizeCase {
    mode: &'static str,
    coordinates: &'static str,
    nearest: &'static str,
    scales: Option<[f32; 4]>,
    sizes: Option<[i64; 4]>,
}

const RESIZE_INPUT: [usize; 4] = [1, 2, 3, 4];

fn resize_cases() -> Vec<ResizeCase> {
    let case = |mode, coordinates, nearest, scales, sizes| ResizeCase { mode, coordinates, nearest, scales, sizes };
    vec![
        // Paddle's OCR detector: integer upsampling given by sizes.
        case("nearest", "asymmetric", "floor", None, Some([1, 2, 6, 8])),
        // Keras (tf2onnx): nearest to a size that is not a multiple, then bilinear.
        case("nearest", "tf_half_pixel_for_nn", "floor", None, Some([1, 2, 5, 7])),
        case("linear", "half_pixel", "floor", None, Some([1, 2, 7, 9])),
        case("linear", "pytorch_half_pixel", "floor", None, Some([1, 2, 2, 3])),
        case("linear", "align_corners", "floor", Some([1.0, 1.0, 2.0, 1.5]), None),
        case("cubic", "half_pixel", "floor", Some([1.0, 1.0, 1.5, 2.0]), None),
        case("nearest", "half_pixel", "round_prefer_ceil", Some([2.0, 1.0, 0.6, 1.75]), None),
    ]
}

fn resize_model(case: &ResizeCase) -> Model {
    let dims: Vec<D> = RESIZE_INPUT.iter().map(|&d| D::N(d as i64)).collect();
    let attrs = vec![
        ("mode", A::S(case.mode)),
        ("coordinate_transformation_mode", A::S(case.coordinates)),
        ("nearest_mode", A::S(case.nearest)),
    ];
    let b = Builder::new(13).input("x", DataType::Float, &dims).init_f32("roi", &[0], &[]);
    let b = match (case.scales, case.sizes) {
        (Some(scales), _) => {
            b.init_f32("scales", &[4], &scales).node("Resize", "", "rs", &["x", "roi", "scales"], &["y"], attrs)
        }
        (_, Some(sizes)) => {
            b.init_i64("sizes", &sizes).node("Resize", "", "rs", &["x", "", "", "sizes"], &["y"], attrs)
        }
        _ => unreachable!("a case has scales or sizes"),
    };
    Model::load_bytes(&b.output("y").bytes()).unwrap()
}

/// tract's own core Resize on the same input and parameters.
fn tract_resize(case: &ResizeCase, x: &Tensor) -> Tensor {
    let op = Resize {
        coord_transformer: CoordTransformer::parse(case.coordinates).unwrap(),
        interpolator: Interpolator::parse(case.mode).unwrap(),
        nearest: Nearest::parse(case.nearest).unwrap(),
        optional_scales_input: case.scales.map(|_| 1),
        optional_sizes_input: case.sizes.map(|_| 1),
    };
    let aux = match (case.scales, case.sizes) {
        (Some(scales), _) => tensor1(&scales),
        (_, Some(sizes)) => tensor1(&sizes),
        _ => unreachable!(),
    };
    let mut out = op.eval_out_of_plan(tvec!(x.clone().into_tvalue(), aux.into_tvalue())).unwrap().unwrap();
    out.remove(0).into_tensor()
}

#[test]
fn resize_runs_as_row_resize_with_tracts_values_bit_for_bit() {
    let values: Vec<f32> = (0..24).map(|i| ((i * 7 % 11) as f32 - 5.0) * 1.25 + 0.1).collect();
    let x = tensor1(&values).into_shape(&RESIZE_INPUT).unwrap();
    for case in resize_cases() {
        let what = format!("{} {} {}", case.mode, case.coordinates, case.nearest);
        let m = resize_model(&case);
        let ops = plan_ops(&m, &x);
        assert!(ops.contains(&"RowResize".to_string()) && !ops.contains(&"Resize".to_string()), "{what}: {ops:?}");
        let got = m.run(vec![x.clone()]).unwrap().remove(0).1;
        let want = tract_resize(&case, &x);
        assert_eq!(got.shape(), want.shape(), "{what}");
        let bits = |t: &Tensor| -> Vec<u32> {
            t.try_as_plain_ram().unwrap().as_slice::<f32>().unwrap().iter().map(|v| v.to_bits()).collect()
        };
        assert_eq!(bits(&got), bits(&want), "{what}");
    }
}

#[test]
fn integer_nearest_upsampling_by_sizes_repeats_pixels() {
    // The first case, written out: every output pixel (h, w) is input pixel (h / 2, w / 2).
    let x = tensor1(&(0..24).map(|v| v as f32).collect::<Vec<_>>()).into_shape(&RESIZE_INPUT).unwrap();
    let m = resize_model(&resize_cases()[0]);
    let got = m.run(vec![x]).unwrap().remove(0).1;
    let got = got.try_as_plain_ram().unwrap().as_slice::<f32>().unwrap().to_vec();
    let want: Vec<f32> = (0..2 * 6 * 8).map(|i| ((i / 48) * 12 + (i % 48 / 8 / 2) * 4 + (i % 8) / 2) as f32).collect();
    assert_eq!(got, want);
}
