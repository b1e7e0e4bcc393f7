//! Decoded pixels and their conversion to the output's pixel format, as Pillow's `convert` does.

use super::Failure;

/// 8-bit samples, row-major, interleaved: `channels` is 1 (grey), 2 (grey, alpha), 3 (RGB) or 4 (RGBA).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Pixels {
    /// Rows.
    pub height: usize,
    /// Columns.
    pub width: usize,
    /// Samples per pixel: 1 grey, 2 grey and alpha, 3 RGB, 4 RGBA.
    pub channels: usize,
    /// `height * width * channels` samples.
    pub data: Vec<u8>,
}

/// The output's pixel format (the attribute `pixel_format`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum PixelFormat {
    /// Red, green, blue.
    Rgb,
    /// Blue, green, red.
    Bgr,
    /// One channel, ITU-R 601-2 luma.
    Grayscale,
}

impl PixelFormat {
    /// From the attribute's text.
    pub(crate) fn parse(text: &str) -> Option<PixelFormat> {
        match text {
            "RGB" => Some(PixelFormat::Rgb),
            "BGR" => Some(PixelFormat::Bgr),
            "Grayscale" => Some(PixelFormat::Grayscale),
            _ => None,
        }
    }

    /// The output's channels.
    pub(crate) fn channels(self) -> usize {
        match self {
            PixelFormat::Grayscale => 1,
            _ => 3,
        }
    }
}

/// Pillow's luma of an RGB pixel (`convert("L")`): `L = R*299/1000 + G*587/1000 + B*114/1000` in
/// 16-bit fixed point, rounded half up.
pub(crate) fn luma(r: u8, g: u8, b: u8) -> u8 {
    ((r as u32 * 19595 + g as u32 * 38470 + b as u32 * 7471 + 0x8000) >> 16) as u8
}

impl Pixels {
    /// Checks that the samples are as many as the dims say.
    pub(crate) fn new(height: usize, width: usize, channels: usize, data: Vec<u8>) -> Result<Pixels, Failure> {
        let want = height.checked_mul(width).and_then(|n| n.checked_mul(channels));
        if !(1..=4).contains(&channels) || want != Some(data.len()) {
            return Err(Failure::Corrupt(format!(
                "the decoder gave {} samples for {height}x{width} pixels of {channels} channels",
                data.len()
            )));
        }
        Ok(Pixels { height, width, channels, data })
    }

    /// The pixels in `format`: alpha dropped, grey repeated into RGB, RGB reduced to luma.
    pub(crate) fn convert(&self, format: PixelFormat) -> Vec<u8> {
        let n = self.height * self.width;
        let mut out = Vec::with_capacity(n * format.channels());
        for p in self.data.chunks_exact(self.channels) {
            let (r, g, b) = if self.channels >= 3 { (p[0], p[1], p[2]) } else { (p[0], p[0], p[0]) };
            match format {
                PixelFormat::Rgb => out.extend_from_slice(&[r, g, b]),
                PixelFormat::Bgr => out.extend_from_slice(&[b, g, r]),
                PixelFormat::Grayscale if self.channels < 3 => out.push(r),
                PixelFormat::Grayscale => out.push(luma(r, g, b)),
            }
        }
        out
    }
}
