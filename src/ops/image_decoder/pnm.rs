//! Netpbm images, read here: `P1`/`P4` bitmaps (1 black, 0 white), `P2`/`P5` grey maps and `P3`/`P6`
//! pixel maps, plain (decimal text) or raw (bytes), `#` comments in the header. Samples must be 8-bit
//! with `maxval` 255; other maxvals (rescaled by readers in different ways, or 16-bit) are refused.

use super::pixels::Pixels;
use super::{Budget, Failure};

fn corrupt(what: &str) -> Failure {
    Failure::Corrupt(format!("PNM: {what}"))
}

/// A reader of the header's and plain rasters' tokens.
struct Tokens<'a> {
    data: &'a [u8],
    at: usize,
}

impl Tokens<'_> {
    /// Skips whitespace and comments (from `#` to the end of the line).
    fn skip(&mut self) {
        while let Some(&c) = self.data.get(self.at) {
            if c == b'#' {
                while self.data.get(self.at).is_some_and(|&c| c != b'\n' && c != b'\r') {
                    self.at += 1;
                }
            } else if c.is_ascii_whitespace() {
                self.at += 1;
            } else {
                break;
            }
        }
    }

    /// The next decimal number, at most `max`; `digits` bounds how many digits it takes (1 for a
    /// plain bitmap, whose digits need no separator).
    fn number(&mut self, what: &str, max: u64, digits: usize) -> Result<u64, Failure> {
        self.skip();
        let start = self.at;
        let mut value = 0u64;
        while self.at - start < digits && self.data.get(self.at).is_some_and(u8::is_ascii_digit) {
            value = value * 10 + u64::from(self.data[self.at] - b'0');
            if value > max {
                return Err(corrupt(&format!("{what} is over {max}")));
            }
            self.at += 1;
        }
        if self.at == start {
            return Err(corrupt(&format!("{what} is missing")));
        }
        Ok(value)
    }
}

/// Decodes a PNM image.
pub(crate) fn decode(data: &[u8], budget: &Budget<'_>) -> Result<Pixels, Failure> {
    let kind = match data {
        [b'P', k @ b'1'..=b'6', ..] => k - b'0',
        _ => return Err(corrupt("no P1 to P6 signature")),
    };
    let mut tokens = Tokens { data, at: 2 };
    let width = tokens.number("the width", u32::MAX as u64, 10)? as usize;
    let height = tokens.number("the height", u32::MAX as u64, 10)? as usize;
    if width == 0 || height == 0 {
        return Err(corrupt(&format!("an image of {width}x{height} pixels")));
    }
    let bitmap = kind == 1 || kind == 4;
    let maxval = if bitmap { 1 } else { tokens.number("maxval", 65535, 5)? };
    if maxval == 0 {
        return Err(corrupt("maxval is 0"));
    }
    if !bitmap && maxval != 255 {
        return Err(Failure::Unsupported(format!("PNM maxval {maxval} (only 255, 8-bit samples)")));
    }
    let channels = if kind == 3 || kind == 6 { 3 } else { 1 };
    let samples = budget.image(height, width, channels)?;
    budget.charge("the PNM pixels", Some(samples as u64))?;
    let data = match kind {
        1..=3 => {
            let digits = if kind == 1 { 1 } else { usize::MAX };
            let mut out = Vec::with_capacity(samples);
            for _ in 0..samples {
                let v = tokens
                    .number("a sample", maxval, digits)
                    .map_err(|_| corrupt("the raster is truncated or malformed"))?;
                out.push(if bitmap {
                    if v == 1 {
                        0
                    } else {
                        255
                    }
                } else {
                    v as u8
                });
            }
            out
        }
        _ => {
            // One whitespace byte ends the header; the raster follows.
            if !data.get(tokens.at).is_some_and(u8::is_ascii_whitespace) {
                return Err(corrupt("no whitespace after the header"));
            }
            let start = tokens.at + 1;
            if kind == 4 {
                let row_bytes = width.div_ceil(8);
                let end = row_bytes.checked_mul(height).and_then(|n| n.checked_add(start));
                let raster =
                    end.and_then(|end| data.get(start..end)).ok_or_else(|| corrupt("the raster is truncated"))?;
                let mut out = Vec::with_capacity(samples);
                for row in raster.chunks_exact(row_bytes) {
                    out.extend((0..width).map(|x| if row[x / 8] >> (7 - x % 8) & 1 == 1 { 0 } else { 255 }));
                }
                out
            } else {
                let end = start.checked_add(samples);
                let raster =
                    end.and_then(|end| data.get(start..end)).ok_or_else(|| corrupt("the raster is truncated"))?;
                raster.to_vec()
            }
        }
    };
    Pixels::new(height, width, channels, data)
}
