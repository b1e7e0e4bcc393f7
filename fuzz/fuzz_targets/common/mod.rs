//! Shared pieces of the fuzz targets: integers biased toward the values that break slicing code, and
//! the independent numpy / ONNX reference of the integration tests (`tests/common/reference.rs`).

#![allow(dead_code)]

use arbitrary::{Result, Unstructured};

/// Values that sit on the edges of every clamping rule and of 32/62/64-bit arithmetic.
pub const EXTREMES: &[i64] = &[
    i64::MIN,
    i64::MIN + 1,
    i64::MIN / 2,
    -(1 << 62) - 1,
    -(1 << 62),
    -(1 << 32),
    i32::MIN as i64 - 1,
    i32::MIN as i64,
    i32::MIN as i64 + 1,
    -1_000_000_000,
    -1_000_000_001,
    1_000_000_000,
    i32::MAX as i64 - 1,
    i32::MAX as i64,
    1 << 31,
    1 << 32,
    (1 << 62) - 1,
    1 << 62,
    (1 << 62) + 1,
    i64::MAX / 2,
    i64::MAX / 2 + 1,
    i64::MAX - 1,
    i64::MAX,
];

/// An `i64` parameter: mostly small (-12..=12), often an extreme, sometimes any 64-bit value.
pub fn int(u: &mut Unstructured) -> Result<i64> {
    let tag: u8 = u.arbitrary()?;
    Ok(match tag {
        0..=174 => (tag % 25) as i64 - 12,
        175..=229 => EXTREMES[(tag - 175) as usize % EXTREMES.len()],
        _ => u.arbitrary::<i64>()?,
    })
}

/// A bit mask: mostly the low 8 bits, sometimes with high bits (bit 63 makes it negative) or raw.
pub fn mask(u: &mut Unstructured) -> Result<i64> {
    let tag: u8 = u.arbitrary()?;
    Ok(match tag {
        0..=199 => u.arbitrary::<u8>()? as i64,
        200..=219 => 0,
        220..=239 => (u.arbitrary::<u8>()? as i64) | (1 << u.int_in_range(8..=63)?),
        _ => u.arbitrary::<i64>()?,
    })
}

/// `n` parameters.
pub fn ints(u: &mut Unstructured, n: usize) -> Result<Vec<i64>> {
    (0..n).map(|_| int(u)).collect()
}

/// Lengths of parameter lists that must agree: mostly all `n`, sometimes each its own.
pub fn lens<const K: usize>(u: &mut Unstructured, n: usize) -> Result<[usize; K]> {
    let mut out = [n; K];
    if u.ratio(1u8, 16u8)? {
        for l in &mut out {
            *l = u.int_in_range(0..=9)?;
        }
    }
    Ok(out)
}

/// A small concrete shape: rank `0..=max_rank`, dims `0..=max_dim`.
pub fn small_shape(u: &mut Unstructured, max_rank: usize, max_dim: i64) -> Result<Vec<i64>> {
    let rank = u.int_in_range(0..=max_rank)?;
    (0..rank).map(|_| u.int_in_range(0..=max_dim)).collect()
}

/// `SLICEOPS_FUZZ_STRICT=1`: every panic is a crash and known findings are not skipped.
pub fn strict() -> bool {
    std::env::var_os("SLICEOPS_FUZZ_STRICT").is_some_and(|v| v != "0")
}

/// Row-major element count, `None` on overflow.
pub fn numel(shape: &[i64]) -> Option<u64> {
    shape.iter().try_fold(1u64, |acc, &d| acc.checked_mul(u64::try_from(d).ok()?))
}

// Reference: Python's `slice.indices`, numpy basic indexing, ONNX Slice (opset 13), AsStrided: the
// integration tests' own, included rather than copied.
#[path = "../../../tests/common/reference.rs"]
mod reference;
pub use reference::*;

/// One entry of a numpy index expression (the reference's type, sliceops' plain data enum).
pub use sliceops::semantics::SpecEntry as Entry;

/// StridedSlice parameters read as numpy's index expression, written from the rules in the module
/// docs of `src/semantics/strided_slice.rs` (not from its code); `None` when the parameters are
/// invalid whatever the shape.
pub fn strided_slice_entries(
    begin: &[i64],
    end: &[i64],
    strides: Option<&[i64]>,
    masks: [i64; 5],
) -> Option<Vec<Entry>> {
    let [begin_mask, end_mask, ellipsis_mask, new_axis_mask, shrink_mask] = masks;
    if masks.iter().any(|m| *m < 0) {
        return None;
    }
    let n = begin.len();
    if end.len() != n || strides.is_some_and(|s| s.len() != n) {
        return None;
    }
    // Bits past the spec's length (and past bit 63) are ignored.
    let set = |mask: i64, i: usize| i < 63 && mask & (1i64 << i) != 0;
    if (0..n).filter(|&i| set(ellipsis_mask, i)).count() > 1 {
        return None;
    }
    let mut spec = Vec::with_capacity(n);
    for i in 0..n {
        let k = strides.map_or(1, |s| s[i]);
        spec.push(if set(ellipsis_mask, i) {
            Entry::Ellipsis
        } else if set(new_axis_mask, i) {
            Entry::NewAxis
        } else if k == 0 {
            return None;
        } else if set(shrink_mask, i) {
            if k < 0 {
                return None;
            }
            Entry::Index(begin[i])
        } else {
            let b = if set(begin_mask, i) { None } else { Some(begin[i]) };
            let e = if set(end_mask, i) { None } else { Some(end[i]) };
            Entry::Range(b, e, k)
        });
    }
    Some(spec)
}

/// ONNX Slice on `shape` as reference axes, or `None` when the ONNX spec (and `src/semantics/slice.rs`) calls it an
/// error.
pub fn onnx_slice_axes(
    shape: &[i64],
    starts: &[i64],
    ends: &[i64],
    axes: Option<&[i64]>,
    steps: Option<&[i64]>,
) -> Option<Vec<RefAxis>> {
    let rank = shape.len() as i64;
    let n = starts.len();
    if rank == 0 || ends.len() != n || axes.is_some_and(|a| a.len() != n) || steps.is_some_and(|s| s.len() != n) {
        return None;
    }
    let mut out: Vec<RefAxis> = (0..shape.len()).map(|a| RefAxis::Indices(a, (0..shape[a]).collect())).collect();
    let mut seen = vec![false; shape.len()];
    for i in 0..n {
        let a = axes.map_or(i as i64, |a| a[i]);
        if a < -rank || a >= rank {
            return None;
        }
        let a = if a < 0 { a + rank } else { a } as usize;
        if seen[a] {
            return None;
        }
        seen[a] = true;
        let k = steps.map_or(1, |s| s[i]);
        if k == 0 {
            return None;
        }
        out[a] = RefAxis::Indices(a, onnx_indices(shape[a], starts[i], ends[i], k));
    }
    Some(out)
}

// ------------------------------------------------------------------------------------------------
// Panics in tract (or another dependency) versus panics in sliceops.
// ------------------------------------------------------------------------------------------------

/// Telling a panic raised in sliceops' own code (a bug to find: the process aborts and libFuzzer saves
/// the input) from one raised inside tract or another dependency (logged once per location to
/// `fuzz/artifacts/<target>/foreign_panics.log`, input saved next to it, and fuzzing goes on).
/// `SLICEOPS_FUZZ_STRICT=1` makes every panic a crash.
pub mod panics {
    use std::cell::RefCell;
    use std::collections::HashSet;
    use std::io::Write;
    use std::panic::{catch_unwind, AssertUnwindSafe};
    use std::sync::{Mutex, Once};

    thread_local! {
        static LAST: RefCell<Option<Foreign>> = const { RefCell::new(None) };
    }
    static HOOK: Once = Once::new();
    static SEEN: Mutex<Option<HashSet<String>>> = Mutex::new(None);

    struct Foreign {
        location: String,
        message: String,
        backtrace: String,
    }

    use super::strict;

    /// Crates whose panics are reported against their caller: data structures and helpers that panic
    /// when misused (tract's `Tensor` conversions unwrap allocation errors, smallvec and ndarray index).
    const UTILITY: &[&str] = &["tract-data-", "ndarray-", "smallvec-", "anyhow-", "hashbrown-", "num-traits-"];

    /// Whether the panic is sliceops' (or the harness's): walking the backtrace's source locations from
    /// the panic outward, skipping the standard library and the utility crates above, the first frame
    /// is in sliceops' `src/` (or the fuzz target). A panic whose first such frame is in tract's op,
    /// inference or plan code (tract-core, tract-hir, tract-onnx, tract-linalg...) is tract's.
    fn ours(location: &str, backtrace: &str) -> bool {
        // The frames before `rust_begin_unwind` are the panic hook itself.
        let after_hook = backtrace.find("rust_begin_unwind").map_or(backtrace, |at| &backtrace[at..]);
        let frames = after_hook.lines().filter_map(|l| l.trim_start().strip_prefix("at ")).map(|l| l.trim());
        for file in std::iter::once(location).chain(frames) {
            let std_lib = file.starts_with("/rustc/") || file.contains("/rustlib/") || file.starts_with("./csu/");
            let utility = UTILITY.iter().any(|c| file.contains(&format!("/{c}")));
            if std_lib || utility || file.is_empty() {
                continue;
            }
            let foreign = file.contains("/registry/src/") || file.contains("/git/checkouts/");
            return !foreign;
        }
        true
    }

    fn install() {
        HOOK.call_once(|| {
            let previous = std::panic::take_hook();
            std::panic::set_hook(Box::new(move |info| {
                let location = info.location().map(|l| format!("{}:{}:{}", l.file(), l.line(), l.column()));
                let location = location.unwrap_or_default();
                let backtrace = std::backtrace::Backtrace::force_capture().to_string();
                if strict() || ours(&location, &backtrace) {
                    previous(info); // libfuzzer-sys' hook: print, then abort
                    return;
                }
                let message = info
                    .payload()
                    .downcast_ref::<&str>()
                    .map(|s| s.to_string())
                    .or_else(|| info.payload().downcast_ref::<String>().cloned())
                    .unwrap_or_default();
                LAST.with(|l| *l.borrow_mut() = Some(Foreign { location, message, backtrace }));
            }));
        });
    }

    /// Runs `f`; a panic outside sliceops is logged (once per location) and swallowed.
    pub fn guard(target: &str, input: &[u8], f: impl FnOnce()) {
        install();
        if catch_unwind(AssertUnwindSafe(f)).is_ok() {
            return;
        }
        let Some(foreign) = LAST.with(|l| l.borrow_mut().take()) else {
            std::process::abort(); // not classified: treat as ours
        };
        let mut seen = SEEN.lock().unwrap_or_else(|e| e.into_inner());
        if !seen.get_or_insert_with(HashSet::new).insert(foreign.location.clone()) {
            return;
        }
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("artifacts").join(target);
        let _ = std::fs::create_dir_all(&dir);
        let hash = input.iter().fold(0xcbf29ce484222325u64, |h, b| (h ^ *b as u64).wrapping_mul(0x100000001b3));
        let file = dir.join(format!("foreign-panic-{hash:016x}"));
        let _ = std::fs::write(&file, input);
        let frames: Vec<&str> = foreign.backtrace.lines().take(80).collect();
        let entry = format!(
            "=== {}\nmessage: {}\ninput: {}\n{}\n\n",
            foreign.location,
            foreign.message,
            file.display(),
            frames.join("\n")
        );
        eprintln!(
            "foreign (non-sliceops) panic at {}: {} (input saved to {})",
            foreign.location,
            foreign.message,
            file.display()
        );
        if let Ok(mut log) = std::fs::OpenOptions::new().create(true).append(true).open(dir.join("foreign_panics.log"))
        {
            let _ = log.write_all(entry.as_bytes());
        }
    }
}
