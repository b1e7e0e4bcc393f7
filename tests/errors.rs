//! Every error rule: the typed error and its exact message.

use sliceops::semantics::{AsStrided, MxnetSlice, Slice, StridedSlice};
use sliceops::SliceError;

fn ss(begin: &[i64], end: &[i64], strides: &[i64]) -> StridedSlice {
    StridedSlice { begin: begin.to_vec(), end: end.to_vec(), strides: Some(strides.to_vec()), ..Default::default() }
}

fn ss_err(spec: StridedSlice, shape: &[i64]) -> SliceError {
    spec.resolve(shape).unwrap_err()
}

#[test]
fn strided_slice_two_ellipsis_bits() {
    let e = ss_err(StridedSlice { ellipsis_mask: 0b101, ..ss(&[0; 3], &[0; 3], &[1; 3]) }, &[2, 2]);
    assert_eq!(e, SliceError::MultipleEllipsis { mask: 5 });
    assert_eq!(
        e.to_string(),
        "ellipsis_mask 5 sets more than one ellipsis among the spec's entries (at most one is allowed)"
    );
}

#[test]
fn strided_slice_ellipsis_bits_past_the_spec_are_ignored() {
    // Bit 3 and bit 63 would be ellipses of entries the spec does not have.
    let spec = StridedSlice { ellipsis_mask: 0b1000 | (1 << 62), ..ss(&[0; 3], &[2; 3], &[1; 3]) };
    assert_eq!(spec.resolve(&[2i64, 2, 2]).unwrap().output_shape(), vec![2, 2, 2]);
}

#[test]
fn strided_slice_negative_mask() {
    let e = ss_err(StridedSlice { end_mask: -1, ..ss(&[0], &[1], &[1]) }, &[2]);
    assert_eq!(e.to_string(), "end_mask is -1: masks must be >= 0");
}

#[test]
fn strided_slice_zero_stride_on_a_range() {
    let e = ss_err(ss(&[0, 0], &[1, 1], &[1, 0]), &[2, 2]);
    assert_eq!(e.to_string(), "spec entry 1 is 0: a step must be non-zero");
}

#[test]
fn strided_slice_zero_stride_on_ellipsis_and_new_axis_is_ignored() {
    let spec = StridedSlice { ellipsis_mask: 0b01, new_axis_mask: 0b10, ..ss(&[0, 0], &[0, 0], &[0, 0]) };
    assert_eq!(spec.resolve(&[3i64]).unwrap().output_shape(), vec![3, 1]);
}

#[test]
fn strided_slice_zero_stride_on_a_shrink_entry() {
    let e = ss_err(StridedSlice { shrink_axis_mask: 1, ..ss(&[0], &[1], &[0]) }, &[2]);
    assert_eq!(e.to_string(), "spec entry 0 is 0: a step must be non-zero");
}

#[test]
fn strided_slice_negative_stride_on_a_shrink_entry() {
    let e = ss_err(StridedSlice { shrink_axis_mask: 1, ..ss(&[1], &[0], &[-1]) }, &[3]);
    assert_eq!(e.to_string(), "spec entry 0 shrinks an axis but has stride -1: a shrunk entry needs a positive stride");
}

#[test]
fn strided_slice_shrink_index_out_of_range() {
    let e = ss_err(StridedSlice { shrink_axis_mask: 0b10, ..ss(&[0, 3], &[1, 4], &[1, 1]) }, &[2, 3]);
    assert_eq!(e.to_string(), "shrink index 3 at spec entry 1 is out of range for axis 1 of size 3");
    let e = ss_err(StridedSlice { shrink_axis_mask: 1, ..ss(&[-4], &[0], &[1]) }, &[3]);
    assert_eq!(e.to_string(), "shrink index -4 at spec entry 0 is out of range for axis 0 of size 3");
    let e = ss_err(StridedSlice { shrink_axis_mask: 1, ..ss(&[i64::MIN], &[0], &[1]) }, &[3]);
    assert!(matches!(e, SliceError::IndexOutOfRange { value: i64::MIN, .. }));
}

#[test]
fn strided_slice_shrink_ignores_begin_and_end_masks() {
    // numpy x[1] even though begin_mask and end_mask are set on that entry (MindSpore's kernel gets this wrong).
    let spec = StridedSlice { shrink_axis_mask: 1, begin_mask: 1, end_mask: 1, ..ss(&[1], &[0], &[1]) };
    let sel = spec.resolve(&[3i64, 2]).unwrap();
    assert_eq!(sel.output_shape(), vec![2]);
    assert_eq!(sel.fixed, vec![(0, 1)]);
}

#[test]
fn strided_slice_more_entries_than_dims() {
    let e = ss_err(ss(&[0; 3], &[1; 3], &[1; 3]), &[2, 2]);
    assert_eq!(e.to_string(), "the spec indexes 3 dims but the input has rank 2");
    let e = ss_err(ss(&[0], &[1], &[1]), &[]);
    assert_eq!(e.to_string(), "the spec indexes 1 dims but the input has rank 0");
}

#[test]
fn strided_slice_unequal_lengths() {
    let e = ss_err(ss(&[0, 0], &[1], &[1, 1]), &[2, 2]);
    assert_eq!(e.to_string(), "begin, end and strides have different lengths: 2, 1, 2");
}

#[test]
fn strided_slice_70_entry_spec_on_a_rank_2_input() {
    let e = ss_err(ss(&[0; 70], &[1; 70], &[1; 70]), &[2, 2]);
    assert_eq!(e.to_string(), "the spec indexes 70 dims but the input has rank 2");
}

#[test]
fn mxnet_unequal_lengths() {
    let m = MxnetSlice { begin: vec![Some(0)], end: vec![Some(1), None], step: vec![] };
    assert_eq!(m.resolve(&[2i64, 2]).unwrap_err().to_string(), "begin, end and step have different lengths: 1, 2, 0");
}

fn slice(starts: &[i64], ends: &[i64], axes: &[i64], steps: &[i64]) -> Slice {
    Slice { starts: starts.to_vec(), ends: ends.to_vec(), axes: Some(axes.to_vec()), steps: Some(steps.to_vec()) }
}

#[test]
fn slice_repeated_axes() {
    let e = slice(&[0, 0], &[1, 1], &[1, -1], &[1, 1]).resolve(&[2i64, 2]).unwrap_err();
    assert_eq!(e.to_string(), "axis 1 appears more than once in axes");
}

#[test]
fn slice_axis_out_of_range() {
    let e = slice(&[0], &[1], &[2], &[1]).resolve(&[2i64, 2]).unwrap_err();
    assert_eq!(e.to_string(), "axis 2 is out of range for rank 2");
    let e = slice(&[0], &[1], &[-3], &[1]).resolve(&[2i64, 2]).unwrap_err();
    assert_eq!(e.to_string(), "axis -3 is out of range for rank 2");
    let e = slice(&[0], &[1], &[i64::MIN], &[1]).resolve(&[2i64, 2]).unwrap_err();
    assert_eq!(e, SliceError::AxisOutOfRange { axis: i64::MIN, rank: 2 });
}

#[test]
fn slice_zero_step() {
    let e = slice(&[0], &[1], &[1], &[0]).resolve(&[2i64, 2]).unwrap_err();
    assert_eq!(e.to_string(), "axis 1 is 0: a step must be non-zero");
}

#[test]
fn slice_unequal_lengths() {
    let e = slice(&[0, 0], &[1, 1], &[0], &[1, 1]).resolve(&[2i64, 2]).unwrap_err();
    assert_eq!(e.to_string(), "starts, ends, axes and steps have different lengths: 2, 2, 1, 2");
}

#[test]
fn slice_of_a_scalar() {
    let e = slice(&[0], &[1], &[0], &[1]).resolve::<i64>(&[]).unwrap_err();
    assert_eq!(e.to_string(), "input is a scalar (rank 0): there is no axis to slice");
}

fn as_strided(size: &[i64], stride: &[i64], offset: i64) -> AsStrided {
    AsStrided { size: size.to_vec(), stride: stride.to_vec(), offset }
}

#[test]
fn as_strided_length_mismatch() {
    let e = as_strided(&[2, 2], &[1], 0).resolve(&[4i64]).unwrap_err();
    assert_eq!(e.to_string(), "size and stride have different lengths: 2, 1");
}

#[test]
fn as_strided_negatives() {
    let e = as_strided(&[2, -1], &[1, 1], 0).resolve(&[4i64]).unwrap_err();
    assert_eq!(e.to_string(), "size -1 is negative at index 1");
    let e = as_strided(&[2], &[-1], 3).resolve(&[4i64]).unwrap_err();
    assert_eq!(e.to_string(), "stride -1 is negative at index 0");
    let e = as_strided(&[2], &[1], -1).resolve(&[4i64]).unwrap_err();
    assert_eq!(e.to_string(), "offset -1 is negative");
}

#[test]
fn as_strided_out_of_bounds() {
    // 3 + 1*2 + 1*3 = 8 is the last element: fine; one more is not.
    assert!(as_strided(&[2, 2], &[2, 3], 3).resolve(&[3i64, 3]).is_ok());
    let e = as_strided(&[2, 2], &[2, 3], 4).resolve(&[3i64, 3]).unwrap_err();
    assert_eq!(e.to_string(), "view reads element 9 but the input has 9 elements");
    let e = as_strided(&[], &[], i64::MAX).resolve(&[3i64, 3]).unwrap_err();
    assert_eq!(e.to_string(), format!("view reads element {} but the input has 9 elements", i64::MAX));
}

#[test]
fn as_strided_extent_overflowing_i64() {
    let e = as_strided(&[3], &[i64::MAX], 0).resolve(&[4i64]).unwrap_err();
    assert_eq!(e.to_string(), "view extent overflows a 64-bit integer");
    let e = as_strided(&[2, 2], &[i64::MAX, 1], 1).resolve(&[4i64]).unwrap_err();
    assert_eq!(e.to_string(), "view extent overflows a 64-bit integer");
}
