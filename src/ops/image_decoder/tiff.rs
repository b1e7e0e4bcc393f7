//! TIFF, by the `tiff` crate: uncompressed, LZW, Deflate or PackBits strips and tiles of 8-bit grey,
//! RGB (with or without alpha); other sample types and compressions are refused. Only the first
//! image (IFD) is read, as Pillow reads it: the link to the next one is cut before the crate sees
//! the file, so a chain of IFDs that loops (an IFD pointing to itself) does not stop the first.

use super::pixels::Pixels;
use super::{Budget, Failure};
use std::io::Cursor;
use tiff::decoder::{Decoder, DecodingResult, Limits};
use tiff::{ColorType, TiffError};

fn failure(e: TiffError) -> Failure {
    match e {
        TiffError::UnsupportedError(e) => Failure::Unsupported(format!("TIFF: {e}")),
        TiffError::LimitsExceeded | TiffError::IntSizeError => {
            Failure::Unsupported("the TIFF needs more memory than allowed".into())
        }
        e => Failure::Corrupt(format!("TIFF: {e}")),
    }
}

/// Decodes a TIFF image (its first page).
pub(crate) fn decode(data: &[u8], budget: &Budget<'_>) -> Result<Pixels, Failure> {
    budget.charge("a copy of the TIFF", Some(data.len() as u64))?;
    let data = first_ifd_only(data);
    let mut decoder = Decoder::new(Cursor::new(&data[..])).map_err(failure)?;
    let (width, height) = decoder.dimensions().map_err(failure)?;
    let (width, height) = (width as usize, height as usize);
    let channels = match decoder.colortype().map_err(failure)? {
        ColorType::Gray(8) => 1,
        ColorType::GrayA(8) => 2,
        ColorType::RGB(8) => 3,
        ColorType::RGBA(8) => 4,
        other => return Err(Failure::Unsupported(format!("TIFF colour type {other:?}"))),
    };
    let bytes = budget.image(height, width, channels)?;
    // The image's buffer, and one strip or tile decoded before it is copied in (at most as large).
    budget.charge_items("the TIFF samples", bytes as u64, 2)?;
    // The whole image in one buffer of the size just charged (the crate's default limits otherwise:
    // 128 MiB of compressed data per strip, 1 MiB per IFD value).
    let mut limits = Limits::default();
    limits.decoding_buffer_size = limits.decoding_buffer_size.max(bytes);
    let mut decoder = decoder.with_limits(limits);
    match decoder.read_image().map_err(failure)? {
        DecodingResult::U8(v) => Pixels::new(height, width, channels, v),
        _ => Err(Failure::Unsupported("TIFF samples other than 8-bit".into())),
    }
}

/// `data` with the first IFD's link to the next one set to 0 (none), where the header and the
/// IFD's entry count can be read; otherwise unchanged (the crate reports what is wrong).
fn first_ifd_only(data: &[u8]) -> Vec<u8> {
    let mut out = data.to_vec();
    let little = data.starts_with(b"II");
    let read = |at: usize, n: usize| -> Option<u64> {
        let b = data.get(at..at.checked_add(n)?)?;
        Some(if little {
            b.iter().rev().fold(0u64, |v, &x| v << 8 | x as u64)
        } else {
            b.iter().fold(0u64, |v, &x| v << 8 | x as u64)
        })
    };
    let link = || -> Option<(usize, usize)> {
        let big = read(2, 2)? == 43;
        let (offset, count_size, entry, link_size) =
            if big { (read(8, 8)?, 8, 20, 8) } else { (read(4, 4)?, 2, 12, 4) };
        let offset = usize::try_from(offset).ok()?;
        let count = usize::try_from(read(offset, count_size)?).ok()?;
        let at = count.checked_mul(entry)?.checked_add(offset)?.checked_add(count_size)?;
        Some((at, link_size))
    };
    if let Some((at, size)) = link() {
        if let Some(bytes) = at.checked_add(size).and_then(|end| out.get_mut(at..end)) {
            bytes.fill(0);
        }
    }
    out
}
