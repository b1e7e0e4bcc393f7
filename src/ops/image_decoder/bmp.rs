//! BMP, read here: a 14-byte file header, then an OS/2 core header (12 bytes) or a Windows info
//! header (40 bytes or longer: V4, V5); uncompressed (`BI_RGB`) rows of 1, 4 or 8-bit palette
//! indices, 24-bit BGR or 32-bit BGRX (the fourth byte ignored, as Pillow does), bottom-up or
//! top-down (a negative height). Run-length and bit-field encodings are refused. An index past the
//! palette reads black.

use super::pixels::Pixels;
use super::{Budget, Failure};

fn corrupt(what: &str) -> Failure {
    Failure::Corrupt(format!("BMP: {what}"))
}

fn u16_at(data: &[u8], at: usize) -> Result<u16, Failure> {
    let b = data.get(at..at + 2).ok_or_else(|| corrupt("the header is truncated"))?;
    Ok(u16::from_le_bytes([b[0], b[1]]))
}

fn u32_at(data: &[u8], at: usize) -> Result<u32, Failure> {
    let b = data.get(at..at + 4).ok_or_else(|| corrupt("the header is truncated"))?;
    Ok(u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
}

/// Decodes a BMP image.
pub(crate) fn decode(data: &[u8], budget: &Budget<'_>) -> Result<Pixels, Failure> {
    if !data.starts_with(b"BM") {
        return Err(corrupt("no BM signature"));
    }
    let offset = u32_at(data, 10)? as usize;
    let header = u32_at(data, 14)? as usize;
    let (width, height, bits, compression, colors_used, entry) = match header {
        12 => (u16_at(data, 18)? as i64, u16_at(data, 20)? as i64, u16_at(data, 24)?, 0, 0, 3),
        40.. => (
            u32_at(data, 18)? as i32 as i64,
            u32_at(data, 22)? as i32 as i64,
            u16_at(data, 28)?,
            u32_at(data, 30)?,
            u32_at(data, 46)?,
            4,
        ),
        _ => return Err(corrupt(&format!("a header of {header} bytes"))),
    };
    // Compressions 1 to 6 (RLE8, RLE4, bit fields, JPEG, PNG, alpha bit fields) and 16-bit pixels
    // exist but are not read here; other values are no BMP.
    match compression {
        0 => {}
        1..=6 => return Err(Failure::Unsupported(format!("BMP compression {compression} (only uncompressed BI_RGB)"))),
        _ => return Err(corrupt(&format!("compression {compression}"))),
    }
    match bits {
        1 | 4 | 8 | 24 | 32 => {}
        16 => return Err(Failure::Unsupported("16-bit BMP pixels".into())),
        _ => return Err(corrupt(&format!("{bits}-bit pixels"))),
    }
    let top_down = height < 0;
    let (width, height) = (width, height.unsigned_abs());
    if width <= 0 || height == 0 {
        return Err(corrupt(&format!("an image of {width}x{height} pixels")));
    }
    let (width, height) = (width as usize, usize::try_from(height).map_err(|_| corrupt("too tall"))?);
    let palette: Vec<[u8; 3]> = if bits <= 8 {
        let max = 1usize << bits;
        let count = if colors_used == 0 { max } else { colors_used as usize };
        if count > max {
            return Err(corrupt(&format!("{count} palette entries for {bits}-bit indices")));
        }
        let start = 14 + header;
        let table = data.get(start..start + count * entry).ok_or_else(|| corrupt("the palette is truncated"))?;
        table.chunks_exact(entry).map(|c| [c[2], c[1], c[0]]).collect()
    } else {
        vec![]
    };
    let samples = budget.image(height, width, 3)?;
    budget.charge("the BMP pixels", Some(samples as u64))?;
    let row_bytes = width
        .checked_mul(bits as usize)
        .and_then(|b| b.checked_add(31))
        .map(|b| b / 32 * 4)
        .ok_or_else(|| corrupt("rows too long"))?;
    let raster = row_bytes
        .checked_mul(height)
        .and_then(|n| offset.checked_add(n))
        .and_then(|end| data.get(offset..end))
        .ok_or_else(|| corrupt("the pixel data is truncated"))?;
    let mut out = Vec::with_capacity(height * width * 3);
    for y in 0..height {
        let row = if top_down { y } else { height - 1 - y };
        let row = &raster[row * row_bytes..(row + 1) * row_bytes];
        match bits {
            24 => row[..width * 3].chunks_exact(3).for_each(|p| out.extend_from_slice(&[p[2], p[1], p[0]])),
            32 => row[..width * 4].chunks_exact(4).for_each(|p| out.extend_from_slice(&[p[2], p[1], p[0]])),
            _ => {
                let per_byte = 8 / bits as usize;
                for x in 0..width {
                    let byte = row[x / per_byte];
                    let shift = 8 - bits as usize * (x % per_byte + 1);
                    let index = (byte >> shift) as usize & ((1 << bits) - 1);
                    out.extend_from_slice(&palette.get(index).copied().unwrap_or([0, 0, 0]));
                }
            }
        }
    }
    Pixels::new(height, width, 3, out)
}
