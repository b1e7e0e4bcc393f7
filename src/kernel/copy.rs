//! The typed copy loop: executes a concrete view from a source slice into a destination buffer.
//!
//! The view is coalesced (length-1 axes dropped, axes that walk the buffer as one merged), then split into
//! *rows* along its innermost axis. A row is copied as one block when it is contiguous, filled when its
//! stride is 0, and gathered element by element otherwise (reversed and stepped axes). Rows are walked
//! with an odometer over the outer axes, so there is no division in the loop; large outputs are split
//! into blocks of rows copied by several threads: the plan's pool when a plan's thread budget is in
//! force ([`super::budget`]), else threads started for the copy.
//!
//! Soundness rests on one check made before any pointer is formed: [`View::check_bounds`] proves that
//! every index the view reads is in `[0, src.len())`, and the destination holds exactly the view's
//! element count, which the rows fill in order without overlap.

use super::budget::{budget, max_threads};
use super::stream::{store_fence, stream_bytes, stream_min_bytes, STREAM_MIN_ROW_BYTES};
use crate::error::{SliceError, SliceResult};
use crate::view::View;

/// Outputs smaller than this many bytes are copied on the calling thread.
const PARALLEL_MIN_BYTES: usize = 1 << 20;
/// Each thread gets at least this many bytes of output.
const BYTES_PER_THREAD: usize = 512 << 10;

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

    /// Calls `f(row, off)` for rows `first..first + count`, `row` counted from `first` and `off` the
    /// row's first source index, with an odometer over the outer axes (no division per row).
    #[inline(always)]
    fn for_each_row(&self, first: usize, count: usize, mut f: impl FnMut(usize, i64)) {
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
        for row in 0..count {
            f(row, off);
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

    /// Copies rows `first..first + count` to `dst` (which points at row `first`'s output), contiguous
    /// rows with streaming stores if `stream`.
    ///
    /// # Safety
    /// `src` must point at a buffer the plan was checked against ([`Plan::new`]), `dst` at `count *
    /// row_len` writable elements, and the two must not overlap.
    unsafe fn run_rows<T: Copy>(&self, src: *const T, dst: *mut T, first: usize, count: usize, stream: bool) {
        let (n, stride) = (self.row_len, self.row_stride);
        // In both branches `off` is the flat index of an in-box multi-index of the checked view, so it and
        // every `off + j * stride` (j < n) lie in the source; the rows fill the caller's `count * n`
        // destination elements in order.
        if stream && stride == 1 {
            // Safety: as above, with a stride of 1.
            self.for_each_row(first, count, |row, off| unsafe { stream_row(src, off, dst.add(row * n), n) });
            store_fence();
        } else {
            // Safety: as above.
            self.for_each_row(first, count, |row, off| unsafe { copy_row(src, off, stride, dst.add(row * n), n) });
        }
    }
}

/// Copies the contiguous row of `n` elements at flat index `off` with streaming stores.
///
/// # Safety
/// As [`copy_row`] with a stride of 1.
#[inline(always)]
unsafe fn stream_row<T: Copy>(src: *const T, off: i64, dst: *mut T, n: usize) {
    // Safety: the caller guarantees `n` readable source elements from `off` and `n` writable, distinct
    // destination elements; `n * size_of::<T>()` bytes are within them.
    unsafe { stream_bytes(dst.cast(), src.offset(off as isize).cast(), n * std::mem::size_of::<T>()) }
}

/// Copies one row of `n` elements starting at flat index `off` with stride `stride`.
///
/// # Safety
/// Every `off + j * stride` for `j < n` must index the source buffer and `dst` must have `n` writable
/// elements that do not overlap it.
#[inline(always)]
unsafe fn copy_row<T: Copy>(src: *const T, off: i64, stride: i64, dst: *mut T, n: usize) {
    // Safety: for the whole body, guaranteed by the caller (see above); indices fit isize because they
    // are below the source length.
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
        return Err(SliceError::DestinationLength { dst: dst.len(), view: plan.numel() });
    }
    let stream = streams::<T>(&plan);
    // Safety: the plan was checked against `src`; `dst` is a distinct, exclusively borrowed buffer of
    // exactly `plan.numel()` elements.
    unsafe { run_plan(&plan, src.as_ptr(), dst.as_mut_ptr(), stream) };
    Ok(())
}

/// Executes `view` over `src` into the possibly uninitialized buffer `dst`.
///
/// # Safety
/// `dst` must be valid for writes of `view.numel()` elements and must not overlap `src`. On `Ok` every
/// one of them has been written.
pub(crate) unsafe fn copy_view_raw<T: Copy + Send + Sync>(src: &[T], view: &View<i64>, dst: *mut T) -> SliceResult<()> {
    let plan = Plan::new(view, src.len())?;
    let stream = streams::<T>(&plan);
    // Safety: the plan was checked against `src`; the caller vouches for `dst`.
    unsafe { run_plan(&plan, src.as_ptr(), dst, stream) };
    Ok(())
}

/// Whether the plan's rows are written with streaming stores: they are long contiguous blocks, and the
/// output is too large to be usefully cached (see [`super::stream`]).
fn streams<T>(plan: &Plan) -> bool {
    let size = std::mem::size_of::<T>();
    plan.row_stride == 1
        && plan.row_len.saturating_mul(size) >= STREAM_MIN_ROW_BYTES
        && plan.numel().saturating_mul(size) >= stream_min_bytes()
}

/// A raw pointer that may cross to the worker threads: each thread touches a disjoint block of rows.
#[derive(Clone, Copy)]
struct SendPtr<T>(*mut T);
// Safety: the pointer is only used for writes to disjoint ranges, one per job, while `run_jobs` waits.
unsafe impl<T: Send> Send for SendPtr<T> {}
// Safety: as above; shared access never happens through it.
unsafe impl<T: Send> Sync for SendPtr<T> {}

/// Runs `jobs` at once and returns when all have finished: on the plan's pool when a budget of
/// several threads is in force (the calling thread taking the last job), else one thread started
/// for each.
fn run_jobs<F: FnOnce() + Send>(jobs: Vec<F>) {
    match budget().and_then(crate::threads::pool_of) {
        Some(pool) => super::spread(&pool, jobs),
        None => std::thread::scope(|scope| {
            for job in jobs {
                scope.spawn(job);
            }
        }),
    }
}

/// # Safety
/// As [`Plan::run_rows`] for all rows.
unsafe fn run_plan<T: Copy + Send + Sync>(plan: &Plan, src: *const T, dst: *mut T, stream: bool) {
    let bytes = plan.numel().saturating_mul(std::mem::size_of::<T>());
    let threads = if bytes < PARALLEL_MIN_BYTES { 1 } else { (bytes / BYTES_PER_THREAD).clamp(1, max_threads()) };
    if threads > plan.rows && plan.row_len >= threads {
        // Fewer rows than threads (one long contiguous or strided row): split the rows into pieces.
        // Safety: forwarded from the caller.
        unsafe { run_pieces(plan, src, dst, threads, stream) };
        return;
    }
    let threads = threads.min(plan.rows.max(1));
    if threads <= 1 {
        // Safety: forwarded from the caller.
        unsafe { plan.run_rows(src, dst, 0, plan.rows, stream) };
        return;
    }
    let per = plan.rows.div_ceil(threads);
    let (src, dst) = (SendPtr(src as *mut T), SendPtr(dst));
    run_jobs(
        (0..threads)
            .map(|t| {
                let first = t * per;
                let count = per.min(plan.rows.saturating_sub(first));
                move || {
                    let (src, dst) = (src, dst);
                    // Safety: rows `first..first+count` are this job's alone; their output starts at
                    // element `first * row_len` of `dst`, within the caller's buffer.
                    unsafe { plan.run_rows(src.0 as *const T, dst.0.add(first * plan.row_len), first, count, stream) };
                }
            })
            .collect(),
    );
}

/// Runs each row as `ceil(threads / rows)` pieces, the pieces spread over `threads` threads.
///
/// # Safety
/// As [`Plan::run_rows`] for all rows.
unsafe fn run_pieces<T: Copy + Send + Sync>(plan: &Plan, src: *const T, dst: *mut T, threads: usize, stream: bool) {
    let per_row = threads.div_ceil(plan.rows.max(1));
    let piece = plan.row_len.div_ceil(per_row);
    let units = plan.rows * per_row;
    let per_thread = units.div_ceil(threads);
    let (src, dst) = (SendPtr(src as *mut T), SendPtr(dst));
    run_jobs(
        (0..threads)
            .map(|t| {
                let units_of_thread = (t * per_thread)..((t + 1) * per_thread).min(units);
                move || {
                    let (src, dst) = (src, dst); // moves the whole `SendPtr`s into the closure
                    let (src, dst) = (src.0 as *const T, dst.0);
                    // Each unit is a piece `first..first + n` of row `row`, output at `row * row_len + first`.
                    let pieces = units_of_thread.filter_map(|u| {
                        let (row, part) = (u / per_row, u % per_row);
                        let first = part * piece;
                        let n = piece.min(plan.row_len.saturating_sub(first));
                        let off = plan.row_offset(row) + first as i64 * plan.row_stride;
                        (n > 0).then_some((off, row * plan.row_len + first, n))
                    });
                    // In both branches the pieces are this job's alone; their source indices are in
                    // the checked view and their destination within the caller's buffer.
                    if stream && plan.row_stride == 1 {
                        for (off, at, n) in pieces {
                            // Safety: as above, with a stride of 1.
                            unsafe { stream_row(src, off, dst.add(at), n) };
                        }
                        store_fence();
                    } else {
                        for (off, at, n) in pieces {
                            // Safety: as above.
                            unsafe { copy_row(src, off, plan.row_stride, dst.add(at), n) };
                        }
                    }
                }
            })
            .collect(),
    );
}

/// Executes `view` over `src` by cloning elements (for types that are not `Copy`, like strings).
pub(crate) fn clone_view<T: Clone>(src: &[T], view: &View<i64>) -> SliceResult<Vec<T>> {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::view::ViewAxis;

    /// The view's elements, index by index.
    fn reference<T: Copy>(src: &[T], view: &View<i64>) -> Vec<T> {
        let mut out = vec![];
        let mut index = vec![0i64; view.rank()];
        let numel = view.numel().unwrap();
        for _ in 0..numel {
            let flat = view.offset + view.axes.iter().zip(&index).map(|(a, i)| a.stride * i).sum::<i64>();
            out.push(src[flat as usize]);
            for k in (0..index.len()).rev() {
                index[k] += 1;
                if index[k] < view.axes[k].len {
                    break;
                }
                index[k] = 0;
            }
        }
        out
    }

    /// Runs `view` with the given kind of stores.
    fn run<T: Copy + Send + Sync + Default>(src: &[T], view: &View<i64>, stream: bool) -> Vec<T> {
        let plan = Plan::new(view, src.len()).unwrap();
        let mut dst = vec![T::default(); plan.numel()];
        // Safety: the plan was checked against `src`; `dst` holds exactly its element count.
        unsafe { run_plan(&plan, src.as_ptr(), dst.as_mut_ptr(), stream) };
        dst
    }

    fn view(offset: i64, axes: &[(i64, i64)]) -> View<i64> {
        View { offset, axes: axes.iter().map(|&(len, stride)| ViewAxis { len, stride }).collect() }
    }

    /// Streaming and ordinary stores write the same output, for every row kind (block, reversed,
    /// stepped, broadcast; only blocks stream), and outputs split over threads and pieces of rows.
    fn check_both<T: Copy + Send + Sync + Default + PartialEq + std::fmt::Debug>(src: &[T]) {
        let n = src.len() as i64;
        let views = [
            view(0, &[(n, 1)]),
            view(3, &[(n - 7, 1)]),
            view(n - 1, &[(n, -1)]),
            view(1, &[(n / 2 - 1, 2)]),
            view(5, &[(7, n / 8), (n / 16, 1)]),
            view(n - 2, &[(3, -(n / 4)), (n / 16, -2)]),
            view(9, &[(n / 64, 13), (5, 0), (3, 1)]),
            view(0, &[(2, 0), (n / 3, 3)]),
            view(0, &[(0, 1)]),
            view(4, &[]),
        ];
        for v in &views {
            let want = reference(src, v);
            assert_eq!(run(src, v, false), want, "{v:?}");
            assert_eq!(run(src, v, true), want, "{v:?}");
        }
    }

    #[test]
    fn streaming_matches_ordinary_stores() {
        check_both(&(0..5_000u32).map(|i| (i % 251) as u8).collect::<Vec<_>>());
        check_both(&(0..5_000u16).collect::<Vec<_>>());
        check_both(&(0..3_000u32).collect::<Vec<_>>());
        check_both(&(0..3_000u64).collect::<Vec<_>>());
        // Large enough for several threads and for rows split into pieces (1 MB of output and more).
        check_both(&(0..(1u32 << 19) + 77).collect::<Vec<_>>());
    }

    /// Under a plan's budget of several threads the copy splits over that budget's pool (the same
    /// output, and a job runs on a pool worker), with a budget of one on the calling thread alone.
    #[test]
    fn a_budget_copies_on_its_pool() {
        let src: Vec<u32> = (0..(1u32 << 20) + 5).collect();
        for budget in [1, 2, 3] {
            crate::kernel::with_threads(Some(budget), || check_both(&src));
        }
        let seen = std::sync::Mutex::new(Vec::new());
        crate::kernel::with_threads(Some(2), || {
            run_jobs((0..2).map(|_| || seen.lock().unwrap().push(rayon::current_thread_index())).collect())
        });
        let seen = seen.into_inner().unwrap();
        assert_eq!(seen.len(), 2);
        // The caller (not a pool thread) takes the last job, a worker of the 2-thread pool the other.
        assert!(seen.contains(&None) && seen.iter().flatten().all(|i| *i < 2), "{seen:?}");
    }
}
