//! TIFF, by the `tiff` crate: uncompressed, LZW, Deflate or PackBits strips and tiles of 8-bit grey,
//! RGB (with or without alpha); other sample types and compressions are refused.

use super::pixels::Pixels;
use super::{Failure, Limit};
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
pub fn decode(data: &[u8], limit: &Limit<'_>) -> Result<Pixels, Failure> {
    let mut decoder = Decoder::new(Cursor::new(data)).map_err(failure)?;
    let (width, height) = decoder.dimensions().map_err(failure)?;
    let (width, height) = (width as usize, height as usize);
    let channels = match decoder.colortype().map_err(failure)? {
        ColorType::Gray(8) => 1,
        ColorType::GrayA(8) => 2,
        ColorType::RGB(8) => 3,
        ColorType::RGBA(8) => 4,
        other => return Err(Failure::Unsupported(format!("TIFF colour type {other:?}"))),
    };
    let bytes = limit(height, width, channels)?;
    // The whole image in one buffer of the size just checked (the crate's default limits otherwise:
    // 128 MiB of compressed data per strip, 1 MiB per IFD value).
    let mut limits = Limits::default();
    limits.decoding_buffer_size = limits.decoding_buffer_size.max(bytes);
    let mut decoder = decoder.with_limits(limits);
    match decoder.read_image().map_err(failure)? {
        DecodingResult::U8(v) => Pixels::new(height, width, channels, v),
        _ => Err(Failure::Unsupported("TIFF samples other than 8-bit".into())),
    }
}
