//! How much memory a value may take: the bytes of a shape, and the most one allocation may ask for
//! before Rust would abort the process.

use tract_onnx::prelude::DatumType;

/// The most bytes a value the analysis computes ahead of a run may take (the default of its
/// `fold_bytes` option, and what an image constant may decode to while analysing): 4 MB, as
/// tract's own constant folding.
pub(crate) const DEFAULT_FOLD_BYTES: u64 = 4 << 20;

/// The bytes a tensor of `dims` and `dt` takes; `None` when they overflow `u64`.
pub(crate) fn bytes_of(dims: &[usize], dt: DatumType) -> Option<u64> {
    dims.iter().try_fold(dt.size_of() as u64, |acc, &d| acc.checked_mul(d as u64))
}

/// The most bytes one value may take: the physical memory, or the room left under the process's
/// address-space limit (`RLIMIT_AS`, what `ulimit -v` sets) if that is smaller.
pub(crate) fn value_limit() -> u64 {
    physical_memory().min(address_space_left())
}

fn physical_memory() -> u64 {
    // Safety: sysconf reads a system setting and has no memory effects; -1 (unknown) is handled.
    let (pages, size) = unsafe { (libc::sysconf(libc::_SC_PHYS_PAGES), libc::sysconf(libc::_SC_PAGESIZE)) };
    match (u64::try_from(pages), u64::try_from(size)) {
        (Ok(p), Ok(s)) => p.saturating_mul(s),
        _ => u64::MAX,
    }
}

fn address_space_left() -> u64 {
    let mut limit = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    // Safety: getrlimit writes one rlimit struct through a valid pointer to a local.
    if unsafe { libc::getrlimit(libc::RLIMIT_AS, &mut limit) } != 0 || limit.rlim_cur == libc::RLIM_INFINITY {
        return u64::MAX;
    }
    let used = std::fs::read_to_string("/proc/self/statm")
        .ok()
        .and_then(|s| s.split_whitespace().next()?.parse::<u64>().ok())
        .unwrap_or(0);
    // Safety: as in physical_memory.
    let page = u64::try_from(unsafe { libc::sysconf(libc::_SC_PAGESIZE) }).unwrap_or(4096);
    limit.rlim_cur.saturating_sub(used.saturating_mul(page))
}
