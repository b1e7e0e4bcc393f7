//! WebP, by the `image-webp` crate: lossy (VP8, with libwebp's fancy upsampling) and lossless
//! (VP8L), with or without alpha; of an animation, the first frame.

use super::pixels::Pixels;
use super::{Budget, Failure};
use image_webp::{DecodingError, WebPDecoder};
use std::io::Cursor;

fn failure(e: DecodingError) -> Failure {
    match e {
        DecodingError::UnsupportedFeature(f) => Failure::Unsupported(format!("WebP: {f}")),
        DecodingError::MemoryLimitExceeded | DecodingError::ImageTooLarge => {
            Failure::Unsupported("the WebP image needs more memory than allowed".into())
        }
        e => Failure::Corrupt(format!("WebP: {e}")),
    }
}

/// Decodes a WebP image.
pub(crate) fn decode(data: &[u8], budget: &Budget<'_>) -> Result<Pixels, Failure> {
    let mut decoder = WebPDecoder::new(Cursor::new(data)).map_err(failure)?;
    let (width, height) = decoder.dimensions();
    let (width, height) = (width as usize, height as usize);
    let channels = if decoder.has_alpha() { 4 } else { 3 };
    let samples = budget.image(height, width, channels)?;
    // The samples, and the crate's working planes: a lossless image's 32-bit pixels, transformed
    // (8 bytes a pixel), more than a lossy one's YUV planes and alpha, or an animation's canvas.
    budget.charge("the WebP samples", Some(samples as u64))?;
    budget.charge_items("the WebP planes", (width as u64).saturating_mul(height as u64), 8)?;
    decoder.set_memory_limit(usize::try_from(budget.left()).unwrap_or(usize::MAX));
    let size =
        decoder.output_buffer_size().ok_or_else(|| Failure::Unsupported("the WebP image is too large".into()))?;
    let mut buf = vec![0u8; size];
    decoder.read_image(&mut buf).map_err(failure)?;
    Pixels::new(height, width, channels, buf)
}
