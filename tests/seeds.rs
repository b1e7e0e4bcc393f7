//! Every worked example of the source documents the ops were specified from (TensorFlow, MindSpore,
//! Paddle, MXNet, PyTorch and Ascend docs), with its exact expected output.

mod common;

use common::{arange, run_view};
use sliceops::semantics::{AsStrided, MxnetSlice, Slice, StridedSlice};
use sliceops::view::View;

/// MindSpore's 3x2x3 example tensor `[[[1,1,1],[2,2,2]],[[3,3,3],[4,4,4]],[[5,5,5],[6,6,6]]]`.
fn mindspore_input() -> (Vec<i64>, Vec<i64>) {
    let data = (1..=6).flat_map(|v| [v, v, v]).collect();
    (data, vec![3, 2, 3])
}

fn ss(begin: &[i64], end: &[i64], strides: &[i64]) -> StridedSlice {
    StridedSlice { begin: begin.to_vec(), end: end.to_vec(), strides: Some(strides.to_vec()), ..Default::default() }
}

fn run_ss(spec: &StridedSlice, data: &[i64], shape: &[i64]) -> (Vec<usize>, Vec<i64>) {
    run_view(data, shape, &spec.resolve(shape).unwrap().to_view().unwrap())
}

#[test]
fn mindspore_strided_slice_first_output_is_3_and_5() {
    let (data, shape) = mindspore_input();
    // strided_slice(input_x, (1, 0, 2), (3, 1, 3), (1, 1, 1)) -> [[[3.]], [[5.]]]
    assert_eq!(run_ss(&ss(&[1, 0, 2], &[3, 1, 3], &[1, 1, 1]), &data, &shape), (vec![2, 1, 1], vec![3, 5]));
}

#[test]
fn mindspore_strided_slice_second_output_is_3_3_3() {
    let (data, shape) = mindspore_input();
    // strided_slice(input_x, (1, 0, 0), (2, 1, 3), (1, 1, 1)) -> [[[3., 3., 3.]]]
    assert_eq!(run_ss(&ss(&[1, 0, 0], &[2, 1, 3], &[1, 1, 1]), &data, &shape), (vec![1, 1, 3], vec![3, 3, 3]));
}

#[test]
fn mindspore_x_1_3_3_5_2_6_2_on_5_6_7() {
    // input_x[1:3, 3:5, 2:6:2] on a (5, 6, 7) tensor.
    let shape = [5, 6, 7];
    let data = arange(&shape);
    let (s, v) = run_ss(&ss(&[1, 3, 2], &[3, 5, 6], &[1, 1, 2]), &data, &shape);
    assert_eq!(s, vec![2, 2, 2]);
    let at = |i: i64, j: i64, k: i64| i * 42 + j * 7 + k;
    assert_eq!(
        v,
        vec![at(1, 3, 2), at(1, 3, 4), at(1, 4, 2), at(1, 4, 4), at(2, 3, 2), at(2, 3, 4), at(2, 4, 2), at(2, 4, 4)]
    );
}

#[test]
fn mindspore_short_spec_pads_with_whole_axes() {
    // begin (1, 3), end (3, 5), strides (1, 1) on (5, 6, 7) == input_x[1:3, 3:5, 0:7]
    let sel = ss(&[1, 3], &[3, 5], &[1, 1]).resolve(&[5i64, 6, 7]).unwrap();
    assert_eq!(sel.output_shape(), vec![2, 2, 7]);
}

#[test]
fn mindspore_begin_mask_3_end_mask_6_is_x_0_3_0_6_2_7_2() {
    // The doc's "0b110" and "0b011" are written reversed: bits 0,1 of begin_mask and bits 1,2 of
    // end_mask, giving input_x[0:3, 0:6, 2:7:2] on (5, 6, 7, 8).
    let spec = StridedSlice { begin_mask: 0b011, end_mask: 0b110, ..ss(&[1, 2, 2], &[3, 4, 5], &[1, 1, 2]) };
    let shape = [5, 6, 7, 8];
    let data = arange(&shape);
    let expected = spec_of("0:3, 0:6, 2:7:2", &data, &shape);
    assert_eq!(run_ss(&spec, &data, &shape), expected);
    assert_eq!(expected.0, vec![3, 6, 3, 8]);
}

#[test]
fn mindspore_ellipsis_x_2_ellipsis_6() {
    // input_x[2:, ..., :6] == input_x[2:5, :, :, 0:6] on (5, 6, 7, 8)
    let spec = StridedSlice {
        begin_mask: 0b100,
        end_mask: 0b001,
        ellipsis_mask: 0b010,
        ..ss(&[2, 0, 0], &[0, 0, 6], &[1, 1, 1])
    };
    let shape = [5, 6, 7, 8];
    let data = arange(&shape);
    let got = run_ss(&spec, &data, &shape);
    assert_eq!(got.0, vec![3, 6, 7, 6]);
    assert_eq!(got, spec_of("2:5, :, :, 0:6", &data, &shape));
    // input_x[2:, ...] == input_x[2:5, :, :, :]
    let spec = StridedSlice { end_mask: 0b01, ellipsis_mask: 0b10, ..ss(&[2, 0], &[0, 0], &[1, 1]) };
    assert_eq!(spec.resolve(&shape).unwrap().output_shape(), vec![3, 6, 7, 8]);
}

#[test]
fn mindspore_new_axis_mask_2_gives_5_1_6_7() {
    let spec = StridedSlice { new_axis_mask: 0b10, ..ss(&[0, 0], &[5, 0], &[1, 1]) };
    assert_eq!(spec.resolve(&[5i64, 6, 7]).unwrap().output_shape(), vec![5, 1, 6, 7]);
}

#[test]
fn mindspore_shrink_axis_mask_2_is_x_colon_5_colon() {
    let shape = [5, 6, 7];
    let data = arange(&shape);
    let spec = StridedSlice { shrink_axis_mask: 0b10, ..ss(&[0, 5, 0], &[5, 6, 7], &[1, 1, 1]) };
    let got = run_ss(&spec, &data, &shape);
    assert_eq!(got.0, vec![5, 7]);
    assert_eq!(got, spec_of(":, 5, :", &data, &shape));
    assert_eq!(&got.1[..3], &[35, 36, 37]);
}

fn ascend_3x3() -> (Vec<i64>, Vec<i64>) {
    ((1..=9).collect(), vec![3, 3])
}

#[test]
fn ascend_as_strided_size_2_2_stride_2_3_offset_0() {
    let (data, shape) = ascend_3x3();
    let view = AsStrided { size: vec![2, 2], stride: vec![2, 3], offset: 0 }.resolve(&shape).unwrap();
    assert_eq!(run_view(&data, &shape, &view), (vec![2, 2], vec![1, 4, 3, 6]));
}

#[test]
fn ascend_as_strided_offset_2() {
    let (data, shape) = ascend_3x3();
    let view = AsStrided { size: vec![2, 2], stride: vec![2, 3], offset: 2 }.resolve(&shape).unwrap();
    assert_eq!(run_view(&data, &shape, &view), (vec![2, 2], vec![3, 6, 5, 8]));
}

fn paddle_2x4() -> (Vec<i64>, Vec<i64>) {
    ((1..=8).collect(), vec![2, 4])
}

fn paddle(axes: &[i64], starts: &[i64], ends: &[i64], strides: Option<&[i64]>) -> (Vec<usize>, Vec<i64>) {
    let (data, shape) = paddle_2x4();
    let s = Slice {
        axes: Some(axes.to_vec()),
        starts: starts.to_vec(),
        ends: ends.to_vec(),
        steps: strides.map(<[i64]>::to_vec),
    };
    run_view(&data, &shape, &s.resolve(&shape).unwrap().to_view().unwrap())
}

#[test]
fn paddle_strided_slice_example_1_is_5_6_7() {
    assert_eq!(paddle(&[0, 1], &[1, 0], &[2, 3], Some(&[1, 1])), (vec![1, 3], vec![5, 6, 7]));
}

#[test]
fn paddle_strided_slice_example_2_is_8_7_6() {
    assert_eq!(paddle(&[0, 1], &[1, 3], &[2, 0], Some(&[1, -1])), (vec![1, 3], vec![8, 7, 6]));
}

#[test]
fn paddle_strided_slice_example_3_is_2() {
    assert_eq!(paddle(&[0, 1], &[0, 1], &[-1, 1000], Some(&[1, 3])), (vec![1, 1], vec![2]));
}

#[test]
fn paddle_slice_case_1_is_5_6_7() {
    assert_eq!(paddle(&[0, 1], &[1, 0], &[2, 3], None), (vec![1, 3], vec![5, 6, 7]));
}

#[test]
fn paddle_slice_case_2_is_2_3_4() {
    assert_eq!(paddle(&[0, 1], &[0, 1], &[-1, 1000], None), (vec![1, 3], vec![2, 3, 4]));
}

#[test]
fn paddle_slice_code_example_is_x_1_3_0_2_2_4() {
    // paddle.slice on a [4, 5, 6] input: axes [0,1,2], starts [-3,0,2], ends [3,2,4] -> input[1:3, 0:2, 2:4]
    let shape = [4, 5, 6];
    let data = arange(&shape);
    let s = Slice { axes: Some(vec![0, 1, 2]), starts: vec![-3, 0, 2], ends: vec![3, 2, 4], steps: None };
    let got = run_view(&data, &shape, &s.resolve(&shape).unwrap().to_view().unwrap());
    assert_eq!(got, spec_of("1:3, 0:2, 2:4", &data, &shape));
    assert_eq!(got.1, vec![32, 33, 38, 39, 62, 63, 68, 69]);
}

fn mxnet_3x4() -> (Vec<i64>, Vec<i64>) {
    ((1..=12).collect(), vec![3, 4])
}

#[test]
fn mxnet_slice_begin_0_1_end_2_4() {
    let (data, shape) = mxnet_3x4();
    let m = MxnetSlice { begin: vec![Some(0), Some(1)], end: vec![Some(2), Some(4)], step: vec![] };
    let view = m.resolve(&shape).unwrap().to_view().unwrap();
    assert_eq!(run_view(&data, &shape, &view), (vec![2, 3], vec![2, 3, 4, 6, 7, 8]));
}

#[test]
fn mxnet_slice_none_bounds_step_minus_1_2() {
    let (data, shape) = mxnet_3x4();
    let m = MxnetSlice { begin: vec![None, Some(0)], end: vec![None, Some(3)], step: vec![Some(-1), Some(2)] };
    let view = m.resolve(&shape).unwrap().to_view().unwrap();
    assert_eq!(run_view(&data, &shape, &view), (vec![3, 2], vec![9, 11, 5, 7, 1, 3]));
}

/// The reference's answer for a numpy expression.
fn spec_of(expr: &str, data: &[i64], shape: &[i64]) -> (Vec<usize>, Vec<i64>) {
    let axes = common::reference::numpy_axes(&common::parse_spec(expr), shape).unwrap();
    common::reference::gather(data, shape, &axes)
}

#[test]
fn identity_view_reads_everything() {
    let shape = [2, 3];
    let data = arange(&shape);
    assert_eq!(run_view(&data, &shape, &View::identity(&shape).unwrap()), (vec![2, 3], data));
}
