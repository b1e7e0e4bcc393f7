//! The typed copy loop: executes a concrete view from a source slice into a destination buffer.
//!
//! The view is coalesced (length-1 axes dropped, axes that walk the buffer as one merged), then split into
//! *rows* along its innermost axis. A row is copied as one block when it is contiguous, filled when its
//! stride is 0, and gathered element by element otherwise (reversed and stepped axes). Rows are walked
//! with an odometer over the outer axes, so there is no division in the loop; large outputs are split
//! into blocks of rows copied by several threads.
//!
//! Soundness rests on one check made before any pointer is formed: [`View::check_bounds`] proves that
//! every index the view reads is in `[0, src.len())`, and the destination holds exactly the view's
//! element count, which the rows fill in order without overlap.

use crate::error::{SliceError, SliceResult};
use crate::view::View;
use std::sync::OnceLock;

/// Outputs smaller than this many bytes are copied on the calling thread.
const PARALLEL_MIN_BYTES: usize = 1 << 20;
/// Each thread gets at least this many bytes of output.
const BYTES_PER_THREAD: usize = 512 << 10;

fn max_threads() -> usize {
    static THREADS: OnceLock<usize> = OnceLock::new();
    *THREADS.get_or_init(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
}

/// A view ready to run: coalesced, its innermost axis split off as the row.
#[derive(Debug, Clone)]
struct Plan {
    offset: i64,
    /// Outer axes as `(len, stride)`, outermost first.
    outer: Vec<(i64, i64)>,
    row_len: usize,
    row_stride: i64,
    rows: usize,
}

impl Plan {
    fn new(view: &View<i64>, src_len: usize) -> SliceResult<Plan> {
        view.check_bounds(src_len as u64)?;
        let numel = view.numel().ok_or(SliceError::Overflow { what: "output element count" })?;
        let c = view.coalesced();
        let (row_len, row_stride, outer) = match c.axes.split_last() {
            None => (1, 0, vec![]),
            Some((inner, outer)) => (inner.len, inner.stride, outer.iter().map(|a| (a.len, a.stride)).collect()),
        };
        let row_len = usize::try_from(row_len).map_err(|_| SliceError::Overflow { what: "row length" })?;
        let rows = usize::try_from(numel).unwrap_or(usize::MAX).checked_div(row_len).unwrap_or(0);
        Ok(Plan { offset: c.offset, outer, row_len, row_stride, rows })
    }

    fn numel(&self) -> usize {
        self.rows * self.row_len
    }

    /// Source offset of row `r`.
    fn row_offset(&self, mut r: usize) -> i64 {
        let mut off = self.offset;
        for &(len, stride) in self.outer.iter().rev() {
            let len = len as usize;
            off += (r % len) as i64 * stride;
            r /= len;
        }
        off
    }

    /// Copies rows `first..first + count` to `dst` (which points at row `first`'s output).
    ///
    /// # Safety
    /// `src` must point at a buffer the plan was checked against ([`Plan::new`]), `dst` at `count *
    /// row_len` writable elements, and the two must not overlap.
    unsafe fn run_rows<T: Copy>(&self, src: *const T, dst: *mut T, first: usize, count: usize) {
        if count == 0 {
            return;
        }
        let depth = self.outer.len();
        let mut index = vec![0i64; depth];
        let mut r = first;
        for (k, &(len, _)) in self.outer.iter().enumerate().rev() {
            index[k] = (r % len as usize) as i64;
            r /= len as usize;
        }
        let mut off = self.row_offset(first);
        let n = self.row_len;
        for row in 0..count {
            // Safety: `off` is the flat index of an in-box multi-index of the checked view, so it and every
            // `off + j * row_stride` (j < n) lie in the source; row `row` of the destination is in range.
            unsafe { copy_row(src, off, self.row_stride, dst.add(row * n), n) };
            for k in (0..depth).rev() {
                let (len, stride) = self.outer[k];
                index[k] += 1;
                off += stride;
                if index[k] < len {
                    break;
                }
                index[k] = 0;
                off -= len * stride;
            }
        }
    }
}

/// Copies one row of `n` elements starting at flat index `off` with stride `stride`.
///
/// # Safety
/// Every `off + j * stride` for `j < n` must index the source buffer and `dst` must have `n` writable
/// elements that do not overlap it.
#[inline(always)]
unsafe fn copy_row<T: Copy>(src: *const T, off: i64, stride: i64, dst: *mut T, n: usize) {
    // Safety (whole body): guaranteed by the caller, see above; indices fit isize because they are below
    // the source length.
    unsafe {
        let base = src.offset(off as isize);
        match stride {
            1 => std::ptr::copy_nonoverlapping(base, dst, n),
            0 => {
                let v = *base;
                for j in 0..n {
                    dst.add(j).write(v);
                }
            }
            -1 => {
                for j in 0..n {
                    dst.add(j).write(*base.sub(j));
                }
            }
            // A constant stride lets the compiler vectorize the gather (an interleaved load).
            2 => {
                for j in 0..n {
                    dst.add(j).write(*base.add(2 * j));
                }
            }
            s => {
                let s = s as isize;
                for j in 0..n {
                    dst.add(j).write(*base.offset(j as isize * s));
                }
            }
        }
    }
}

/// Executes `view` over `src` into `dst`, which must hold exactly the view's element count.
pub fn copy_view<T: Copy + Send + Sync>(src: &[T], view: &View<i64>, dst: &mut [T]) -> SliceResult<()> {
    let plan = Plan::new(view, src.len())?;
    if dst.len() != plan.numel() {
        return Err(SliceError::Unsupported(format!(
            "destination holds {} elements, the view has {}",
            dst.len(),
            plan.numel()
        )));
    }
    // Safety: the plan was checked against `src`; `dst` is a distinct, exclusively borrowed buffer of
    // exactly `plan.numel()` elements.
    unsafe { run_plan(&plan, src.as_ptr(), dst.as_mut_ptr()) };
    Ok(())
}

/// Executes `view` over `src` into the possibly uninitialized buffer `dst`.
///
/// # Safety
/// `dst` must be valid for writes of `view.numel()` elements and must not overlap `src`. On `Ok` every
/// one of them has been written.
pub unsafe fn copy_view_raw<T: Copy + Send + Sync>(src: &[T], view: &View<i64>, dst: *mut T) -> SliceResult<()> {
    let plan = Plan::new(view, src.len())?;
    // Safety: the plan was checked against `src`; the caller vouches for `dst`.
    unsafe { run_plan(&plan, src.as_ptr(), dst) };
    Ok(())
}

/// A raw pointer that may cross to the worker threads: each thread touches a disjoint block of rows.
#[derive(Clone, Copy)]
struct SendPtr<T>(*mut T);
// Safety: the pointer is only used for writes to disjoint ranges, one per thread, within `thread::scope`.
unsafe impl<T: Send> Send for SendPtr<T> {}
// Safety: as above; shared access never happens through it.
unsafe impl<T: Send> Sync for SendPtr<T> {}

/// # Safety
/// As [`Plan::run_rows`] for all rows.
unsafe fn run_plan<T: Copy + Send + Sync>(plan: &Plan, src: *const T, dst: *mut T) {
    let bytes = plan.numel().saturating_mul(std::mem::size_of::<T>());
    let threads = if bytes < PARALLEL_MIN_BYTES { 1 } else { (bytes / BYTES_PER_THREAD).clamp(1, max_threads()) };
    if threads > plan.rows && plan.row_len >= threads {
        // Fewer rows than threads (one long contiguous or strided row): split the rows into pieces.
        // Safety: forwarded from the caller.
        unsafe { run_pieces(plan, src, dst, threads) };
        return;
    }
    let threads = threads.min(plan.rows.max(1));
    if threads <= 1 {
        // Safety: forwarded from the caller.
        unsafe { plan.run_rows(src, dst, 0, plan.rows) };
        return;
    }
    let per = plan.rows.div_ceil(threads);
    let (src, dst) = (SendPtr(src as *mut T), SendPtr(dst));
    std::thread::scope(|scope| {
        for t in 0..threads {
            let first = t * per;
            let count = per.min(plan.rows.saturating_sub(first));
            scope.spawn(move || {
                let (src, dst) = (src, dst);
                // Safety: rows `first..first+count` are this thread's alone; their output starts at
                // element `first * row_len` of `dst`, within the caller's buffer.
                unsafe { plan.run_rows(src.0 as *const T, dst.0.add(first * plan.row_len), first, count) };
            });
        }
    });
}

/// Runs each row as `ceil(threads / rows)` pieces, the pieces spread over `threads` threads.
///
/// # Safety
/// As [`Plan::run_rows`] for all rows.
unsafe fn run_pieces<T: Copy + Send + Sync>(plan: &Plan, src: *const T, dst: *mut T, threads: usize) {
    let per_row = threads.div_ceil(plan.rows.max(1));
    let piece = plan.row_len.div_ceil(per_row);
    let units = plan.rows * per_row;
    let per_thread = units.div_ceil(threads);
    let (src, dst) = (SendPtr(src as *mut T), SendPtr(dst));
    std::thread::scope(|scope| {
        for t in 0..threads {
            let units_of_thread = (t * per_thread)..((t + 1) * per_thread).min(units);
            scope.spawn(move || {
                let (src, dst) = (src, dst);
                for u in units_of_thread {
                    let (row, part) = (u / per_row, u % per_row);
                    let first = part * piece;
                    let n = piece.min(plan.row_len.saturating_sub(first));
                    if n == 0 {
                        continue;
                    }
                    let off = plan.row_offset(row) + first as i64 * plan.row_stride;
                    // Safety: elements `first..first + n` of row `row` are this unit's alone; their source
                    // indices are in the checked view, their destination within the caller's buffer.
                    unsafe {
                        copy_row(src.0 as *const T, off, plan.row_stride, dst.0.add(row * plan.row_len + first), n)
                    };
                }
            });
        }
    });
}

/// Executes `view` over `src` by cloning elements (for types that are not `Copy`, like strings).
pub fn clone_view<T: Clone>(src: &[T], view: &View<i64>) -> SliceResult<Vec<T>> {
    let plan = Plan::new(view, src.len())?;
    let mut out = Vec::new();
    out.try_reserve_exact(plan.numel())
        .map_err(|_| SliceError::TooLarge { numel: plan.numel().to_string(), elem_size: std::mem::size_of::<T>() })?;
    for r in 0..plan.rows {
        let off = plan.row_offset(r);
        for j in 0..plan.row_len {
            // In range by the plan's bounds check (and indexing checks it again).
            let i = off + j as i64 * plan.row_stride;
            out.push(src[i as usize].clone());
        }
    }
    Ok(out)
}
