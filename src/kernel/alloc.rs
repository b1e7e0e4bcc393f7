//! Allocation of large outputs.
//!
//! glibc serves allocations of 32 MB and more with a fresh `mmap` and unmaps them on free, so every
//! large output is page-faulted in anew on every run (measured: 7-9x a plain copy for 40-50 MB outputs,
//! the copy loop itself running at 1.0-1.2x). Runtimes avoid this with an arena; a program that slices
//! large tensors repeatedly can ask glibc to keep such buffers in its heap instead.

/// Keeps large buffers in the process heap for reuse instead of mapping and unmapping them for each
/// allocation (glibc on Linux; elsewhere it does nothing). Process-wide: call it once, at the start of a
/// program that runs models repeatedly on large tensors, as `sliceops run` and `sliceops bench` do. The
/// cost is memory that stays reserved by the process after large tensors are freed.
pub fn tune_allocator() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // Safety: mallopt only changes malloc's tuning parameters; it is called with valid option codes and
    // values, before or between allocations, and any return value is acceptable (failure keeps the
    // defaults).
    unsafe {
        libc::mallopt(libc::M_MMAP_MAX, 0);
        libc::mallopt(libc::M_TRIM_THRESHOLD, i32::MAX);
    }
}
