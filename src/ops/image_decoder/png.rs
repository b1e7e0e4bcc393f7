//! PNG, by the `png` crate: palettes and grey below 8 bits expanded to 8 bits (the scaling Pillow
//! applies), 16-bit colour samples cut to their high byte (Pillow's `RGB;16B`); 16-bit grey, which
//! Pillow reads as 32-bit integers, is refused.

use super::pixels::Pixels;
use super::{Budget, Failure};
use std::io::Cursor;

fn failure(e: png::DecodingError) -> Failure {
    match e {
        png::DecodingError::LimitsExceeded => Failure::Unsupported("the PNG needs more memory than allowed".into()),
        e => Failure::Corrupt(format!("PNG: {e}")),
    }
}

/// The size `IHDR` declares, `(height, width, samples per pixel)` (at most: a palette or a
/// transparency chunk counted as alpha), if
/// the first chunk is one.
fn declared(data: &[u8]) -> Option<(usize, usize, usize)> {
    let field = |at: usize| Some(u32::from_be_bytes(data.get(at..at + 4)?.try_into().ok()?) as usize);
    if data.get(12..16)? != b"IHDR" {
        return None;
    }
    // Once expanded, a transparency chunk may add an alpha channel.
    let channels = match data.get(25)? {
        0 | 4 => 2,
        _ => 4,
    };
    Some((field(20)?, field(16)?, channels))
}

/// Decodes a PNG image (its first frame).
pub(crate) fn decode(data: &[u8], budget: &Budget<'_>) -> Result<Pixels, Failure> {
    // The declared size against the budget first: the decoded samples (8 bits each once expanded,
    // at most 4 a pixel), which the pixels then hold; the crate's own allocations (chunks, rows,
    // the inflater) are limited to what is left, and its default limit (64 MiB) would refuse large
    // valid images.
    let Some((height, width, channels)) = declared(data) else {
        return Err(Failure::Corrupt("PNG: no IHDR chunk first".into()));
    };
    let samples = budget.image(height, width, channels)?;
    budget.charge("the PNG samples", Some(samples as u64))?;
    let left = usize::try_from(budget.left()).unwrap_or(usize::MAX);
    let mut decoder = png::Decoder::new_with_limits(Cursor::new(data), png::Limits { bytes: left });
    decoder.set_transformations(png::Transformations::EXPAND | png::Transformations::STRIP_16);
    let mut reader = decoder.read_info().map_err(failure)?;
    let info = reader.info();
    let (width, height) = (info.width as usize, info.height as usize);
    if info.color_type == png::ColorType::Grayscale && info.bit_depth == png::BitDepth::Sixteen {
        return Err(Failure::Unsupported("16-bit greyscale PNG (Pillow reads it as 32-bit integers)".into()));
    }
    let (color, _) = reader.output_color_type();
    let channels = match color {
        png::ColorType::Grayscale => 1,
        png::ColorType::GrayscaleAlpha => 2,
        png::ColorType::Rgb => 3,
        png::ColorType::Rgba => 4,
        png::ColorType::Indexed => return Err(Failure::Unsupported("an unexpanded palette".into())),
    };
    if budget.image(height, width, channels)? > samples {
        return Err(Failure::Corrupt("PNG: more samples than its header declares".into()));
    }
    let size = reader.output_buffer_size().ok_or_else(|| Failure::Unsupported("the PNG is too large".into()))?;
    let mut buf = vec![0u8; size];
    let frame = reader.next_frame(&mut buf).map_err(failure)?;
    buf.truncate(frame.buffer_size());
    Pixels::new(height, width, channels, buf)
}
