//! Executing a view on a tract [`Tensor`]: dispatch by element size (one code path serves every
//! fixed-size type), clone for strings and other non-`Copy` datums, and allocation that fails with an
//! error instead of aborting.

use super::copy::{clone_view, copy_view_raw};
use crate::error::{SliceError, SliceResult};
use crate::view::View;
use std::sync::OnceLock;
use tract_onnx::prelude::*;

/// Physical memory of the machine in bytes, if it can be read.
fn physical_memory() -> Option<u64> {
    static MEM: OnceLock<Option<u64>> = OnceLock::new();
    *MEM.get_or_init(|| {
        let info = std::fs::read_to_string("/proc/meminfo").ok()?;
        let line = info.lines().find(|l| l.starts_with("MemTotal:"))?;
        let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
        kib.checked_mul(1024)
    })
}

/// Checks that a tensor of `numel` elements of `elem_size` bytes can be allocated: no overflow, not more
/// than the machine's memory, and (for large ones) a fallible allocation probe succeeds. tract's own
/// allocation aborts on failure; this turns the failure into an error before it is attempted.
pub(crate) fn check_allocation(numel: u64, elem_size: usize) -> SliceResult<()> {
    let too_large = || SliceError::TooLarge { numel: numel.to_string(), elem_size };
    let bytes = numel.checked_mul(elem_size as u64).filter(|&b| b <= isize::MAX as u64).ok_or_else(too_large)?;
    if physical_memory().is_some_and(|mem| bytes > mem) {
        return Err(too_large());
    }
    if bytes >= 1 << 30 {
        let mut probe: Vec<u8> = Vec::new();
        probe.try_reserve_exact(bytes as usize).map_err(|_| too_large())?;
    }
    Ok(())
}

/// Whether tract can hold a tensor of `shape` with `elem_size`-byte elements: tract multiplies the element
/// size by the dims in order, and the dims' suffix products (its strides), without regard for a zero
/// among them, so `[2^62, 0]` (empty, yet overflowing on the way) cannot be created and must be refused
/// before tract panics on it.
pub(crate) fn representable(shape: &[usize], elem_size: usize) -> bool {
    let in_order = shape.iter().try_fold(elem_size.max(1), |acc, &d| acc.checked_mul(d));
    let suffixes = shape.iter().rev().try_fold(1usize, |acc, &d| acc.checked_mul(d));
    in_order.is_some_and(|b| b <= isize::MAX as usize) && suffixes.is_some_and(|b| b <= isize::MAX as usize)
}

/// The shape of `view` as `usize` dims.
fn usize_shape(view: &View<i64>) -> SliceResult<Vec<usize>> {
    view.axes
        .iter()
        .map(|a| {
            usize::try_from(a.len).map_err(|_| SliceError::Negative { what: "length", value: a.len, at: String::new() })
        })
        .collect()
}

/// Copies the elements `view` selects from `input` into a new tensor of the view's shape.
pub fn execute(input: &Tensor, view: &View<i64>) -> SliceResult<Tensor> {
    let shape = usize_shape(view)?;
    let numel = view.numel().ok_or(SliceError::Overflow { what: "output element count" })?;
    let dt = input.datum_type();
    check_allocation(numel, dt.size_of())?;
    if !representable(&shape, dt.size_of()) {
        return Err(SliceError::TooLarge { numel: format!("{shape:?}"), elem_size: dt.size_of() });
    }
    if !dt.is_copy() {
        return execute_cloned(input, view, &shape);
    }
    // Safety: the tensor is allocated for `shape` (exactly `numel` elements of `dt`) and, on success,
    // `copy_sized` writes every one of them before it is read; on failure it is dropped unread (a
    // plain-data tensor has no destructor that reads its contents).
    let mut out = unsafe { Tensor::uninitialized_dt(dt, &shape) }
        .map_err(|e| SliceError::Allocation { reason: e.to_string() })?;
    copy_sized(input, view, &mut out, dt.size_of())?;
    Ok(out)
}

/// Copies a `Copy` datum by its size: the bytes of an element are moved as one unsigned integer.
fn copy_sized(input: &Tensor, view: &View<i64>, out: &mut Tensor, size: usize) -> SliceResult<()> {
    let plain = input.try_as_plain_ram().map_err(|e| SliceError::TensorData { reason: e.to_string() })?;
    macro_rules! by {
        ($t:ty) => {{
            // Safety: `input` holds plain data of `size == size_of::<$t>()` bytes per element and tract
            // aligns tensor storage for its datum type (at least the element size for these power-of-two
            // sizes), so its buffer is a valid `[$t]` of `input.len()` elements: every bit pattern is a
            // valid unsigned integer. The output pointer is its (uninitialized) buffer of the same type.
            let src: &[$t] = unsafe { plain.as_slice_unchecked::<$t>() };
            // Safety: `out` was allocated for `$t` elements (the same datum size); the pointer is only
            // written through by `copy_view_raw` below.
            let dst: *mut $t = unsafe { out.as_ptr_mut_unchecked::<$t>() };
            // Safety: `dst` holds exactly `view.numel()` elements (the tensor's shape is the view's), and
            // it is a fresh allocation, so it does not overlap `src`.
            unsafe { copy_view_raw(src, view, dst) }
        }};
    }
    match size {
        1 => by!(u8),
        2 => by!(u16),
        4 => by!(u32),
        8 => by!(u64),
        other => Err(SliceError::ElementSize { bytes: other }),
    }
}

fn execute_cloned(input: &Tensor, view: &View<i64>, shape: &[usize]) -> SliceResult<Tensor> {
    macro_rules! by {
        ($t:ty) => {{
            let src = input.try_as_plain_ram().and_then(|p| p.as_slice::<$t>());
            let data = clone_view(src.map_err(|e| SliceError::TensorData { reason: e.to_string() })?, view)?;
            tract_ndarray::ArrayD::from_shape_vec(shape, data)
                .map(Tensor::from)
                .map_err(|e| SliceError::TensorData { reason: e.to_string() })
        }};
    }
    match input.datum_type() {
        DatumType::String => by!(String),
        DatumType::TDim => by!(TDim),
        dt => Err(SliceError::UnsupportedType { dtype: format!("{dt:?}") }),
    }
}
