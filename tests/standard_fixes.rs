//! Standard ops tract builds wrongly, replaced in src/ops (listed in src/ops/replaced.rs): `Mean` (tract panicked while
//! typing it), `OneHot` (tract panicked on an index out of range, and read int64 indices as i32),
//! `BitShift` (tract shifted by the amount modulo the width), `ReduceMax`/`ReduceMin` (tract gave
//! the largest finite float for sets of infinities), and the window functions and `MelWeightMatrix`
//! (tract read a negative size as a huge one). More cases against onnx's reference are in
//! tests/standard_ops.rs (`mod fixes`).

mod common;

use common::onnx_build::{Builder, A, D};
use common::tensors::{f32s, i64s};
use sliceops::tract_onnx::pb::tensor_proto::DataType;
use sliceops::tract_onnx::prelude::*;
use sliceops::Model;

fn vals<T: Datum + Clone>(t: &Tensor) -> Vec<T> {
    t.try_as_plain_ram().unwrap().as_slice::<T>().unwrap().to_vec()
}

fn run(bytes: Vec<u8>, inputs: Vec<Tensor>) -> anyhow::Result<Tensor> {
    Ok(Model::load_bytes(&bytes)?.run(inputs)?.remove(0).1)
}

fn mean_model(dt: DataType, shapes: &[&[i64]]) -> Vec<u8> {
    let names: Vec<String> = (0..shapes.len()).map(|i| format!("x{i}")).collect();
    let mut b = Builder::new(13);
    for (name, shape) in names.iter().zip(shapes) {
        let dims: Vec<D> = shape.iter().map(|&d| D::N(d)).collect();
        b = b.input(name, dt, &dims);
    }
    let inputs: Vec<&str> = names.iter().map(|s| s.as_str()).collect();
    b.node("Mean", "", "m", &inputs, &["y"], vec![]).output("y").bytes()
}

#[test]
fn mean_broadcasts_and_sums_left_to_right() {
    let a = f32s(&[2, 3], vec![1.0, 2.5, -3.0, 4.0, 0.1, 6.0]);
    let b = f32s(&[3], vec![10.0, 0.2, -1.0]);
    let c = f32s(&[1, 3], vec![0.3, 7.0, 2.0]);
    let got =
        run(mean_model(DataType::Float, &[&[2, 3], &[3], &[1, 3]]), vec![a.clone(), b.clone(), c.clone()]).unwrap();
    let (a, b, c) = (vals::<f32>(&a), vals::<f32>(&b), vals::<f32>(&c));
    // The sum divided by the count, correctly rounded (not multiplied by a rounded 1/3).
    let want: Vec<f32> = (0..6).map(|i| (a[i] + b[i % 3] + c[i % 3]) / 3.0).collect();
    assert_eq!(got.shape(), [2, 3]);
    assert_eq!(vals::<f32>(&got), want);
}

#[test]
fn mean_of_one_input_is_the_input() {
    let x = tract_ndarray::arr1(&[1.5f64, -2.0, 1e300]).into_tensor();
    let got = run(mean_model(DataType::Double, &[&[3]]), vec![x.clone()]).unwrap();
    assert_eq!(got, x);
}

#[test]
fn mean_of_integers_is_refused_by_name() {
    let e = run(mean_model(DataType::Int64, &[&[2], &[2]]), vec![i64s(&[1, 2]), i64s(&[3, 4])]).unwrap_err();
    assert!(format!("{e:#}").contains("node 'm' (Mean): Mean is defined on floats, got I64"), "{e:#}");
}

/// OneHot over int64 `indices` of `shape`, `depth` and `values` as initializers (or, with
/// `runtime`, as graph inputs), at `axis`.
fn one_hot_model(shape: &[i64], depth: i64, values: [i64; 2], axis: i64, runtime: bool) -> Vec<u8> {
    let dims: Vec<D> = shape.iter().map(|&d| D::N(d)).collect();
    let b = Builder::new(11).input("indices", DataType::Int64, &dims);
    let b = if runtime {
        b.input("depth", DataType::Int64, &[D::N(1)]).input("values", DataType::Int64, &[D::N(2)])
    } else {
        b.init_i64("depth", &[depth]).init_i64("values", &values)
    };
    b.node("OneHot", "", "oh", &["indices", "depth", "values"], &["y"], vec![("axis", A::I(axis))]).output("y").bytes()
}

/// The one-hot rows of `indices` over `depth` along the last axis: `on` at the index (negative
/// from the end), `off` elsewhere, all `off` for an index out of range.
fn rows(indices: &[i64], depth: i64, [off, on]: [i64; 2]) -> Vec<i64> {
    indices
        .iter()
        .flat_map(|&ix| {
            let at = if ix < 0 { ix + depth } else { ix };
            (0..depth).map(move |k| if k == at { on } else { off })
        })
        .collect()
}

#[test]
fn one_hot_indices_out_of_range_give_rows_of_off_values() {
    // 7 and -5 are out of range for depth 4; 2^32 + 1 would wrap to 1 read as i32.
    let indices = [0, -1, 3, 7, -5, (1 << 32) + 1];
    let got = run(one_hot_model(&[6], 4, [-2, 9], -1, false), vec![i64s(&indices)]).unwrap();
    assert_eq!(got.shape(), [6, 4]);
    assert_eq!(vals::<i64>(&got), rows(&indices, 4, [-2, 9]));
}

#[test]
fn one_hot_along_the_first_axis_and_with_runtime_depth() {
    let indices = [2, -1, 5];
    // axis 0: the transpose of the rows.
    let got = run(one_hot_model(&[3], 3, [0, 1], 0, false), vec![i64s(&indices)]).unwrap();
    assert_eq!(got.shape(), [3, 3]);
    assert_eq!(vals::<i64>(&got), [0, 0, 0, 0, 0, 0, 1, 1, 0]);
    // depth and values given when the model runs.
    let got = run(one_hot_model(&[3], 0, [0, 0], -1, true), vec![i64s(&indices), i64s(&[3]), i64s(&[5, 6])]).unwrap();
    assert_eq!(vals::<i64>(&got), rows(&indices, 3, [5, 6]));
}

#[test]
fn one_hot_bad_depth_and_axis_are_refused_by_name() {
    let e = run(one_hot_model(&[2], 0, [0, 1], -1, false), vec![i64s(&[0, 1])]).unwrap_err();
    assert!(format!("{e:#}").contains("node 'oh' (OneHot): depth is 0: it must be a positive integer"), "{e:#}");
    let e = run(one_hot_model(&[2], 3, [0, 1], 2, false), vec![i64s(&[0, 1])]).unwrap_err();
    assert!(format!("{e:#}").contains("node 'oh' (OneHot): axis 2 is out of range for an output of rank 2"), "{e:#}");
}

fn shift_model(dt: DataType, x: &[i64], y: &[i64], direction: &'static str) -> Vec<u8> {
    let dims = |s: &[i64]| s.iter().map(|&d| D::N(d)).collect::<Vec<_>>();
    Builder::new(11)
        .input("x", dt, &dims(x))
        .input("y", dt, &dims(y))
        .node("BitShift", "", "bs", &["x", "y"], &["z"], vec![("direction", A::S(direction))])
        .output("z")
        .bytes()
}

fn tensor_of<T: Datum + Copy>(v: &[T]) -> Tensor {
    tract_ndarray::arr1(v).into_tensor()
}

#[test]
fn bit_shifts_past_the_width_move_every_bit_out() {
    // int8: wrapping left shifts, arithmetic right shifts, amounts past the width or negative.
    let x = tensor_of::<i8>(&[-8, 4, -1, 3, 64]);
    let y = tensor_of::<i8>(&[8, 9, 127, 6, -1]);
    let left = run(shift_model(DataType::Int8, &[5], &[5], "LEFT"), vec![x.clone(), y.clone()]).unwrap();
    assert_eq!(vals::<i8>(&left), [0, 0, 0, -64, 0]);
    let right = run(shift_model(DataType::Int8, &[5], &[5], "RIGHT"), vec![x, y]).unwrap();
    assert_eq!(vals::<i8>(&right), [-1, 0, -1, 0, 0]);
    // uint8: past the width is 0 both ways; a shift amount broadcast from one value.
    let x = tensor_of::<u8>(&[200, 1, 255]);
    let right = run(shift_model(DataType::Uint8, &[3], &[1], "RIGHT"), vec![x.clone(), tensor_of::<u8>(&[9])]).unwrap();
    assert_eq!(vals::<u8>(&right), [0, 0, 0]);
    let left = run(shift_model(DataType::Uint8, &[3], &[1], "LEFT"), vec![x, tensor_of::<u8>(&[7])]).unwrap();
    assert_eq!(vals::<u8>(&left), [0, 128, 128]);
    // int64 within the width, as numpy.
    let x = tensor_of::<i64>(&[-5, 1 << 40]);
    let right = run(shift_model(DataType::Int64, &[2], &[2], "RIGHT"), vec![x, tensor_of::<i64>(&[1, 63])]).unwrap();
    assert_eq!(vals::<i64>(&right), [-3, 0]);
}

#[test]
fn bit_shift_bad_direction_and_types_are_refused_by_name() {
    let e = run(shift_model(DataType::Int8, &[1], &[1], "UP"), vec![]).unwrap_err();
    assert!(format!("{e:#}").contains("direction is \"UP\": it must be LEFT or RIGHT"), "{e:#}");
    let e = run(shift_model(DataType::Float, &[1], &[1], "LEFT"), vec![f32s(&[1], vec![1.0]), f32s(&[1], vec![1.0])])
        .unwrap_err();
    assert!(
        format!("{e:#}").contains("node 'bs' (BitShift): x and y must be integers of one type, got F32 and F32"),
        "{e:#}"
    );
}

/// ReduceMax over axis 1 of a [2, 3] input, opset 18, axes a constant initializer; the data an
/// initializer too when `data` is given (the node then folds at analysis).
fn max_model(data: Option<&[f32]>) -> Vec<u8> {
    let b = Builder::new(18).init_i64("axes", &[1]);
    let b = match data {
        Some(values) => b.init_f32("x", &[2, 3], values),
        None => b.input("x", DataType::Float, &[D::N(2), D::N(3)]),
    };
    b.node("ReduceMax", "", "rm", &["x", "axes"], &["y"], vec![("keepdims", A::I(0))]).output("y").bytes()
}

#[test]
fn reduce_max_of_infinities_with_constant_axes() {
    let ninf = f32::NEG_INFINITY;
    let x = [ninf, ninf, ninf, ninf, f32::MIN, 0.5];
    let got = run(max_model(None), vec![f32s(&[2, 3], x.to_vec())]).unwrap();
    assert_eq!(vals::<f32>(&got), [ninf, 0.5]);
    let x = [ninf, f32::MIN, ninf, ninf, ninf, ninf];
    let got = run(max_model(Some(&x)), vec![]).unwrap();
    assert_eq!(vals::<f32>(&got), [f32::MIN, ninf]);
}

/// `y = op(size)`, the size a graph input, at opset 17.
fn window_model(op: &str) -> Vec<u8> {
    Builder::new(17)
        .input("size", DataType::Int64, &[])
        .node(op, "", "w", &["size"], &["y"], vec![])
        .output("y")
        .bytes()
}

#[test]
fn windows_check_their_size_before_tract_computes_them() {
    // A periodic Hann window of 4: sin²(πn/4).
    let y = run(window_model("HannWindow"), vec![tensor0(4i64)]).unwrap();
    assert_eq!(vals::<f32>(&y), [0.0, 0.5, 1.0, 0.5]);
    for op in ["HannWindow", "HammingWindow", "BlackmanWindow"] {
        let e = format!("{:#}", run(window_model(op), vec![tensor0(-1i64)]).unwrap_err());
        assert!(e.contains(&format!("node 'w' ({op}): size is -1: it must be a non-negative integer")), "{e}");
        // A constant size is checked when tract computes the window, at analysis.
        let bytes = Builder::new(17)
            .init("size", DataType::Int64, &[], (-5i64).to_le_bytes().to_vec())
            .node(op, "", "w", &["size"], &["y"], vec![])
            .output("y")
            .bytes();
        let e = format!("{:#}", Model::load_bytes(&bytes).unwrap().infer().unwrap_err());
        assert!(e.contains(&format!("node 'w' ({op}): size is -5: it must be a non-negative integer")), "{e}");
    }
}

#[test]
fn mel_weight_matrix_checks_its_sizes_and_rate() {
    let bytes = Builder::new(17)
        .input("bins", DataType::Int64, &[])
        .input("dft", DataType::Int64, &[])
        .input("rate", DataType::Int64, &[])
        .init_f32("low", &[], &[0.0])
        .init_f32("high", &[], &[4096.0])
        .node("MelWeightMatrix", "", "mel", &["bins", "dft", "rate", "low", "high"], &["y"], vec![])
        .output("y")
        .bytes();
    let ok = run(bytes.clone(), vec![tensor0(8i64), tensor0(16i64), tensor0(8192i64)]).unwrap();
    assert_eq!(ok.shape(), [9, 8]);
    let cases = [
        ([8i64, 16, 0], "sample_rate is 0: it must be a positive integer"),
        ([-3, 16, 8192], "num_mel_bins is -3: it must be a non-negative integer"),
        ([1 << 40, 1 << 20, 8192], "output of 576461851815051264 elements of 8 bytes cannot be allocated"),
    ];
    for ([bins, dft, rate], why) in cases {
        let e = format!("{:#}", run(bytes.clone(), vec![tensor0(bins), tensor0(dft), tensor0(rate)]).unwrap_err());
        assert!(e.contains(&format!("node 'mel' (MelWeightMatrix): {why}")), "{e}");
    }
}

#[test]
fn a_fact_tract_asserts_on_is_an_error_of_the_node() {
    // Three equal parts of a length-1 axis: tract sizes the last part 1 - 2 * 1 = -1 and asserts
    // while building its fact; the run was a silent crash (exit 101), it is an error naming the node.
    let bytes = Builder::new(13)
        .input("x", DataType::Float, &[D::S("n")])
        .node("Split", "", "s", &["x"], &["a", "b", "c"], vec![("axis", A::I(0))])
        .output("a")
        .output("b")
        .output("c")
        .bytes();
    let e = format!("{:#}", run(bytes, vec![f32s(&[1], vec![1.0])]).unwrap_err());
    assert!(e.starts_with("node 's' (Split): "), "{e}");
}

/// `RotaryEmbedding` over `x: [1, 2, 3, 4]` (batch, heads, seq, head) with caches of `cache_rows`
/// rows of 2, read at runtime `position_ids`.
fn rotary_model(cache_rows: i64, rotary_dim: i64) -> Vec<u8> {
    let rows = cache_rows as usize;
    Builder::new(23)
        .input("x", DataType::Float, &[D::N(1), D::N(2), D::N(3), D::N(4)])
        .input("ids", DataType::Int64, &[D::N(1), D::N(3)])
        .init_f32("cos", &[cache_rows, 2], &vec![0.5; rows * 2])
        .init_f32("sin", &[cache_rows, 2], &vec![0.25; rows * 2])
        .node(
            "RotaryEmbedding",
            "",
            "rope",
            &["x", "cos", "sin", "ids"],
            &["y"],
            vec![("rotary_embedding_dim", A::I(rotary_dim))],
        )
        .output("y")
        .bytes()
}

#[test]
fn rotary_embedding_rotates_pairs_and_refuses_bad_positions_and_caches_by_name() {
    let x = f32s(&[1, 2, 3, 4], (0..24).map(|v| v as f32).collect());
    let y = run(rotary_model(8, 4), vec![x.clone(), i64s(&[0, 5, 7]).into_shape(&[1, 3]).unwrap()]).unwrap();
    // Each head [a, b, c, d] pairs (a, c) and (b, d): c·x1 - s·x2 and s·x1 + c·x2, c = 0.5, s = 0.25.
    let head: Vec<f32> = vals::<f32>(&y)[..4].to_vec();
    assert_eq!(head, [0.5 * 0.0 - 0.25 * 2.0, 0.5 * 1.0 - 0.25 * 3.0, 0.25 * 0.0 + 0.5 * 2.0, 0.25 * 1.0 + 0.5 * 3.0]);
    let e = run(rotary_model(8, 4), vec![x.clone(), i64s(&[0, 8, 1]).into_shape(&[1, 3]).unwrap()]).unwrap_err();
    assert!(
        format!("{e:#}").contains("node 'rope' (RotaryEmbedding): position_ids holds 8, outside the caches' 8 rows"),
        "{e:#}"
    );
    let e = run(rotary_model(8, 3), vec![x.clone(), i64s(&[0, 1, 2]).into_shape(&[1, 3]).unwrap()]).unwrap_err();
    assert!(format!("{e:#}").contains("rotary_embedding_dim 3 must be even and at most the head size 4"), "{e:#}");
    // Caches of 2 per row fit a rotation of 4 elements, not of 2 (which needs 1 per row).
    let e = run(rotary_model(8, 2), vec![x, i64s(&[0, 1, 2]).into_shape(&[1, 3]).unwrap()]).unwrap_err();
    assert!(format!("{e:#}").contains("cos_cache is [8, 2], expected [8, 1]"), "{e:#}");
}
