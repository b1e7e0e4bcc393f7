//! JPEG 2000 (JP2 boxes or a bare codestream), by the `hayro-jpeg2000` crate: 8-bit grey or RGB
//! components, with or without alpha. Other precisions (which Pillow reads as 16-bit integers or
//! rescales its own way) and other colour spaces are refused.

use super::pixels::Pixels;
use super::{Budget, Failure};
use hayro_jpeg2000::{ColorSpace, DecodeError, DecodeSettings, DecoderContext, FormatError, Image};

fn failure(e: DecodeError) -> Failure {
    match e {
        DecodeError::Format(FormatError::Unsupported) => {
            Failure::Unsupported("JPEG 2000: an unsupported format".into())
        }
        e => Failure::Corrupt(format!("JPEG 2000: {e}")),
    }
}

/// Decodes a JPEG 2000 image.
pub(crate) fn decode(data: &[u8], budget: &Budget<'_>) -> Result<Pixels, Failure> {
    let image = Image::new(data, &DecodeSettings::default()).map_err(failure)?;
    let (width, height) = (image.width() as usize, image.height() as usize);
    let colours = match image.color_space() {
        ColorSpace::Gray => 1,
        ColorSpace::RGB => 3,
        ColorSpace::Icc { num_channels: n @ (1 | 3), .. } => *n as usize,
        other => return Err(Failure::Unsupported(format!("JPEG 2000 colour space {other:?}"))),
    };
    if image.original_bit_depth() != 8 {
        return Err(Failure::Unsupported(format!("{}-bit JPEG 2000 samples", image.original_bit_depth())));
    }
    let channels = colours + usize::from(image.has_alpha());
    let samples = budget.image(height, width, channels)?;
    super::jpeg2000_size::charge(data, budget, samples)?;
    let mut context = DecoderContext::default();
    let decoded = image.decode(&mut context).map_err(failure)?;
    let components = decoded.components();
    if components.len() != channels || components.iter().any(|c| c.samples().len() != height * width) {
        return Err(Failure::Corrupt("JPEG 2000: components of other sizes than the image".into()));
    }
    Pixels::new(height, width, channels, decoded.data_u8())
}
