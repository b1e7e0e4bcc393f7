//! Streaming (non-temporal) stores for outputs larger than the cache.
//!
//! An ordinary store first reads its destination line into the cache (a read for ownership) and writes
//! it back later, so copying one byte into memory that is not cached moves three bytes: the source read,
//! the destination read and the write-back. A streaming store writes whole lines straight to memory:
//! two bytes per byte copied. That is the right trade when the output is too large to still be cached
//! when it is next read. glibc's `memcpy` only streams above its own threshold (192 MB on the machines
//! this was measured on), so the kernel does it itself: on a 26 MB block copy, two threads, 1.38 ms with
//! `memcpy` against 1.22 ms streamed (one thread: 2.43 against 1.65 ms).
//!
//! Only long contiguous rows are streamed. Gathering short, reversed or stepped rows into a small
//! cache-resident stage and streaming the stage out was measured slower than ordinary stores (reverse:
//! 4.4 against 3.5 ms on 51 MB, two threads), and so were contiguous rows of 2 KB (sliding windows: 1.49
//! against 1.31 ms); from 16 KB rows on, streaming wins (0.97 against 1.24 ms). Streaming needs x86-64
//! (SSE2 is part of its baseline); elsewhere the same code uses ordinary stores.

use std::sync::OnceLock;

/// Contiguous rows shorter than this many bytes are written with ordinary stores.
pub(super) const STREAM_MIN_ROW_BYTES: usize = 16 << 10;

/// Outputs of at least this many bytes are streamed when the cache size cannot be read.
const DEFAULT_STREAM_MIN_BYTES: usize = 8 << 20;

/// The smallest output, in bytes, worth streaming: a quarter of the last-level cache (the rule glibc
/// adopted in 2.38), so that an output which may still be cached when it is read next is left to the
/// cache.
pub(super) fn stream_min_bytes() -> usize {
    static MIN: OnceLock<usize> = OnceLock::new();
    *MIN.get_or_init(|| last_level_cache_bytes().map_or(DEFAULT_STREAM_MIN_BYTES, |b| (b / 4).max(1 << 20)))
}

/// Size of the largest cache of CPU 0, from Linux's sysfs (`cache/index*/size`, such as `32768K`).
fn last_level_cache_bytes() -> Option<usize> {
    let dir = std::fs::read_dir("/sys/devices/system/cpu/cpu0/cache").ok()?;
    dir.filter_map(|entry| {
        let text = std::fs::read_to_string(entry.ok()?.path().join("size")).ok()?;
        parse_cache_size(text.trim())
    })
    .max()
}

/// Parses sysfs cache sizes: a number with an optional `K`, `M` or `G` suffix.
fn parse_cache_size(text: &str) -> Option<usize> {
    let (digits, unit) = match text.char_indices().find(|(_, c)| !c.is_ascii_digit()) {
        Some((i, _)) => text.split_at(i),
        None => (text, ""),
    };
    let scale = match unit {
        "" => 1,
        "K" => 1 << 10,
        "M" => 1 << 20,
        "G" => 1 << 30,
        _ => return None,
    };
    digits.parse::<usize>().ok()?.checked_mul(scale)
}

/// Copies `n` bytes with streaming stores where the destination is 16-byte aligned, ordinary ones at
/// the unaligned head and the tail.
///
/// # Safety
/// `src` must be readable and `dst` writable for `n` bytes, and the two must not overlap.
#[cfg(target_arch = "x86_64")]
pub(super) unsafe fn stream_bytes(dst: *mut u8, src: *const u8, n: usize) {
    use std::arch::x86_64::{__m128i, _mm_loadu_si128, _mm_stream_si128};
    let head = dst.align_offset(16).min(n);
    // Safety: for the whole body, every access is below `n` bytes from `src` or `dst`, as the caller allows; the
    // streamed addresses are 16-byte aligned (`dst + head` is, and steps are multiples of 16); the loads
    // are unaligned loads; SSE2 is always available on x86-64.
    unsafe {
        std::ptr::copy_nonoverlapping(src, dst, head);
        let mut i = head;
        while i + 64 <= n {
            let a = _mm_loadu_si128(src.add(i).cast::<__m128i>());
            let b = _mm_loadu_si128(src.add(i + 16).cast::<__m128i>());
            let c = _mm_loadu_si128(src.add(i + 32).cast::<__m128i>());
            let d = _mm_loadu_si128(src.add(i + 48).cast::<__m128i>());
            _mm_stream_si128(dst.add(i).cast::<__m128i>(), a);
            _mm_stream_si128(dst.add(i + 16).cast::<__m128i>(), b);
            _mm_stream_si128(dst.add(i + 32).cast::<__m128i>(), c);
            _mm_stream_si128(dst.add(i + 48).cast::<__m128i>(), d);
            i += 64;
        }
        while i + 16 <= n {
            _mm_stream_si128(dst.add(i).cast::<__m128i>(), _mm_loadu_si128(src.add(i).cast::<__m128i>()));
            i += 16;
        }
        std::ptr::copy_nonoverlapping(src.add(i), dst.add(i), n - i);
    }
}

/// Copies `n` bytes (ordinary stores where streaming ones are not available).
///
/// # Safety
/// `src` must be readable and `dst` writable for `n` bytes, and the two must not overlap.
#[cfg(not(target_arch = "x86_64"))]
pub(super) unsafe fn stream_bytes(dst: *mut u8, src: *const u8, n: usize) {
    // Safety: forwarded from the caller.
    unsafe { std::ptr::copy_nonoverlapping(src, dst, n) };
}

/// Orders earlier streaming stores before later stores (they are weakly ordered otherwise).
pub(super) fn store_fence() {
    #[cfg(target_arch = "x86_64")]
    // Safety: `sfence` has no operands and no preconditions; SSE is always available on x86-64.
    unsafe {
        std::arch::x86_64::_mm_sfence()
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_sysfs_sizes() {
        assert_eq!(parse_cache_size("32768K"), Some(32 << 20));
        assert_eq!(parse_cache_size("1M"), Some(1 << 20));
        assert_eq!(parse_cache_size("512"), Some(512));
        assert_eq!(parse_cache_size("3X"), None);
        assert_eq!(parse_cache_size(""), None);
        assert_eq!(parse_cache_size("99999999999999999999G"), None);
    }

    #[test]
    fn streams_every_alignment_and_length() {
        let src: Vec<u8> = (0..300u32).map(|i| (i * 7 % 251) as u8).collect();
        for start in 0..20 {
            for n in [0, 1, 15, 16, 17, 63, 64, 65, 130, 255] {
                let mut dst = vec![0u8; 300];
                // Safety: `start + n <= 300` for both buffers, which are distinct.
                unsafe { stream_bytes(dst.as_mut_ptr().add(start), src.as_ptr().add(3), n) };
                store_fence();
                assert_eq!(&dst[start..start + n], &src[3..3 + n], "start {start}, n {n}");
                assert!(dst[..start].iter().chain(&dst[start + n..]).all(|&b| b == 0));
            }
        }
    }
}
