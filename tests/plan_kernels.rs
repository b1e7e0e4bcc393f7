//! The ops the optimized plan runs with our kernels instead of tract's (src/plan/ops):
//! - Softmax and LogSoftmax over any axes (`AxisSoftmax`) give the formula's values, on our kernel
//!   or, for f32 rows a multiple of 4 long, on tract's row kernel;
//! - `Resize` on f32 (`RowResize`) gives tract's own op's values bit for bit, in every mode;
//! - a small `LSTM` of the plain form runs as one op (`LstmOp`, put in place when the model is typed)
//!   with the values of tract's `Scan`, in every direction and layout;
//! - a decomposed hard swish (`x * clip(x + 3, 0, 6) / 6`) runs as one `HardSwish` (`DefinedHardSwish`);
//! - 2-D max pooling on f32 channel planes (`PlaneMaxPool`) gives the definition's values, in
//!   every window, stride, padding and rounding mode;
//! - `x^3` on f32 (`CubePow`) is `x·x·x`, within two roundings of the exact cube;
//! - `Add`/`Sub`/`Mul` of broadcasting f32 operands (`BroadcastBin`) give the definition's bits, and
//!   `Div` (`ExactDiv`) too;
//! - a small f32 2-D convolution (`DirectConv`, put in place before code generation) gives the
//!   definition's values within the float32 error bound of its sums, with its bias, padding and a
//!   following `Relu` or `Clip` inside;
//! - a layer normalization over the last axis of an f32 tensor (`RowLayerNorm`, put in place before
//!   code generation) gives the definition's values within float32 rounding of its sums, its scale
//!   and bias inside;
//! - a small f32 matrix product (`SmallMatMul`, put in place before code generation) gives the
//!   definition's values within float32 rounding of its sums, in every layout of its axes (batch
//!   axes broadcast, several row or depth axes, a transposed or constant operand, an output whose
//!   columns are not its last axis), a following bias inside;
//! - a transpose tract plans as one moved axis (`MoveAxis`), and the strided reads (`Downsample`)
//!   before a strided 1x1 convolution, run as copies of our slicing kernel (`PlannedView`), their
//!   values in place;
//! - `ScatterElements` (`RowScatter`) gives the definition's values on any axis, with or without a
//!   reduction, and an index out of range is an error that names the node and the index;
//! - `NonZero` (`FlatNonZero`) gives the coordinates in row-major order and binds the count the
//!   nodes after it are sized by;
//! - a constant broadcast to a higher rank has the natural strides of its shape in the plan.

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
/// (an `AxisLogSoftmax` for LogSoftmax, one op, not a softmax and a log) and the values are the
/// formula's over `axes`, within 4 units of rounding of the type.
fn check_softmax(op: &str, shape: &[usize], opset: i64, axis: i64, axes: std::ops::Range<usize>) {
    let log = op == "LogSoftmax";
    let want = formula(&values(shape), shape, axes, log);
    let what = format!("{op} opset {opset} axis {axis} over {shape:?}");
    for (dt, eps) in [(DataType::Float, f32::EPSILON as f64), (DataType::Double, f64::EPSILON)] {
        let m = model(op, dt, shape, opset, axis);
        let x = input(shape, dt);
        let ops: &[&str] = if log { &["Source", "AxisLogSoftmax"] } else { &["Source", "AxisSoftmax"] };
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
fn a_large_resize_splits_over_threads_with_tracts_bits() {
    // [2, 3, 40, 60] to [2, 3, 160, 240] bilinear: 230,400 output values, split over 2 and 3
    // threads (its kernel gives each thread at least 65,536), on both axes.
    let shape = [2usize, 3, 40, 60];
    let values: Vec<f32> =
        (0..shape.iter().product::<usize>()).map(|i| ((i * 7919 % 1013) as f32 - 506.0) / 97.0).collect();
    let x = tensor1(&values).into_shape(&shape).unwrap();
    let dims: Vec<D> = shape.iter().map(|&d| D::N(d as i64)).collect();
    let attrs = vec![("mode", A::S("linear")), ("coordinate_transformation_mode", A::S("half_pixel"))];
    let b = Builder::new(13).input("x", DataType::Float, &dims).init_i64("sizes", &[2, 3, 160, 240]);
    let b = b.node("Resize", "", "rs", &["x", "", "", "sizes"], &["y"], attrs);
    let mut m = Model::load_bytes(&b.output("y").bytes()).unwrap();
    let case = ResizeCase {
        mode: "linear",
        coordinates: "half_pixel",
        nearest: "floor",
        scales: None,
        sizes: Some([2, 3, 160, 240]),
    };
    let want = tract_resize(&case, &x);
    let bits = |t: &Tensor| -> Vec<u32> {
        t.try_as_plain_ram().unwrap().as_slice::<f32>().unwrap().iter().map(|v| v.to_bits()).collect()
    };
    for threads in [1, 2, 8] {
        m.set_threads(Some(threads)).unwrap();
        let ops = plan_ops(&m, &x);
        assert!(ops.contains(&"RowResize".to_string()), "{threads} threads: {ops:?}");
        let got = m.run(vec![x.clone()]).unwrap().remove(0).1;
        assert_eq!(got.shape(), want.shape());
        assert_eq!(bits(&got), bits(&want), "{threads} threads");
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

/// One `LSTM` case: the node's direction, layout, optional inputs and outputs.
#[derive(Clone, Copy)]
struct LstmCase {
    direction: &'static str,
    batch_first: bool,
    bias: bool,
    states: bool,
    outputs: [&'static str; 3],
}

fn dirs(c: &LstmCase) -> usize {
    if c.direction == "bidirectional" {
        2
    } else {
        1
    }
}

/// Deterministic values in [-0.5, 0.5].
fn small_values(n: usize, seed: usize) -> Vec<f32> {
    (0..n).map(|i| (((i + seed) * 37 % 41) as f32 - 20.0) / 40.0).collect()
}

/// The case as a model over `x` (`[seq 5, batch 2, input 3]`, or batch first), `hidden` units, with
/// its weights as initializers; `clip` (1e30: no effect on these values) makes it a form our kernel
/// does not take, so tract's `Scan` runs it.
fn lstm_model(c: &LstmCase, clip: bool, hidden: i64) -> Vec<u8> {
    let (seq, batch, input) = (5i64, 2i64, 3i64);
    let dirs = if c.direction == "bidirectional" { 2 } else { 1 };
    let x_dims = if c.batch_first { [batch, seq, input] } else { [seq, batch, input] };
    let state = if c.batch_first { [batch, dirs, hidden] } else { [dirs, batch, hidden] };
    let n = |d: &[i64]| d.iter().product::<i64>() as usize;
    let mut b = Builder::new(22)
        .input("x", DataType::Float, &x_dims.map(D::N))
        .init_f32("w", &[dirs, 4 * hidden, input], &small_values(n(&[dirs, 4 * hidden, input]), 1))
        .init_f32("r", &[dirs, 4 * hidden, hidden], &small_values(n(&[dirs, 4 * hidden, hidden]), 2));
    b = b.init_f32("b", &[dirs, 8 * hidden], &small_values(n(&[dirs, 8 * hidden]), 3));
    b = b.init_f32("h0", &state, &small_values(n(&state), 4)).init_f32("c0", &state, &small_values(n(&state), 5));
    // X, W, R, B, sequence_lens, initial_h, initial_c; the ones not asked for empty, none trailing.
    // (tract's Scan fails on a clipped LSTM without initial states, or with constant zeros, over a
    // batch of 2: the clipped model, the reference, reads zeros, the specification's default, from
    // two more inputs.)
    if clip && !c.states {
        b = b.input("h0_zero", DataType::Float, &state.map(D::N)).input("c0_zero", DataType::Float, &state.map(D::N));
    }
    let mut inputs = vec!["x", "w", "r", if c.bias { "b" } else { "" }];
    if c.states {
        inputs.extend(["", "h0", "c0"]);
    } else if clip {
        inputs.extend(["", "h0_zero", "c0_zero"]);
    }
    while inputs.last() == Some(&"") {
        inputs.pop();
    }
    let mut attrs = vec![
        ("hidden_size", A::I(hidden)),
        ("direction", A::S(c.direction)),
        ("layout", A::I(i64::from(c.batch_first))),
    ];
    if clip {
        attrs.push(("clip", A::F(1e30)));
    }
    let outputs: Vec<&str> = c.outputs.to_vec();
    let mut b = b.node("LSTM", "", "lstm", &inputs, &outputs, attrs);
    for o in outputs.iter().filter(|o| !o.is_empty()) {
        b = b.output(o);
    }
    b.bytes()
}

#[test]
fn small_lstms_run_on_our_kernel_with_tracts_values() {
    let all = ["y", "y_h", "y_c"];
    let cases = [
        LstmCase { direction: "forward", batch_first: false, bias: true, states: true, outputs: all },
        LstmCase { direction: "forward", batch_first: false, bias: true, states: false, outputs: all },
        LstmCase { direction: "reverse", batch_first: false, bias: true, states: false, outputs: all },
        LstmCase { direction: "bidirectional", batch_first: false, bias: false, states: true, outputs: all },
        LstmCase { direction: "bidirectional", batch_first: true, bias: true, states: false, outputs: all },
        LstmCase { direction: "forward", batch_first: true, bias: false, states: false, outputs: ["", "y_h", ""] },
        LstmCase {
            direction: "bidirectional",
            batch_first: false,
            bias: true,
            states: false,
            outputs: ["y", "", "y_c"],
        },
    ];
    for c in &cases {
        let what = format!(
            "{} batch_first={} bias={} states={} {:?}",
            c.direction, c.batch_first, c.bias, c.states, c.outputs
        );
        let x_shape = if c.batch_first { [2, 5, 3] } else { [5, 2, 3] };
        let x = tensor1(&small_values(30, 6)).into_shape(&x_shape).unwrap();
        let ours = Model::load_bytes(&lstm_model(c, false, 4)).unwrap();
        assert!(plan_ops(&ours, &x).iter().any(|n| n == "LSTM"), "{what}: {:?}", plan_ops(&ours, &x));
        let got = ours.run(vec![x.clone()]).unwrap();
        // The reference: tract's Scan, sequence first (tract's Y for layout=1 and two directions is
        // [batch, 2*seq, 1, hidden], not the specification's [batch, seq, 2, hidden]), inputs and
        // outputs transposed to and from it.
        let reference = LstmCase { batch_first: false, ..*c };
        let stock = Model::load_bytes(&lstm_model(&reference, true, 4)).unwrap();
        let mut stock_inputs = vec![if c.batch_first { x.permute_axes(&[1, 0, 2]).unwrap() } else { x }];
        if !c.states {
            let state = [dirs(c), 2, 4];
            stock_inputs.extend([Tensor::zero::<f32>(&state).unwrap(), Tensor::zero::<f32>(&state).unwrap()]);
        }
        let plan = stock.plan_for(&stock_inputs).unwrap();
        assert!(plan.model().nodes().iter().any(|n| n.op().name() == "Scan"), "{what}");
        let mut want = stock.run(stock_inputs).unwrap_or_else(|e| panic!("{what}: {e:#}"));
        if c.batch_first {
            for (_, t) in &mut want {
                let perm: &[usize] = if t.rank() == 4 { &[2, 0, 1, 3] } else { &[1, 0, 2] };
                *t = std::mem::replace(t, tensor0(0f32)).permute_axes(perm).unwrap();
            }
        }
        assert_eq!(got.len(), want.len(), "{what}");
        for ((name, g), (_, w)) in got.iter().zip(&want) {
            assert_eq!(g.shape(), w.shape(), "{what}: {name}");
            let (g, w) = (g.try_as_plain_ram().unwrap(), w.try_as_plain_ram().unwrap());
            for (a, b) in g.as_slice::<f32>().unwrap().iter().zip(w.as_slice::<f32>().unwrap()) {
                assert!((a - b).abs() <= 1e-6, "{what}: {name}: {a} vs {b}");
            }
        }
    }
}

#[test]
fn lstms_of_another_form_or_size_stay_tracts() {
    let all = ["y", "y_h", "y_c"];
    let case = LstmCase { direction: "forward", batch_first: false, bias: true, states: true, outputs: all };
    let x = tensor1(&small_values(30, 6)).into_shape(&[5, 2, 3]).unwrap();
    let clipped = Model::load_bytes(&lstm_model(&case, true, 4)).unwrap();
    assert!(!plan_ops(&clipped, &x).iter().any(|n| n == "LSTM"), "{:?}", plan_ops(&clipped, &x));
    // 64 units: 256 gates over 67 inputs and states, 17,152 multiply-adds a step, above SMALL_STEP.
    let large = Model::load_bytes(&lstm_model(&case, false, 64)).unwrap();
    assert!(!plan_ops(&large, &x).iter().any(|n| n == "LSTM"), "{:?}", plan_ops(&large, &x));
    let medium = Model::load_bytes(&lstm_model(&case, false, 60)).unwrap();
    assert!(plan_ops(&medium, &x).iter().any(|n| n == "LSTM"), "{:?}", plan_ops(&medium, &x));
}

/// `y = x * clip(x + 3, 0, 6) / 6` over `x: [2, 3, 4, 5]` as MobileNetV3 exports write it (Add, Clip,
/// Mul, Div), the clipped value also a graph output when `expose`.
fn hard_swish_model(expose: bool) -> Model {
    let mut b = Builder::new(13)
        .input("x", DataType::Float, &[D::N(2), D::N(3), D::N(4), D::N(5)])
        .init_f32("three", &[], &[3.0])
        .init_f32("zero", &[], &[0.0])
        .init_f32("six", &[], &[6.0])
        .node("Add", "", "shift", &["x", "three"], &["shifted"], vec![])
        .node("Clip", "", "clip", &["shifted", "zero", "six"], &["clipped"], vec![])
        .node("Mul", "", "gate", &["x", "clipped"], &["product"], vec![])
        .node("Div", "", "scale", &["product", "six"], &["y"], vec![])
        .output("y");
    if expose {
        b = b.output("clipped");
    }
    Model::load_bytes(&b.bytes()).unwrap()
}

#[test]
fn a_decomposed_hard_swish_runs_as_one_hard_swish() {
    let shape = [2, 3, 4, 5];
    // Values across the three pieces: below -3, between, above 3.
    let xs: Vec<f32> = (0..120).map(|i| (i as f32 - 60.0) / 8.0).collect();
    let x = tensor1(&xs).into_shape(&shape).unwrap();
    let m = hard_swish_model(false);
    assert!(plan_ops(&m, &x).iter().any(|n| n == "DefinedHardSwish"), "{:?}", plan_ops(&m, &x));
    let y = m.run(vec![x.clone()]).unwrap().remove(0).1;
    for (got, &v) in y.try_as_plain_ram().unwrap().as_slice::<f32>().unwrap().iter().zip(&xs) {
        let want = v as f64 * (v as f64 + 3.0).clamp(0.0, 6.0) / 6.0;
        assert!((*got as f64 - want).abs() <= 1e-6 * (1.0 + want.abs()), "hardswish({v}) = {got}, expected {want}");
    }
    // A value of the chain read elsewhere keeps the chain as it is.
    let exposed = hard_swish_model(true);
    assert!(!plan_ops(&exposed, &x).iter().any(|n| n.ends_with("HardSwish")), "{:?}", plan_ops(&exposed, &x));
    let chain = exposed.run(vec![x]).unwrap().remove(0).1;
    let (chain, fused) = (chain.try_as_plain_ram().unwrap(), y.try_as_plain_ram().unwrap());
    for (a, b) in chain.as_slice::<f32>().unwrap().iter().zip(fused.as_slice::<f32>().unwrap()) {
        assert!((a - b).abs() <= 1e-6 * (1.0 + b.abs()), "{a} vs {b}");
    }
}

/// One `MaxPool` over `x: [2, 3, h, w]`: kernel, strides, pads (top, left, bottom, right), ceil_mode.
struct PoolCase {
    h: usize,
    w: usize,
    kernel: [usize; 2],
    strides: [usize; 2],
    pads: [usize; 4],
    ceil: bool,
}

/// The pooling by its definition: each output the maximum of the window's in-bounds inputs.
fn max_pool_reference(x: &[f32], c: &PoolCase) -> (Vec<usize>, Vec<f32>) {
    let out_dim = |len: usize, k: usize, s: usize, before: usize, after: usize| {
        let span = len + before + after - k;
        if c.ceil {
            span.div_ceil(s) + 1
        } else {
            span / s + 1
        }
    };
    let oh = out_dim(c.h, c.kernel[0], c.strides[0], c.pads[0], c.pads[2]);
    let ow = out_dim(c.w, c.kernel[1], c.strides[1], c.pads[1], c.pads[3]);
    let mut out = vec![];
    for plane in x.chunks(c.h * c.w) {
        for oy in 0..oh {
            for ox in 0..ow {
                let mut m = f32::NEG_INFINITY;
                for ky in 0..c.kernel[0] {
                    for kx in 0..c.kernel[1] {
                        let iy = (oy * c.strides[0] + ky) as isize - c.pads[0] as isize;
                        let ix = (ox * c.strides[1] + kx) as isize - c.pads[1] as isize;
                        if (0..c.h as isize).contains(&iy) && (0..c.w as isize).contains(&ix) {
                            m = m.max(plane[iy as usize * c.w + ix as usize]);
                        }
                    }
                }
                out.push(m);
            }
        }
    }
    (vec![2, 3, oh, ow], out)
}

#[test]
fn max_pooling_runs_as_plane_max_pool_with_the_definitions_values() {
    let cases = [
        PoolCase { h: 2, w: 96, kernel: [2, 2], strides: [2, 2], pads: [0; 4], ceil: false },
        PoolCase { h: 7, w: 9, kernel: [3, 3], strides: [2, 2], pads: [1, 1, 1, 1], ceil: false },
        PoolCase { h: 8, w: 8, kernel: [5, 5], strides: [1, 1], pads: [2, 2, 2, 2], ceil: false },
        PoolCase { h: 7, w: 10, kernel: [3, 2], strides: [3, 3], pads: [0, 1, 2, 0], ceil: true },
        PoolCase { h: 5, w: 6, kernel: [1, 3], strides: [1, 2], pads: [0; 4], ceil: true },
    ];
    for c in &cases {
        let what = format!(
            "h={} w={} kernel={:?} strides={:?} pads={:?} ceil={}",
            c.h, c.w, c.kernel, c.strides, c.pads, c.ceil
        );
        let attrs = vec![
            ("kernel_shape", A::Is(c.kernel.iter().map(|&k| k as i64).collect())),
            ("strides", A::Is(c.strides.iter().map(|&s| s as i64).collect())),
            ("pads", A::Is(c.pads.iter().map(|&p| p as i64).collect())),
            ("ceil_mode", A::I(i64::from(c.ceil))),
        ];
        let bytes = Builder::new(13)
            .input("x", DataType::Float, &[D::N(2), D::N(3), D::N(c.h as i64), D::N(c.w as i64)])
            .node("MaxPool", "", "pool", &["x"], &["y"], attrs)
            .output("y")
            .bytes();
        let m = Model::load_bytes(&bytes).unwrap();
        // Distinct values in a scrambled order, negative ones and minus infinity among them.
        let n = 6 * c.h * c.w;
        let mut xs: Vec<f32> = (0..n).map(|i| ((i * 7919) % n) as f32 - n as f32 / 2.0).collect();
        xs[n / 3] = f32::NEG_INFINITY;
        let x = tensor1(&xs).into_shape(&[2, 3, c.h, c.w]).unwrap();
        assert!(plan_ops(&m, &x).iter().any(|o| o == "PlaneMaxPool"), "{what}: {:?}", plan_ops(&m, &x));
        let y = m.run(vec![x]).unwrap().remove(0).1;
        let (shape, want) = max_pool_reference(&xs, c);
        assert_eq!(y.shape(), &shape[..], "{what}");
        assert_eq!(y.try_as_plain_ram().unwrap().as_slice::<f32>().unwrap(), &want[..], "{what}");
    }
}

#[test]
fn a_cube_runs_as_two_multiplications() {
    let pow_model = |exponent: f32| {
        let bytes = Builder::new(13)
            .input("x", DataType::Float, &[D::N(4), D::N(25)])
            .init_f32("e", &[], &[exponent])
            .node("Pow", "", "pow", &["x", "e"], &["y"], vec![])
            .output("y")
            .bytes();
        Model::load_bytes(&bytes).unwrap()
    };
    let xs: Vec<f32> = (0..100).map(|i| (i as f32 - 50.0) / 7.0).collect();
    let x = tensor1(&xs).into_shape(&[4, 25]).unwrap();
    let cube = pow_model(3.0);
    assert!(plan_ops(&cube, &x).iter().any(|o| o == "CubePow"), "{:?}", plan_ops(&cube, &x));
    let y = cube.run(vec![x.clone()]).unwrap().remove(0).1;
    for (got, &v) in y.try_as_plain_ram().unwrap().as_slice::<f32>().unwrap().iter().zip(&xs) {
        let want = (v as f64).powi(3);
        assert!((*got as f64 - want).abs() <= 2.5e-7 * want.abs(), "{v}^3 = {got}, expected {want}");
    }
    // Other exponents stay tract's.
    let other = pow_model(2.5);
    assert!(!plan_ops(&other, &x).iter().any(|o| o == "CubePow"), "{:?}", plan_ops(&other, &x));
}

#[test]
fn arithmetic_on_broadcasting_operands_runs_as_broadcast_bin_with_the_same_bits() {
    // (op, shape of a, shape of b): broadcasting on an outer axis, on two, on the last (left to
    // tract: runs of one value), and both ways at once.
    let cases: [(&str, [usize; 4], [usize; 4], bool); 5] = [
        ("Mul", [2, 3, 4, 5], [2, 1, 4, 5], true),
        ("Add", [2, 3, 4, 5], [1, 3, 1, 5], true),
        ("Sub", [1, 3, 4, 5], [2, 1, 4, 5], true),
        ("Div", [2, 3, 4, 5], [2, 3, 1, 5], true),
        ("Mul", [2, 3, 4, 5], [2, 3, 4, 1], false),
    ];
    let dims = |s: [usize; 4]| s.map(|d| D::N(d as i64));
    for (op, sa, sb, ours) in cases {
        let bytes = Builder::new(13)
            .input("a", DataType::Float, &dims(sa))
            .input("b", DataType::Float, &dims(sb))
            .node(op, "", "bin", &["a", "b"], &["y"], vec![])
            .output("y")
            .bytes();
        let m = Model::load_bytes(&bytes).unwrap();
        let values = |s: [usize; 4], seed: usize| -> Tensor {
            let n: usize = s.iter().product();
            tensor1(&(0..n).map(|i| ((i * 31 + seed) % 17) as f32 / 4.0 + 0.5).collect::<Vec<_>>())
                .into_shape(&s)
                .unwrap()
        };
        let (a, b) = (values(sa, 1), values(sb, 5));
        let plan = m.plan_for(&[a.clone(), b.clone()]).unwrap();
        let names: Vec<String> = plan.model().nodes().iter().map(|n| n.op().name().to_string()).collect();
        // A division runs as our exact one, whatever the shapes.
        let (kernel, ours) = if op == "Div" { ("ExactDiv", true) } else { ("BroadcastBin", ours) };
        assert_eq!(names.iter().any(|n| n == kernel), ours, "{op} {sa:?} {sb:?}: {names:?}");
        let y = m.run(vec![a.clone(), b.clone()]).unwrap().remove(0).1;
        // The definition, element by element, each input read at its broadcast index.
        let out: Vec<usize> = sa.iter().zip(&sb).map(|(x, y)| *x.max(y)).collect();
        assert_eq!(y.shape(), &out[..]);
        let (pa, pb) = (a.try_as_plain_ram().unwrap(), b.try_as_plain_ram().unwrap());
        let (va, vb) = (pa.as_slice::<f32>().unwrap(), pb.as_slice::<f32>().unwrap());
        let at = |s: [usize; 4], ix: &[usize]| -> usize {
            (0..4).fold(0, |acc, k| acc * s[k] + if s[k] == 1 { 0 } else { ix[k] })
        };
        let got = y.try_as_plain_ram().unwrap().as_slice::<f32>().unwrap().to_vec();
        let mut k = 0;
        for i0 in 0..out[0] {
            for i1 in 0..out[1] {
                for i2 in 0..out[2] {
                    for i3 in 0..out[3] {
                        let ix = [i0, i1, i2, i3];
                        let (x, z) = (va[at(sa, &ix)], vb[at(sb, &ix)]);
                        let want = match op {
                            "Add" => x + z,
                            "Sub" => x - z,
                            "Mul" => x * z,
                            _ => x / z,
                        };
                        assert_eq!(got[k].to_bits(), want.to_bits(), "{op} {sa:?} {sb:?} at {ix:?}");
                        k += 1;
                    }
                }
            }
        }
    }
}

/// A `Conv` (`[c_out, c_in, kh, kw]` kernel, pads, strides, dilations, group 1) over an f32 input
/// of `shape`, then `after` (`Relu`, `Clip` 0..6, or nothing); the weights and bias deterministic.
/// The scale and shift of output channel `co` in the batch normalization of [`conv_model`]'s `Bn`
/// cases.
fn bn_affine(co: usize) -> (f32, f32) {
    (0.5 + (co % 5) as f32 * 0.25, (co % 3) as f32 - 1.0)
}

fn conv_model(
    shape: [usize; 4],
    kernel: [usize; 4],
    strides: [i64; 2],
    pads: [i64; 4],
    after: &str,
) -> (Model, Vec<f32>, Vec<f32>) {
    // Groups: the input channels over those each output reads (depthwise: one each).
    let group = (shape[1] / kernel[1]) as i64;
    let dims: Vec<D> = shape.iter().map(|&d| D::N(d as i64)).collect();
    let n: usize = kernel.iter().product();
    let weights: Vec<f32> = (0..n).map(|i| ((i * 13 % 29) as f32 - 14.0) / 8.0).collect();
    let bias: Vec<f32> = (0..kernel[0]).map(|i| i as f32 / 4.0 - 1.0).collect();
    let attrs = vec![
        ("kernel_shape", A::Is(vec![kernel[2] as i64, kernel[3] as i64])),
        ("strides", A::Is(strides.to_vec())),
        ("pads", A::Is(pads.to_vec())),
        ("group", A::I(group)),
    ];
    let k: Vec<i64> = kernel.iter().map(|&d| d as i64).collect();
    let b = Builder::new(13)
        .input("x", DataType::Float, &dims)
        .init_f32("w", &k, &weights)
        .init_f32("b", &[kernel[0] as i64], &bias)
        .init_f32("low", &[], &[0.0])
        .init_f32("high", &[], &[6.0]);
    let conv_out = if after.is_empty() { "y" } else { "c" };
    let mut b = b.node("Conv", "", "conv", &["x", "w", "b"], &[conv_out], attrs);
    if let Some(rest) = after.strip_prefix("Bn") {
        // A batch normalization as exporters leave it: a scale, then a shift, per channel.
        let c = kernel[0];
        let (scale, shift): (Vec<f32>, Vec<f32>) = (0..c).map(bn_affine).unzip();
        let out = if rest.is_empty() { "y" } else { "d" };
        b = b
            .init_f32("scale", &[c as i64, 1, 1], &scale)
            .init_f32("shift", &[c as i64, 1, 1], &shift)
            .node("Mul", "", "mul", &["c", "scale"], &["s"], vec![])
            .node("Add", "", "add", &["s", "shift"], &[out], vec![]);
        if rest == "Relu" {
            b = b.node("Relu", "", "relu", &["d"], &["y"], vec![]);
        }
    }
    let b = match after {
        "Relu" => b.node("Relu", "", "relu", &["c"], &["y"], vec![]),
        "Clip" => b.node("Clip", "", "clip", &["c", "low", "high"], &["y"], vec![]),
        _ => b,
    };
    (Model::load_bytes(&b.output("y").bytes()).unwrap(), weights, bias)
}

/// A 2-D convolution (any group count) with a kernel of more than one tap and strides up to 2 runs
/// as `DirectConv`, its bias and a following `Relu` or `Clip` fused and no `Pad` before it; its values
/// are the definition's within the float32 error bound of the sum. A 1x1 kernel, a stride of 4 or a
/// deep kernel on a 7x7 map (the choice rule, `src/model/conv_rule.rs`) stays tract's.
#[test]
fn small_convolutions_run_on_the_direct_kernel_with_the_definitions_values() {
    let cases = [
        ([1, 3, 17, 23], [8, 3, 3, 3], [2, 2], [1, 1, 1, 1], "Relu", true),
        ([2, 5, 9, 12], [6, 5, 3, 3], [1, 1], [1, 1, 1, 1], "Clip", true),
        ([1, 4, 8, 30], [9, 4, 2, 5], [1, 2], [0, 2, 1, 0], "", true),
        ([1, 6, 7, 7], [16, 6, 3, 1], [2, 1], [0, 0, 0, 0], "Relu", true),
        ([1, 8, 6, 10], [4, 8, 1, 1], [1, 1], [0, 0, 0, 0], "Relu", false),
        ([1, 3, 16, 16], [8, 3, 4, 4], [4, 4], [0, 0, 0, 0], "", false),
        ([1, 12, 9, 21], [12, 1, 3, 3], [1, 1], [1, 1, 1, 1], "Relu", true),
        ([2, 7, 10, 13], [7, 1, 5, 5], [2, 1], [2, 2, 2, 2], "Clip", true),
        // A batch normalization folded into the weights and bias, with and without a Relu after.
        ([1, 8, 12, 20], [16, 8, 3, 3], [1, 1], [1, 1, 1, 1], "BnRelu", true),
        ([1, 12, 9, 21], [12, 1, 3, 3], [2, 1], [1, 1, 1, 1], "Bn", true),
        // Grouped: 4 groups of 2 input and 3 output channels; 2 groups at stride 2, batch 2.
        ([1, 8, 9, 11], [12, 2, 3, 3], [1, 1], [1, 1, 1, 1], "Relu", true),
        ([2, 6, 10, 7], [6, 3, 3, 3], [2, 1], [1, 0, 1, 1], "", true),
        // 2304 taps per output on a 7x7 map: tract's matrix product measured faster.
        ([1, 256, 7, 7], [32, 256, 3, 3], [1, 1], [1, 1, 1, 1], "", false),
    ];
    for (shape, kernel, strides, pads, after, ours) in cases {
        let (m, w, bias) = conv_model(shape, kernel, strides, pads, after);
        let x = input(&shape, DataType::Float);
        let names = plan_ops(&m, &x);
        let what = format!("{shape:?} {kernel:?} {strides:?} {pads:?} {after}: {names:?}");
        assert_eq!(names.iter().any(|n| n == "DirectConv"), ours, "{what}");
        if ours {
            // One node for the image, one for the convolution: bias, padding and clamp inside.
            assert_eq!(names.len(), 2, "{what}");
        }
        let xs = x.cast_to::<f64>().unwrap().try_as_plain_ram().unwrap().as_slice::<f64>().unwrap().to_vec();
        let y = m.run(vec![x]).unwrap().remove(0).1;
        let [n, c_in, h, wd] = shape;
        let [c_out, c_per_out, kh, kw] = kernel;
        let (sh, sw) = (strides[0] as usize, strides[1] as usize);
        let (oh, ow) =
            ((h + (pads[0] + pads[2]) as usize - kh) / sh + 1, (wd + (pads[1] + pads[3]) as usize - kw) / sw + 1);
        assert_eq!(y.shape(), &[n, c_out, oh, ow], "{what}");
        let got = y.try_as_plain_ram().unwrap().as_slice::<f32>().unwrap().to_vec();
        let mut i = 0;
        for b in 0..n {
            for co in 0..c_out {
                for oy in 0..oh {
                    for ox in 0..ow {
                        let (mut sum, mut size) = (bias[co] as f64, (bias[co] as f64).abs());
                        for ci in 0..c_per_out {
                            // Output channel co reads the input channels of its group.
                            let c = co / (c_out / (c_in / c_per_out)) * c_per_out + ci;
                            for ky in 0..kh {
                                for kx in 0..kw {
                                    let y = (oy * sh + ky) as i64 - pads[0];
                                    let xx = (ox * sw + kx) as i64 - pads[1];
                                    if (0..h as i64).contains(&y) && (0..wd as i64).contains(&xx) {
                                        let term = xs[((b * c_in + c) * h + y as usize) * wd + xx as usize]
                                            * w[((co * c_per_out + ci) * kh + ky) * kw + kx] as f64;
                                        sum += term;
                                        size += term.abs();
                                    }
                                }
                            }
                        }
                        if after.starts_with("Bn") {
                            let (scale, shift) = bn_affine(co);
                            sum = sum * scale as f64 + shift as f64;
                            size = size * scale as f64 + (shift as f64).abs();
                        }
                        let want = match after {
                            "Relu" | "BnRelu" => sum.max(0.0),
                            "Clip" => sum.clamp(0.0, 6.0),
                            _ => sum,
                        };
                        let bound = (c_per_out * kh * kw + 3) as f64 * f32::EPSILON as f64 * size;
                        assert!((got[i] as f64 - want).abs() <= bound, "{what} at {i}: {} vs {want}", got[i]);
                        i += 1;
                    }
                }
            }
        }
    }
}

/// 1x1 convolutions (MobileNetV2's) at batch 1 and 8: the choice rule of `SmallMatMul`
/// (`src/plan/passes/small_matmul.rs`) applies per image, so a batch runs on the kernel one image
/// does, except a 7x7 map with large weights at batch 1 (tract's packed product measured faster);
/// the values are the definition's either way.
#[test]
fn pointwise_convolutions_take_the_same_kernel_at_batch_1_and_8() {
    let cases = [
        // (image [c, h, w], output channels, whether SmallMatMul computes it at batch 1 and at 8)
        ([16, 28, 28], 24, [true, true]),
        ([24, 20, 20], 40, [true, true]),
        ([160, 7, 7], 192, [false, true]),
        ([32, 7, 7], 48, [true, true]),
        // 400 input channels: summed in two slices of the depth.
        ([400, 10, 10], 96, [true, true]),
        // A map of 1,600 columns: two blocks of columns.
        ([16, 40, 40], 24, [true, true]),
    ];
    for ([c, h, w], co, ours) in cases {
        for (batch, ours) in [1, 8].into_iter().zip(ours) {
            let shape = [batch, c, h, w];
            let (m, weights, bias) = conv_model(shape, [co, c, 1, 1], [1, 1], [0, 0, 0, 0], "Relu");
            let x = input(&shape, DataType::Float);
            let names = plan_ops(&m, &x);
            let what = format!("{shape:?} to {co} channels: {names:?}");
            assert_eq!(names.iter().any(|n| n == "SmallMatMul"), ours, "{what}");
            if ours {
                // The image, the weights, the product with its bias and Relu inside: no axis
                // moved, no add apart.
                assert!(names.iter().all(|n| ["Source", "Const", "SmallMatMul"].contains(&n.as_str())), "{what}");
            }
            let xs = x.cast_to::<f64>().unwrap().try_as_plain_ram().unwrap().as_slice::<f64>().unwrap().to_vec();
            let y = m.run(vec![x]).unwrap().remove(0).1;
            assert_eq!(y.shape(), &[batch, co, h, w], "{what}");
            let got = y.try_as_plain_ram().unwrap().as_slice::<f32>().unwrap().to_vec();
            for b in 0..batch {
                for o in 0..co {
                    for p in 0..h * w {
                        let terms = (0..c).map(|i| weights[o * c + i] as f64 * xs[(b * c + i) * h * w + p]);
                        let (sum, size) =
                            terms.fold((bias[o] as f64, (bias[o] as f64).abs()), |(s, z), t| (s + t, z + t.abs()));
                        let at = (b * co + o) * h * w + p;
                        let bound = (c + 2) as f64 * f32::EPSILON as f64 * size;
                        assert!((got[at] as f64 - sum.max(0.0)).abs() <= bound, "{what} at {at}: {} vs {sum}", got[at]);
                    }
                }
            }
        }
    }
}

/// A `LayerNormalization` (opset 17) over an f32 input of `shape` along `axis`, with a scale and,
/// if `bias`, a bias (deterministic, not all ones or zeros), and the optional mean and
/// inverse-deviation outputs if `stats`.
fn layer_norm_model(shape: &[usize], axis: i64, bias: bool, stats: bool) -> (Model, Vec<f32>, Vec<f32>) {
    let dims: Vec<D> = shape.iter().map(|&d| D::N(d as i64)).collect();
    let rank = shape.len() as i64;
    let normalized: Vec<i64> = shape[(axis.rem_euclid(rank)) as usize..].iter().map(|&d| d as i64).collect();
    let count = normalized.iter().product::<i64>() as usize;
    let scale: Vec<f32> = (0..count).map(|i| 0.5 + (i % 7) as f32 * 0.25).collect();
    let shift: Vec<f32> = if bias { (0..count).map(|i| (i % 5) as f32 * 0.5 - 1.0).collect() } else { vec![] };
    let mut b = Builder::new(17).input("x", DataType::Float, &dims).init_f32("scale", &normalized, &scale);
    let mut inputs = vec!["x", "scale"];
    if bias {
        b = b.init_f32("bias", &normalized, &shift);
        inputs.push("bias");
    }
    let outputs: &[&str] = if stats { &["y", "mean", "inv"] } else { &["y"] };
    b = b.node("LayerNormalization", "", "ln", &inputs, outputs, vec![("axis", A::I(axis)), ("epsilon", A::F(1e-5))]);
    for o in outputs {
        b = b.output(o);
    }
    (Model::load_bytes(&b.bytes()).unwrap(), scale, shift)
}

/// A layer normalization over the last axis of an f32 tensor runs as one `RowLayerNorm`, its scale
/// and bias inside, with the definition's values within float32 rounding of its sums; over more than
/// the last axis, or when its mean is an output too, it stays tract's (with the same values).
#[test]
fn layer_norms_over_the_last_axis_run_as_one_op_with_the_definitions_values() {
    let cases: [(&[usize], i64, bool, bool, bool); 6] = [
        (&[2, 5, 32], -1, true, false, true),
        (&[3, 48], 1, false, false, true),
        (&[1, 25, 17], 2, true, false, true),
        (&[4, 768], -1, true, false, true),
        (&[2, 3, 8], 1, true, false, false),
        (&[2, 5, 32], -1, true, true, false),
    ];
    for (shape, axis, bias, stats, ours) in cases {
        let (m, scale, shift) = layer_norm_model(shape, axis, bias, stats);
        let x = input(shape, DataType::Float);
        let names = plan_ops(&m, &x);
        let what = format!("{shape:?} axis {axis} bias {bias} stats {stats}: {names:?}");
        assert_eq!(names.iter().any(|n| n == "RowLayerNorm"), ours, "{what}");
        if ours {
            assert_eq!(names.len(), 2, "{what}");
        }
        let xs = x.cast_to::<f64>().unwrap().try_as_plain_ram().unwrap().as_slice::<f64>().unwrap().to_vec();
        let y = m.run(vec![x]).unwrap().remove(0).1;
        assert_eq!(y.shape(), shape, "{what}");
        let got = y.try_as_plain_ram().unwrap().as_slice::<f32>().unwrap().to_vec();
        let n = scale.len();
        for (r, row) in xs.chunks(n).enumerate() {
            let mean = row.iter().sum::<f64>() / n as f64;
            let var = row.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / n as f64;
            let inv = 1.0 / (var + 1e-5).sqrt();
            for (j, v) in row.iter().enumerate() {
                let normalized = (v - mean) * inv;
                let want = normalized * scale[j] as f64 + if bias { shift[j] as f64 } else { 0.0 };
                // Both sums are within n·ε of the sum of their terms' magnitudes; the inputs have a
                // spread of about 3 and a mean near 0, so the normalized value is within a few n·ε.
                let bound = 8.0 * n as f64 * f32::EPSILON as f64 * (1.0 + normalized.abs()) * scale[j] as f64;
                let g = got[r * n + j] as f64;
                assert!((g - want).abs() <= bound, "{what} at row {r} column {j}: {g} vs {want}");
            }
        }
    }
}

/// A product case: an `Einsum` equation (or `MatMul` when the equation's inputs broadcast as
/// `MatMul` does), its two input shapes, which inputs are initializers, whether an `Add` of one
/// value per output column follows, and whether the plan computes it with `SmallMatMul`.
struct ProductCase {
    equation: String,
    matmul: bool,
    shapes: [Vec<usize>; 2],
    constant: [bool; 2],
    /// The shape of a constant the product is multiplied by (numpy broadcasting), if any.
    scale: Option<Vec<usize>>,
    /// The shape of a constant added to the product (after the scale), if any.
    bias: Option<Vec<usize>>,
    /// The bounds of a `Clip` after all that, if any.
    clamp: Option<(f32, f32)>,
    /// Whether the plan has a `SmallMatMul`; `None`: either (random cases).
    small: Option<bool>,
}

/// The product's value in f64 by the equation's definition (an axis of length 1 in one input is
/// broadcast), for each output element the sum of its terms' magnitudes, and the number of terms
/// of each.
fn einsum_reference(equation: &str, shapes: [&[usize]; 2], x: [&[f64]; 2]) -> (Vec<usize>, Vec<f64>, Vec<f64>, usize) {
    let (ins, out) = equation.split_once("->").unwrap();
    let ins: Vec<Vec<char>> = ins.split(',').map(|s| s.chars().collect()).collect();
    let out: Vec<char> = out.chars().collect();
    let mut letters: Vec<(char, usize)> = vec![];
    for (i, term) in ins.iter().enumerate() {
        for (p, c) in term.iter().enumerate() {
            match letters.iter_mut().find(|(l, _)| l == c) {
                Some((_, len)) => *len = (*len).max(shapes[i][p]),
                None => letters.push((*c, shapes[i][p])),
            }
        }
    }
    let len = |c: &char| letters.iter().find(|(l, _)| l == c).unwrap().1;
    let out_shape: Vec<usize> = out.iter().map(len).collect();
    let size: usize = out_shape.iter().product();
    let (mut value, mut magnitude) = (vec![0.0; size], vec![0.0; size]);
    let total: usize = letters.iter().map(|l| l.1).product();
    for flat in 0..total {
        let mut rest = flat;
        let mut at = std::collections::HashMap::new();
        for (c, l) in letters.iter().rev() {
            at.insert(*c, rest % l);
            rest /= l;
        }
        let offset = |term: &[char], shape: &[usize]| {
            term.iter().zip(shape).fold(0, |o, (c, &d)| o * d + if d == 1 { 0 } else { at[c] })
        };
        let o = offset(&out, &out_shape);
        let term = x[0][offset(&ins[0], shapes[0])] * x[1][offset(&ins[1], shapes[1])];
        value[o] += term;
        magnitude[o] += term.abs();
    }
    (out_shape, value, magnitude, total / size.max(1))
}

/// Runs `case`: the plan has a `SmallMatMul` (and nothing else but the inputs and constants, the
/// bias inside) or not, as the case says, and every output value is the definition's within
/// float32 rounding of a sum of its terms. Returns whether the plan had a `SmallMatMul`.
fn check_product(case: &ProductCase) -> bool {
    let what = format!(
        "{} {:?} constant {:?} scale {:?} bias {:?}",
        case.equation, case.shapes, case.constant, case.scale, case.bias
    );
    let values = |shape: &[usize], seed: usize| -> Vec<f32> {
        (0..shape.iter().product::<usize>()).map(|i| ((i * 37 + seed * 11) % 41) as f32 / 16.0 - 1.25).collect()
    };
    let xs = [values(&case.shapes[0], 1), values(&case.shapes[1], 2)];
    let mut b = Builder::new(13);
    let mut fed = vec![];
    for (i, name) in ["a", "b"].into_iter().enumerate() {
        let dims: Vec<i64> = case.shapes[i].iter().map(|&d| d as i64).collect();
        if case.constant[i] {
            b = b.init_f32(name, &dims, &xs[i]);
        } else {
            let dims: Vec<D> = dims.iter().map(|&d| D::N(d)).collect();
            b = b.input(name, DataType::Float, &dims);
            fed.push(tensor1(&xs[i]).into_shape(&case.shapes[i]).unwrap());
        }
    }
    let x64 = |v: &[f32]| v.iter().map(|&v| v as f64).collect::<Vec<f64>>();
    let shapes = [&case.shapes[0][..], &case.shapes[1][..]];
    let (shape, mut want, magnitude, terms) = einsum_reference(&case.equation, shapes, [&x64(&xs[0]), &x64(&xs[1])]);
    b = if case.matmul {
        b.node("MatMul", "", "mm", &["a", "b"], &["p"], vec![])
    } else {
        let equation: &'static str = Box::leak(case.equation.clone().into_boxed_str());
        b.node("Einsum", "", "mm", &["a", "b"], &["p"], vec![("equation", A::S(equation))])
    };
    // The element of a constant of `cshape` each output element meets: the output's index, its
    // leading axes dropped and the constant's axes of length 1 at 0.
    let broadcast = |cshape: &[usize], flat: usize| {
        let lead = shape.len() - cshape.len();
        let (mut rest, mut at, mut step) = (flat, 0, 1);
        for (axis, &d) in shape.iter().enumerate().rev() {
            let i = rest % d;
            rest /= d;
            if axis >= lead {
                let cd = cshape[axis - lead];
                at += if cd == 1 { 0 } else { i * step };
                step *= cd;
            }
        }
        at
    };
    let mut last = "p";
    if let Some(scale_shape) = &case.scale {
        let scale: Vec<f32> = (0..scale_shape.iter().product()).map(|j: usize| (j % 5) as f32 * 0.25 + 0.5).collect();
        for (flat, w) in want.iter_mut().enumerate() {
            *w *= scale[broadcast(scale_shape, flat)] as f64;
        }
        let dims: Vec<i64> = scale_shape.iter().map(|&d| d as i64).collect();
        b = b.init_f32("scale", &dims, &scale).node("Mul", "", "mul", &["p", "scale"], &["q"], vec![]);
        last = "q";
    }
    if let Some(bias_shape) = &case.bias {
        let bias: Vec<f32> = (0..bias_shape.iter().product()).map(|j: usize| (j % 7) as f32 * 0.5 - 1.5).collect();
        for (flat, w) in want.iter_mut().enumerate() {
            *w += bias[broadcast(bias_shape, flat)] as f64;
        }
        let dims: Vec<i64> = bias_shape.iter().map(|&d| d as i64).collect();
        b = b.init_f32("bias", &dims, &bias).node("Add", "", "add", &[last, "bias"], &["y"], vec![]);
        last = "y";
    } else if case.clamp.is_none() {
        b = b.node("Identity", "", "id", &[last], &["y"], vec![]);
    }
    if let Some((low, high)) = case.clamp {
        for w in want.iter_mut() {
            *w = w.clamp(low as f64, high as f64);
        }
        let (input, output) = if last == "y" { ("y", "z") } else { (last, "z") };
        b = b.init_f32("low", &[], &[low]).init_f32("high", &[], &[high]).node(
            "Clip",
            "",
            "clip",
            &[input, "low", "high"],
            &[output],
            vec![],
        );
    }
    let result = if case.clamp.is_some() { "z" } else { "y" };
    let m = Model::load_bytes(&b.output(result).bytes()).unwrap();
    let plan = m.plan_for(&fed).unwrap();
    let names: Vec<String> = plan.model().nodes().iter().map(|n| n.op().name().to_string()).collect();
    let what = format!("{what}: {names:?}");
    let small = names.iter().any(|n| n == "SmallMatMul");
    assert!(case.small.is_none_or(|s| s == small), "{what}");
    if case.small == Some(true) {
        assert!(names.iter().all(|n| ["Source", "Const", "SmallMatMul"].contains(&n.as_str())), "{what}");
    }
    let y = m.run(fed).unwrap().remove(0).1;
    assert_eq!(y.shape(), shape, "{what}");
    let got = y.try_as_plain_ram().unwrap().as_slice::<f32>().unwrap().to_vec();
    for (i, (g, w)) in got.iter().zip(&want).enumerate() {
        // Scales are at most 1.5: the product's rounding grows with them, plus one rounding.
        let bound = (terms as f64 + 3.0) * f32::EPSILON as f64 * (1.5 * magnitude[i] + 2.0);
        assert!((*g as f64 - w).abs() <= bound, "{what} at {i}: {g} vs {w}");
    }
    small
}

/// Small float32 products run as one `SmallMatMul` with the definition's values, whatever the
/// layout of their axes; a large one stays tract's, with the same values.
#[test]
fn small_products_run_on_our_kernel_with_the_definitions_values() {
    let case = |equation: &str, matmul, shapes: [&[usize]; 2], constant, bias: &[usize], small| ProductCase {
        equation: equation.into(),
        matmul,
        shapes: shapes.map(|s| s.to_vec()),
        constant,
        scale: None,
        bias: (!bias.is_empty()).then(|| bias.to_vec()),
        clamp: None,
        small: Some(small),
    };
    let cases = [
        // A linear layer: constant weights, a bias, one batch axis of 1.
        case("amk,kn->amn", true, [&[1, 7, 32], &[32, 100]], [false, true], &[100], true),
        // Both inputs fed, columns not a multiple of 8.
        case("mk,kn->mn", false, [&[9, 13], &[13, 21]], [false, false], &[], true),
        // Attention scores: the second input's columns are not contiguous (gathered per call).
        case("bhsd,bhtd->bhst", false, [&[1, 4, 7, 8], &[1, 4, 7, 8]], [false, false], &[], true),
        // Grouped-query attention: a row axis the second input does not have.
        case("ahgst,tav->ahgsv", false, [&[2, 1, 2, 7, 7], &[7, 2, 8]], [false, false], &[], true),
        // Heads summed over: two depth axes, the calls adding into one block.
        case("cbmk,cbkn->mn", false, [&[2, 3, 7, 8], &[2, 3, 8, 32]], [false, true], &[32], true),
        // The constant operand first, laid out columns last; rows of the output from the second.
        case("nk,mk->mn", false, [&[24, 16], &[5, 16]], [true, false], &[24], true),
        // A batch axis last in the output: computed in a scratch block and scattered.
        case("bmk,bkn->mnb", false, [&[3, 4, 5], &[3, 5, 6]], [false, false], &[], true),
        // MatMul broadcasting a batch axis of 1 against 3.
        case("amk,akn->amn", true, [&[1, 7, 5], &[3, 5, 6]], [false, false], &[], true),
        // A vector times a matrix (no row axis) and a matrix times a vector (no column axis).
        case("k,kn->n", false, [&[12], &[12, 10]], [false, true], &[], true),
        case("mk,k->m", false, [&[10, 12], &[12]], [false, false], &[], true),
        // A 1x1 convolution's bias, one value per output channel (a row of the product).
        case("ck,kp->cp", true, [&[24, 16], &[16, 50]], [true, false], &[24, 1], true),
        // A constant of the output's whole shape, and one along a batch axis.
        case("mk,kn->mn", true, [&[4, 5], &[5, 6]], [false, false], &[4, 6], true),
        case("bmk,bkn->bmn", true, [&[3, 4, 5], &[3, 5, 6]], [false, false], &[3, 1, 1], true),
        // Too large: a first operand of 2^19 floats (our kernel rereads it for every tile of
        // columns) in 2^27 multiply-adds: tract's packed product.
        case("mk,kn->mn", true, [&[1024, 512], &[512, 256]], [false, true], &[], false),
    ];
    for c in &cases {
        check_product(c);
    }
    // A batch normalization after a 1x1 convolution (a scale, then a shift, per channel) and a
    // scale per column after a linear layer, then a `Clip`: the scale goes into the constant
    // operand, the shift starts the sums, the clamp ends them, and the plan is the product alone.
    let scaled = |equation: &str, shapes: [&[usize]; 2], constant, scale: &[usize], bias: &[usize]| ProductCase {
        equation: equation.into(),
        matmul: true,
        shapes: shapes.map(|s| s.to_vec()),
        constant,
        scale: Some(scale.to_vec()),
        bias: Some(bias.to_vec()),
        clamp: Some((0.0, 6.0)),
        small: Some(true),
    };
    check_product(&scaled("ck,kp->cp", [&[24, 16], &[16, 50]], [true, false], &[24, 1], &[24, 1]));
    check_product(&scaled("amk,kn->amn", [&[1, 7, 32], &[32, 100]], [false, true], &[100], &[100]));
    // A scale along the fed operand's axis stays a `Mul` of its own, with the same values.
    let mut along_pixels = scaled("ck,kp->cp", [&[24, 16], &[16, 50]], [true, false], &[50], &[24, 1]);
    along_pixels.small = None;
    assert!(check_product(&along_pixels));
}

/// A random two-input einsum over up to 5 axes, each a batch, row, column or depth axis of length 1
/// to 6, in a random order in each operand and the output; random constant operands and bias.
fn random_product(seed: u64) -> ProductCase {
    let mut state = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    let mut next = |n: u64| {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        (state % n) as usize
    };
    loop {
        let (mut a, mut b, mut out) = (vec![], vec![], vec![]);
        let mut len = std::collections::HashMap::new();
        for letter in "pqrst".chars().take(1 + next(5)) {
            len.insert(letter, 1 + next(6));
            match next(4) {
                0 => (a.push(letter), b.push(letter), out.push(letter)),
                1 => (a.push(letter), (), out.push(letter)),
                2 => ((), b.push(letter), out.push(letter)),
                _ => (a.push(letter), b.push(letter), ()),
            };
        }
        if a.is_empty() || b.is_empty() || out.is_empty() {
            continue;
        }
        for term in [&mut a, &mut b, &mut out] {
            for i in (1..term.len()).rev() {
                term.swap(i, next(i as u64 + 1));
            }
        }
        let text = |t: &[char]| t.iter().collect::<String>();
        // None, one value per element of the last axis or of another axis, or the whole shape.
        let dims: Vec<usize> = out.iter().map(|c| len[c]).collect();
        let mut constant_shape = |dims: &[usize]| match next(4) {
            0 => None,
            1 => Some(vec![*dims.last().unwrap()]),
            2 => {
                let axis = next(dims.len() as u64);
                Some((axis..dims.len()).map(|i| if i == axis { dims[i] } else { 1 }).collect())
            }
            _ => Some(dims.to_vec()),
        };
        let (scale_shape, bias_shape) = (constant_shape(&dims), constant_shape(&dims));
        return ProductCase {
            equation: format!("{},{}->{}", text(&a), text(&b), text(&out)),
            matmul: false,
            shapes: [a.iter().map(|c| len[c]).collect(), b.iter().map(|c| len[c]).collect()],
            constant: [next(3) == 0, next(2) == 0],
            scale: scale_shape,
            bias: bias_shape,
            clamp: [None, Some((0.0, f32::INFINITY)), Some((-1.0, 1.0))][next(3)],
            small: None,
        };
    }
}

/// 400 random einsums (every role, order, unit axis, constant operand and bias): the definition's
/// values, whether the plan computes them with `SmallMatMul` or not, and most of them with it.
#[test]
fn random_products_have_the_definitions_values() {
    let small = (0..400).filter(|&seed| check_product(&random_product(seed))).count();
    assert!(small > 200, "only {small} of 400 random products ran as SmallMatMul");
}

/// A product whose output rows run along the fed input (a 1x1 convolution: constant weights
/// `[c_out, c_in]` times pixels `[c_in, p]`) takes the fed input as the kernel's column operand,
/// read in place, and the weights as its rows: the output is written whole, not scattered.
#[test]
fn the_input_along_the_output_rows_is_the_column_operand() {
    let case = ProductCase {
        equation: "ck,kp->cp".into(),
        matmul: true,
        shapes: [vec![24, 16], vec![16, 50]],
        constant: [true, false],
        scale: None,
        bias: None,
        clamp: None,
        small: Some(true),
    };
    check_product(&case);
    let weights: Vec<f32> = (0..24 * 16).map(|i| i as f32).collect();
    let bytes = Builder::new(13)
        .init_f32("a", &[24, 16], &weights)
        .input("b", DataType::Float, &[D::N(16), D::N(50)])
        .node("MatMul", "", "mm", &["a", "b"], &["y"], vec![])
        .output("y")
        .bytes();
    let m = Model::load_bytes(&bytes).unwrap();
    let plan = m.plan_for(&[Tensor::zero::<f32>(&[16, 50]).unwrap()]).unwrap();
    let info: Vec<String> = plan.model().nodes().iter().flat_map(|n| n.op().info().unwrap()).collect();
    assert_eq!(info, ["1 calls of m=24 k=16 n=50, bias: false, constant second input: false"]);
}

/// A transpose that tract plans as one moved axis runs as one copy on our slicing kernel (a
/// `SliceView`, no `MoveAxis` left), with the input's values at their permuted places, in f32 and
/// in i64.
#[test]
fn moved_axes_run_as_one_copy_on_our_kernel() {
    let shape = [2usize, 3, 4, 5];
    for perm in [[0usize, 3, 1, 2], [0, 2, 3, 1], [1, 0, 2, 3], [0, 1, 3, 2]] {
        for dt in [DataType::Float, DataType::Int64] {
            let dims: Vec<D> = shape.iter().map(|&d| D::N(d as i64)).collect();
            let perm_i64: Vec<i64> = perm.iter().map(|&p| p as i64).collect();
            let bytes = Builder::new(13)
                .input("x", dt, &dims)
                .node("Transpose", "", "t", &["x"], &["y"], vec![("perm", A::Is(perm_i64))])
                .output("y")
                .bytes();
            let m = Model::load_bytes(&bytes).unwrap();
            let values: Vec<i64> = (0..120).collect();
            let x = tensor1(&values).into_shape(&shape).unwrap();
            let x = if dt == DataType::Float { x.cast_to::<f32>().unwrap().into_owned() } else { x };
            let names = plan_ops(&m, &x);
            assert_eq!(names, ["Source", "SliceView"], "{perm:?} {dt:?}");
            let y = m.run(vec![x]).unwrap().remove(0).1.cast_to::<i64>().unwrap().into_owned();
            let out_shape: Vec<usize> = perm.iter().map(|&p| shape[p]).collect();
            assert_eq!(y.shape(), out_shape, "{perm:?}");
            let got = y.try_as_plain_ram().unwrap().as_slice::<i64>().unwrap().to_vec();
            for (flat, g) in got.iter().enumerate() {
                let mut rest = flat;
                let mut index = [0usize; 4];
                for i in (0..4).rev() {
                    index[perm[i]] = rest % out_shape[i];
                    rest /= out_shape[i];
                }
                let want = ((index[0] * 3 + index[1]) * 4 + index[2]) * 5 + index[3];
                assert_eq!(*g, want as i64, "{perm:?} {dt:?} at {flat}");
            }
        }
    }
}

/// A strided 1x1 convolution (a shortcut of RegNet and ResNet): tract reads every second row and
/// column with `Downsample` nodes, which run as copies on our slicing kernel (`SliceView`, no
/// `Downsample` left); the values are the definition's, on odd and even maps and batches of 1 and 2.
#[test]
fn strided_reads_before_a_pointwise_convolution_run_as_copies_on_our_kernel() {
    for shape in [[1usize, 8, 9, 11], [2, 6, 10, 7], [1, 4, 16, 16]] {
        let [n, c, h, w] = shape;
        let co = 5;
        let (m, weights, bias) = conv_model(shape, [co, c, 1, 1], [2, 2], [0, 0, 0, 0], "");
        let x = input(&shape, DataType::Float);
        let names = plan_ops(&m, &x);
        assert!(names.iter().any(|n| n == "SliceView"), "{shape:?}: {names:?}");
        assert!(!names.iter().any(|n| n == "Downsample"), "{shape:?}: {names:?}");
        let xs = x.cast_to::<f64>().unwrap().try_as_plain_ram().unwrap().as_slice::<f64>().unwrap().to_vec();
        let y = m.run(vec![x]).unwrap().remove(0).1;
        let (oh, ow) = (h.div_ceil(2), w.div_ceil(2));
        assert_eq!(y.shape(), &[n, co, oh, ow], "{shape:?}");
        let got = y.try_as_plain_ram().unwrap().as_slice::<f32>().unwrap().to_vec();
        for (at, g) in got.iter().enumerate() {
            let (b, o, oy, ox) = (at / (co * oh * ow), at / (oh * ow) % co, at / ow % oh, at % ow);
            let terms = (0..c).map(|i| weights[o * c + i] as f64 * xs[((b * c + i) * h + 2 * oy) * w + 2 * ox]);
            let (sum, size) = terms.fold((bias[o] as f64, (bias[o] as f64).abs()), |(s, z), t| (s + t, z + t.abs()));
            let bound = (c + 2) as f64 * f32::EPSILON as f64 * size;
            assert!((*g as f64 - sum).abs() <= bound, "{shape:?} at {at}: {g} vs {sum}");
        }
    }
}

/// A product's clamp (a `Relu` taken into `SmallMatMul`) keeps NaN as NaN, as numpy's `maximum`
/// does, and clamps the rest.
#[test]
fn a_nan_stays_nan_through_a_products_clamp() {
    let bytes = Builder::new(13)
        .input("a", DataType::Float, &[D::N(2), D::N(3)])
        .init_f32("b", &[3, 4], &[1.0, -1.0, 2.0, 0.0, 1.0, -1.0, 2.0, 0.0, 1.0, -1.0, 2.0, 0.0])
        .node("MatMul", "", "mm", &["a", "b"], &["p"], vec![])
        .node("Relu", "", "relu", &["p"], &["y"], vec![])
        .output("y")
        .bytes();
    let m = Model::load_bytes(&bytes).unwrap();
    let a = tensor1(&[f32::NAN, 1.0, 1.0, 1.0, 1.0, 1.0]).into_shape(&[2, 3]).unwrap();
    assert_eq!(plan_ops(&m, &a), ["Source", "SmallMatMul"]);
    let y = m.run(vec![a]).unwrap().remove(0).1;
    let y = y.try_as_plain_ram().unwrap().as_slice::<f32>().unwrap().to_vec();
    assert!(y[..4].iter().all(|v| v.is_nan()), "{y:?}");
    assert_eq!(&y[4..], &[3.0, 0.0, 6.0, 0.0]);
}

/// A product large enough to be split over threads (2 to 3 million multiply-adds): one call split
/// by rows, calls writing apart split by calls, calls adding into one block (two depth axes) and
/// calls whose blocks interleave (a batch axis between rows and columns) split by rows; a constant
/// operand, a bias and a clamp inside. At 1 thread the definition's values within float32 rounding;
/// at 2 and 8 threads the same bits as at 1.
/// One product split over threads: its equation, the operands' shapes, whether the second is
/// constant, and the shape of a bias (empty for none).
type SplitCase = (&'static str, [&'static [usize]; 2], bool, &'static [usize]);

#[test]
fn small_products_split_over_threads_keep_their_bits() {
    let cases: [SplitCase; 4] = [
        ("mk,kn->mn", [&[101, 257], &[257, 77]], true, &[77]),
        ("bmk,bkn->bmn", [&[5, 37, 129], &[5, 129, 83]], false, &[]),
        ("cbmk,cbkn->mn", [&[3, 1, 99, 130], &[3, 1, 130, 70]], false, &[]),
        ("bmk,bkn->mbn", [&[4, 45, 120], &[4, 120, 96]], false, &[]),
    ];
    for (equation, shapes, constant, bias) in cases {
        let values = |shape: &[usize], seed: usize| -> Vec<f32> {
            (0..shape.iter().product::<usize>()).map(|i| ((i * 37 + seed * 11) % 41) as f32 / 16.0 - 1.25).collect()
        };
        let xs = [values(shapes[0], 1), values(shapes[1], 2)];
        let dims = |s: &[usize]| s.iter().map(|&d| D::N(d as i64)).collect::<Vec<_>>();
        let mut b = Builder::new(13).input("a", DataType::Float, &dims(shapes[0]));
        let mut fed = vec![tensor1(&xs[0]).into_shape(shapes[0]).unwrap()];
        if constant {
            let d: Vec<i64> = shapes[1].iter().map(|&d| d as i64).collect();
            b = b.init_f32("b", &d, &xs[1]);
        } else {
            b = b.input("b", DataType::Float, &dims(shapes[1]));
            fed.push(tensor1(&xs[1]).into_shape(shapes[1]).unwrap());
        }
        let x64 = |v: &[f32]| v.iter().map(|&v| v as f64).collect::<Vec<f64>>();
        let (shape, mut want, magnitude, terms) = einsum_reference(equation, shapes, [&x64(&xs[0]), &x64(&xs[1])]);
        b = b.node("Einsum", "", "mm", &["a", "b"], &["p"], vec![("equation", A::S(equation))]);
        let mut last = "p";
        if !bias.is_empty() {
            let values: Vec<f32> = (0..bias[0]).map(|j| (j % 7) as f32 * 0.5 - 1.5).collect();
            for (flat, w) in want.iter_mut().enumerate() {
                *w += values[flat % bias[0]] as f64;
            }
            b = b.init_f32("bias", &[bias[0] as i64], &values).node("Add", "", "add", &["p", "bias"], &["q"], vec![]);
            b = b.node("Relu", "", "relu", &["q"], &["y"], vec![]);
            want.iter_mut().for_each(|w| *w = w.max(0.0));
            last = "y";
        }
        let mut m = Model::load_bytes(&b.output(last).bytes()).unwrap();
        let mut runs = vec![];
        for threads in [1, 2, 8] {
            m.set_threads(Some(threads)).unwrap();
            let plan = m.plan_for(&fed).unwrap();
            let names: Vec<String> = plan.model().nodes().iter().map(|n| n.op().name().to_string()).collect();
            assert!(names.iter().any(|n| n == "SmallMatMul"), "{equation}: {names:?}");
            let y = m.run(fed.clone()).unwrap().remove(0).1;
            assert_eq!(y.shape(), shape, "{equation}");
            runs.push(y.try_as_plain_ram().unwrap().as_slice::<f32>().unwrap().to_vec());
        }
        for (i, (g, w)) in runs[0].iter().zip(&want).enumerate() {
            let bound = (terms as f64 + 3.0) * f32::EPSILON as f64 * (magnitude[i] + 2.0);
            assert!((*g as f64 - w).abs() <= bound, "{equation} at {i}: {g} vs {w}");
        }
        let bits = |v: &[f32]| v.iter().map(|f| f.to_bits()).collect::<Vec<_>>();
        for (threads, run) in [2, 8].into_iter().zip(&runs[1..]) {
            assert!(bits(run) == bits(&runs[0]), "{equation}: {threads} threads differ from 1");
        }
    }
}

/// `ScatterElements` on `axis` with `reduction` over f32 data [3, 4, 5] and int64 indices/updates of
/// `shape`, all three graph inputs.
fn scatter_model(axis: i64, reduction: &'static str, shape: &[usize]) -> Model {
    let dims: Vec<D> = shape.iter().map(|&d| D::N(d as i64)).collect();
    let bytes = Builder::new(18)
        .input("data", DataType::Float, &[D::N(3), D::N(4), D::N(5)])
        .input("indices", DataType::Int64, &dims)
        .input("updates", DataType::Float, &dims)
        .node(
            "ScatterElements",
            "",
            "scatter",
            &["data", "indices", "updates"],
            &["y"],
            vec![("axis", A::I(axis)), ("reduction", A::S(reduction))],
        )
        .output("y")
        .bytes();
    Model::load_bytes(&bytes).unwrap()
}

#[test]
fn scatter_elements_runs_as_row_scatter_with_the_definitions_values() {
    let data_shape = [3usize, 4, 5];
    let shape = [2usize, 3, 4];
    let data: Vec<f32> = (0..60).map(|i| (i % 7) as f32 - 3.0).collect();
    let updates: Vec<f32> = (0..24).map(|i| (i % 5) as f32 * 1.5 - 2.0).collect();
    for axis in 0..3usize {
        let len = data_shape[axis] as i64;
        // every index from -len to len - 1, repeats included
        let indices: Vec<i64> = (0..24).map(|i| (i * 7 % (2 * len)) - len).collect();
        for reduction in ["none", "add", "mul", "min", "max"] {
            let m = scatter_model(axis as i64, reduction, &shape);
            let inputs = vec![
                tensor1(&data).into_shape(&data_shape).unwrap(),
                tensor1(&indices).into_shape(&shape).unwrap(),
                tensor1(&updates).into_shape(&shape).unwrap(),
            ];
            let plan = m.plan_for(&inputs).unwrap();
            let ops: Vec<String> = plan.model().nodes().iter().map(|n| n.op().name().to_string()).collect();
            assert!(ops.contains(&"RowScatter".to_string()), "{ops:?}");
            // the definition: each update, in order, at its own coordinates with the index on `axis`
            let mut want = data.clone();
            for (n, (&i, &u)) in indices.iter().zip(&updates).enumerate() {
                let mut at = [n / 12, n / 4 % 3, n % 4];
                at[axis] = if i < 0 { (i + len) as usize } else { i as usize };
                let d = &mut want[at[0] * 20 + at[1] * 5 + at[2]];
                *d = match reduction {
                    "none" => u,
                    "add" => *d + u,
                    "mul" => *d * u,
                    "min" => d.min(u),
                    _ => d.max(u),
                };
            }
            let out = m.run(inputs).unwrap().remove(0).1;
            assert_eq!(out.shape(), data_shape);
            assert_eq!(out.try_as_plain_ram().unwrap().as_slice::<f32>().unwrap(), want, "axis {axis} {reduction}");
        }
    }
}

#[test]
fn a_scatter_index_out_of_range_is_an_error_naming_it() {
    let m = scatter_model(1, "none", &[1, 1, 1]);
    let inputs = vec![Tensor::zero::<f32>(&[3, 4, 5]).unwrap(), tensor3(&[[[4i64]]]), tensor3(&[[[1f32]]])];
    let err = sliceops::describe_error(&m.run(inputs).unwrap_err());
    assert_eq!(err, "node 'scatter' (RowScatter): index 4 is out of range for axis 1 of size 4 (allowed: -4 to 3)");
}

/// `NonZero` over a `Greater` (a detector's score threshold) runs as `FlatNonZero`: the coordinates
/// of the set elements in row-major order, and a node after it (`Transpose`) sized by the count it
/// binds, on inputs with none, some and all elements set.
#[test]
fn nonzero_runs_as_flat_nonzero_and_sizes_what_follows() {
    let bytes = Builder::new(13)
        .input("x", DataType::Float, &[D::N(2), D::N(3)])
        .init_f32("t", &[], &[0.5])
        .node("Greater", "", "greater", &["x", "t"], &["g"], vec![])
        .node("NonZero", "", "nonzero", &["g"], &["n"], vec![])
        .node("Transpose", "", "transpose", &["n"], &["y"], vec![])
        .output("y")
        .bytes();
    let m = Model::load_bytes(&bytes).unwrap();
    let cases: [(&[f32], Vec<i64>); 3] = [
        (&[0.0, 0.1, 0.2, 0.3, 0.4, 0.5], vec![]),
        (&[0.0, 0.9, 0.2, 0.7, 0.4, f32::NAN], vec![0, 1, 1, 0]),
        (&[1.0; 6], vec![0, 0, 0, 1, 0, 2, 1, 0, 1, 1, 1, 2]),
    ];
    for (x, want) in cases {
        let input = tensor1(x).into_shape(&[2, 3]).unwrap();
        let plan = m.plan_for(std::slice::from_ref(&input)).unwrap();
        let ops: Vec<String> = plan.model().nodes().iter().map(|n| n.op().name().to_string()).collect();
        assert!(ops.contains(&"FlatNonZero".to_string()), "{ops:?}");
        let (_, y) = m.run(vec![input]).unwrap().remove(0);
        assert_eq!(y.shape(), &[want.len() / 2, 2]);
        assert_eq!(y.try_as_plain_ram().unwrap().as_slice::<i64>().unwrap(), &want[..]);
    }
}

/// A constant broadcast to a higher rank (`[3, 1, 1]` against `[1, 3, H, W]`, a per-channel
/// normalization) is in the plan with the natural strides of its shape (tract's new unit axis
/// copies the next axis' stride, and its binary chains took their slow path for it), with its
/// values: the output is the definition's, bit for bit.
#[test]
fn constants_broadcast_to_a_higher_rank_have_natural_strides() {
    let bytes = Builder::new(13)
        .input("x", DataType::Float, &[D::N(1), D::N(3), D::N(4), D::N(5)])
        .init_f32("m", &[3, 1, 1], &[0.5, -0.25, 2.0])
        .init_f32("s", &[3, 1, 1], &[0.2, 4.0, -1.5])
        .node("Sub", "", "sub", &["x", "m"], &["d"], vec![])
        .node("Mul", "", "mul", &["d", "s"], &["y"], vec![])
        .output("y")
        .bytes();
    let m = Model::load_bytes(&bytes).unwrap();
    let x: Vec<f32> = (0..60).map(|i| i as f32 * 0.37 - 7.0).collect();
    let input = tensor1(&x).into_shape(&[1, 3, 4, 5]).unwrap();
    let plan = m.plan_for(std::slice::from_ref(&input)).unwrap();
    let mut consts = 0;
    for node in plan.model().nodes() {
        if let Some(k) = node.op_as::<tract_onnx::tract_core::ops::konst::Const>() {
            let t = k.val();
            assert_eq!(t.strides(), &*Tensor::natural_strides(t.shape()), "{}: {t:?}", node.name);
            consts += 1;
        }
    }
    assert!(consts >= 2, "{consts} constants in the plan");
    let (_, y) = m.run(vec![input]).unwrap().remove(0);
    let (mean, scale) = ([0.5f32, -0.25, 2.0], [0.2f32, 4.0, -1.5]);
    let want: Vec<u32> = (0..60).map(|i| ((x[i] - mean[i / 20]) * scale[i / 20]).to_bits()).collect();
    let got: Vec<u32> = y.try_as_plain_ram().unwrap().as_slice::<f32>().unwrap().iter().map(|v| v.to_bits()).collect();
    assert_eq!(got, want);
}
