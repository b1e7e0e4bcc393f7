//! Table-driven tests, each named after the numpy expression it encodes. Each case goes through the
//! StridedSlice mask encoding (as TensorFlow writes it), the view and the kernel, and asserts the exact
//! shape and values, which are also checked against the index-by-index reference.

mod common;

use common::{arange, parse_spec, reference, run_view, to_strided_slice};
use sliceops::semantics::{AsStrided, Slice};

fn check(shape: &[i64], expr: &str, want_shape: &[usize], want: &[i64]) {
    let data = arange(shape);
    let spec = parse_spec(expr);
    let sel = to_strided_slice(&spec).resolve(shape).unwrap_or_else(|e| panic!("x[{expr}]: {e}"));
    let got = run_view(&data, shape, &sel.to_view().unwrap());
    let axes = reference::numpy_axes(&spec, shape).unwrap();
    assert_eq!(got, reference::gather(&data, shape, &axes), "x[{expr}] against the reference");
    assert_eq!(got, (want_shape.to_vec(), want.to_vec()), "x[{expr}]");
}

macro_rules! numpy_cases {
    ($($name:ident: $shape:expr, $expr:literal => $out_shape:expr, $values:expr;)*) => {
        $(
            #[test]
            fn $name() {
                check(&$shape, $expr, &$out_shape, &$values);
            }
        )*
    };
}

const MIN: &str = "-9223372036854775808";

numpy_cases! {
    x_colon_2_shrinks_the_last_dim: [3, 4], ":, 2" => [3], [2, 6, 10];
    x_2_shrinks_the_first_dim: [3, 4], "2" => [4], [8, 9, 10, 11];
    x_minus_1_minus_1_is_the_last_element: [3, 4], "-1, -1" => [], [11];
    x_ellipsis_none_1: [2, 3], "..., None, 1" => [2, 1], [1, 4];
    x_1_ellipsis_none_reversed: [2, 3, 4], "1, ..., None, ::-1" => [3, 1, 4], [15, 14, 13, 12, 19, 18, 17, 16, 23, 22, 21, 20];
    x_none_1_none_has_an_implicit_trailing_ellipsis: [3, 2], "None, 1, None" => [1, 1, 2], [2, 3];
    x_1_ellipsis_2_ellipsis_covers_zero_dims: [3, 4], "1, ..., 2" => [], [6];
    x_ellipsis_alone_is_the_identity: [2, 2], "..." => [2, 2], [0, 1, 2, 3];
    x_empty_spec_is_the_identity: [3], "" => [3], [0, 1, 2];
    x_reversed_both_axes_step_2: [2, 3], "::-1, ::-2" => [2, 2], [5, 3, 2, 0];
    x_begin_mask_negative_stride_from_last: [5], ":1:-1" => [3], [4, 3, 2];
    x_end_mask_negative_stride_to_first: [5], "3::-1" => [4], [3, 2, 1, 0];
    x_2_colon_colon_minus_1: [4], "2::-1" => [3], [2, 1, 0];
    x_minus_100_100_clamps: [5], "-100:100" => [5], [0, 1, 2, 3, 4];
    x_100_minus_100_minus_1_clamps_reversed: [5], "100:-100:-1" => [5], [4, 3, 2, 1, 0];
    x_minus_100_colon_colon_minus_1_is_empty: [5], "-100::-1" => [0], [];
    x_int64_min_to_max: [5], "-9223372036854775808:9223372036854775807" => [5], [0, 1, 2, 3, 4];
    x_int64_max_to_min_step_minus_1: [5], "9223372036854775807:-9223372036854775808:-1" => [5], [4, 3, 2, 1, 0];
    x_step_int64_max_takes_one: [5], "::9223372036854775807" => [1], [0];
    x_step_int64_min_takes_the_last: [5], "::-9223372036854775808" => [1], [4];
    x_3_1_is_empty: [5], "3:1" => [0], [];
    x_1_colon_minus_1_inner: [2, 4], ":, 1:-1" => [2, 2], [1, 2, 5, 6];
    x_colon_colon_2_inner: [2, 5], ":, ::2" => [2, 3], [0, 2, 4, 5, 7, 9];
    x_minus_3_colon_on_2_takes_all: [2], "-3:" => [2], [0, 1];
    x_none_none_on_scalar_like: [1], "None, None" => [1, 1, 1], [0];
    x_0_on_zero_sized_other_axis: [2, 0], "0" => [0], [];
}

#[test]
fn x_step_int64_min_from_int64_max_bound() {
    check(&[4], &format!("9223372036854775807::{MIN}"), &[1], &[3]);
}

fn onnx(shape: &[i64], starts: &[i64], ends: &[i64], axes: &[i64], steps: &[i64]) -> (Vec<usize>, Vec<i64>) {
    let data = arange(shape);
    let s =
        Slice { starts: starts.to_vec(), ends: ends.to_vec(), axes: Some(axes.to_vec()), steps: Some(steps.to_vec()) };
    let got = run_view(&data, shape, &s.resolve(shape).unwrap().to_view().unwrap());
    // The ONNX reference, axis by axis.
    let ref_axes: Vec<_> = (0..shape.len())
        .map(|a| match axes.iter().position(|x| (*x + shape.len() as i64) % shape.len() as i64 == a as i64) {
            Some(i) => reference::RefAxis::Indices(a, reference::onnx_indices(shape[a], starts[i], ends[i], steps[i])),
            None => reference::RefAxis::Indices(a, (0..shape[a]).collect()),
        })
        .collect();
    assert_eq!(got, reference::gather(&data, shape, &ref_axes));
    got
}

#[test]
fn onnx_starts_minus_1_ends_int64_max_steps_minus_1_is_empty() {
    assert_eq!(onnx(&[5], &[-1], &[i64::MAX], &[0], &[-1]), (vec![0], vec![]));
}

#[test]
fn onnx_starts_int64_max_ends_int64_min_steps_minus_1_reverses() {
    assert_eq!(onnx(&[4], &[i64::MAX], &[i64::MIN], &[0], &[-1]), (vec![4], vec![3, 2, 1, 0]));
}

#[test]
fn onnx_starts_minus_100_step_minus_1_takes_index_0() {
    // The one place ONNX clamping differs from Python: a start below -dim clamps to 0, not "before 0".
    assert_eq!(onnx(&[5], &[-100], &[-200], &[0], &[-1]), (vec![1], vec![0]));
}

#[test]
fn onnx_negative_axis_minus_1_step_2() {
    assert_eq!(onnx(&[2, 5], &[0], &[i64::MAX], &[-1], &[2]), (vec![2, 3], vec![0, 2, 4, 5, 7, 9]));
}

#[test]
fn onnx_bounds_below_minus_dim_clamp_to_0() {
    assert_eq!(onnx(&[4], &[-10], &[-3], &[0], &[1]), (vec![1], vec![0]));
}

#[test]
fn onnx_steps_int64_min_and_max_take_one_element() {
    assert_eq!(onnx(&[6], &[0], &[i64::MAX], &[0], &[i64::MAX]), (vec![1], vec![0]));
    assert_eq!(onnx(&[6], &[i64::MAX], &[i64::MIN], &[0], &[i64::MIN]), (vec![1], vec![5]));
}

#[test]
fn as_strided_zero_stride_broadcasts() {
    let shape = [3];
    let view = AsStrided { size: vec![2, 3], stride: vec![0, 1], offset: 0 }.resolve(&shape).unwrap();
    assert_eq!(run_view(&arange(&shape), &shape, &view), (vec![2, 3], vec![0, 1, 2, 0, 1, 2]));
    let view = AsStrided { size: vec![4], stride: vec![0], offset: 2 }.resolve(&shape).unwrap();
    assert_eq!(run_view(&arange(&shape), &shape, &view), (vec![4], vec![2, 2, 2, 2]));
}

#[test]
fn as_strided_overlapping_sliding_windows() {
    let shape = [6];
    let view = AsStrided { size: vec![4, 3], stride: vec![1, 1], offset: 0 }.resolve(&shape).unwrap();
    assert_eq!(run_view(&arange(&shape), &shape, &view), (vec![4, 3], vec![0, 1, 2, 1, 2, 3, 2, 3, 4, 3, 4, 5]));
}

#[test]
fn as_strided_empty_view_needs_no_bounds() {
    let shape = [2];
    let view = AsStrided { size: vec![0, 5], stride: vec![100, 100], offset: 1000 }.resolve(&shape).unwrap();
    assert_eq!(run_view(&arange(&shape), &shape, &view), (vec![0, 5], vec![]));
}

#[test]
fn as_strided_rank_0_reads_the_offset() {
    let shape = [2, 2];
    let view = AsStrided { size: vec![], stride: vec![], offset: 3 }.resolve(&shape).unwrap();
    assert_eq!(run_view(&arange(&shape), &shape, &view), (vec![], vec![3]));
}

#[test]
fn as_strided_offset_and_strides_near_i64_limits_over_a_fitting_tensor() {
    // Strides of a length-1 axis are never applied, so they may be anything non-negative.
    let shape = [4];
    let view = AsStrided { size: vec![1, 2], stride: vec![i64::MAX, 3], offset: 0 }.resolve(&shape).unwrap();
    assert_eq!(run_view(&arange(&shape), &shape, &view), (vec![1, 2], vec![0, 3]));
}
