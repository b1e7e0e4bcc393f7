//! StridedSlice end to end on small tensors: arbitrary raw parameters (begin, end, strides, five masks)
//! over an arbitrary small shape, resolved by sliceops and executed by `sliceops::kernel::execute` on
//! `0, 1, 2, ..` (in one of several datum types), against an index-by-index reference written here from
//! the numpy rules (Python's `slice.indices`, basic indexing) and the reading of the masks in the
//! module docs of `src/semantics/strided_slice.rs`.
//! sliceops must reject exactly what the reference rejects and otherwise produce the same tensor.

#![no_main]

#[path = "common/mod.rs"]
mod common;

use arbitrary::{Arbitrary, Result, Unstructured};
use common::{ints, lens, mask, small_shape};
use libfuzzer_sys::fuzz_target;
use sliceops::semantics::StridedSlice;
use sliceops::tract_onnx::prelude::*;

/// Datum types the input is cast to (i64 most often; the kernel moves 1, 2, 4 or 8 bytes, or clones).
const TYPES: &[DatumType] = &[
    DatumType::I64,
    DatumType::I64,
    DatumType::I64,
    DatumType::U8,
    DatumType::I16,
    DatumType::F16,
    DatumType::I32,
    DatumType::F32,
    DatumType::F64,
    DatumType::Bool,
    DatumType::String,
    DatumType::TDim,
];

#[derive(Debug)]
struct Input {
    shape: Vec<i64>,
    ss: StridedSlice,
    dt: DatumType,
}

impl<'a> Arbitrary<'a> for Input {
    fn arbitrary(u: &mut Unstructured<'a>) -> Result<Self> {
        let shape = small_shape(u, 5, 6)?;
        let n = u.int_in_range(0..=7)?;
        let [lb, le, ls] = lens(u, n)?;
        let ss = StridedSlice {
            begin: ints(u, lb)?,
            end: ints(u, le)?,
            strides: if u.ratio(1u8, 8u8)? { None } else { Some(ints(u, ls)?) },
            begin_mask: mask(u)?,
            end_mask: mask(u)?,
            ellipsis_mask: mask(u)?,
            new_axis_mask: mask(u)?,
            shrink_axis_mask: mask(u)?,
        };
        let dt = TYPES[u.choose_index(TYPES.len())?];
        Ok(Input { shape, ss, dt })
    }
}

fn typed(shape: &[usize], values: &[i64], dt: DatumType) -> Tensor {
    let t = Tensor::from_shape(shape, values).expect("i64 tensor");
    t.cast_to_dt(dt).unwrap_or_else(|e| panic!("cast to {dt:?}: {e}")).into_owned()
}

fuzz_target!(|input: Input| {
    let Input { shape, ss, dt } = &input;
    let Some(n) = common::numel(shape).filter(|&n| n <= 4096) else { return };
    let data: Vec<i64> = (0..n as i64).collect();
    let dims: Vec<usize> = shape.iter().map(|&d| d as usize).collect();
    let reference = common::strided_slice_entries(
        &ss.begin,
        &ss.end,
        ss.strides.as_deref(),
        [ss.begin_mask, ss.end_mask, ss.ellipsis_mask, ss.new_axis_mask, ss.shrink_axis_mask],
    )
    .and_then(|spec| common::numpy_axes(&spec, shape));
    let (sel, axes) = match (ss.resolve(shape), reference) {
        (Err(_), None) => return,
        (Ok(sel), None) => panic!("sliceops accepts what numpy rejects: {sel:?} for {input:?}"),
        (Err(e), Some(axes)) => panic!("sliceops rejects ({e}) what numpy accepts ({axes:?}): {input:?}"),
        (Ok(sel), Some(axes)) => (sel, axes),
    };
    let (ref_shape, ref_values) = common::gather(&data, shape, &axes);
    let sel_shape: Vec<usize> = sel.output_shape().iter().map(|&d| d as usize).collect();
    assert_eq!(sel_shape, ref_shape, "output shape differs from numpy's for {input:?}");
    let view = sel.to_view().unwrap_or_else(|e| panic!("to_view fails ({e}) for {input:?}"));
    let out = sliceops::kernel::execute(&typed(&dims, &data, *dt), &view)
        .unwrap_or_else(|e| panic!("kernel fails ({e}) on {view:?} for {input:?}"));
    let expected = typed(&ref_shape, &ref_values, *dt);
    assert_eq!(out, expected, "kernel output differs from numpy's for {input:?} (view {view:?})");
});
