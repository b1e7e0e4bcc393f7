//! JPEG: recognised and refused. The reference decodes with libjpeg-turbo (islow IDCT, fancy chroma
//! upsampling, its fixed-point YCbCr conversion), and the pure-Rust decoders tried differ from it by
//! up to 2 per sample (zune-jpeg 0.5: its own IDCT, upsampling rounded twice, a different colour
//! conversion); a decoder that is not exact is not used.

use super::pixels::Pixels;
use super::{Failure, Limit};

/// Refuses a JPEG image.
pub fn decode(_data: &[u8], _limit: &Limit<'_>) -> Result<Pixels, Failure> {
    Err(Failure::Unsupported("JPEG is not decoded (no pure-Rust decoder reproduces libjpeg-turbo's output)".into()))
}
