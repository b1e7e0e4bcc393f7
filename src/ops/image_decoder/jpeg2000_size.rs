//! What hayro-jpeg2000 allocates to decode a JPEG 2000 codestream, from its main header (`SIZ`,
//! `COD`, `COC`), charged to the budget before the crate decodes: a few hundred bytes of header can
//! declare millions of tiles, code blocks or precincts, each a structure the crate builds, besides
//! the 32-bit float plane of each component (at the image's full size, whatever its subsampling).
//!
//! The counts are upper bounds, in checked arithmetic; the bytes per structure were measured on the
//! crate (peak memory over streams declaring many of each) and rounded up.

use super::{Budget, Failure};

/// The most tiles a codestream may have: a tile's index (`Isot`) is 16 bits, 65534 at most.
pub(super) const MAX_TILES: u64 = 65535;

/// Bytes per tile and component: the crate's tile structure and its copy of the component's
/// coding parameters.
const TILE_BYTES: u64 = 512;
/// Bytes per code block: its structure, layers and segments (about 270 measured with 4x4 blocks).
const BLOCK_BYTES: u64 = 512;
/// Bytes per precinct: its structure and tag trees.
const PRECINCT_BYTES: u64 = 256;

/// A component's coding parameters: decomposition levels, code block exponents and precinct
/// exponents per resolution (15 when the precincts are the default, maximal ones).
#[derive(Debug, Clone, PartialEq)]
struct Coding {
    levels: u32,
    block: (u32, u32),
    precincts: Vec<(u32, u32)>,
}

/// What the main header says.
#[derive(Debug)]
struct Header {
    width: u64,
    height: u64,
    tiles: (u64, u64),
    components: u64,
    /// The default coding (`COD`) and the components' own (`COC`).
    codings: Vec<Coding>,
}

fn corrupt(what: &str) -> Failure {
    Failure::Corrupt(format!("JPEG 2000: {what}"))
}

/// Charges what decoding `data` takes; `samples` is the 8-bit output of the image.
pub(super) fn charge(data: &[u8], budget: &Budget<'_>, samples: usize) -> Result<(), Failure> {
    let h = header(data)?;
    let tiles = h.tiles.0.checked_mul(h.tiles.1).filter(|&t| t <= MAX_TILES).ok_or_else(|| {
        corrupt(&format!("{}x{} tiles, more than a codestream may have ({MAX_TILES})", h.tiles.0, h.tiles.1))
    })?;
    let pixels = h.width.checked_mul(h.height);
    budget.charge("the JPEG 2000 samples", Some(samples as u64))?;
    // Each component's float plane, one tile's coefficients and wavelet buffers (at most the image).
    let planes = pixels.and_then(|p| p.checked_mul(h.components)).and_then(|n| n.checked_mul(4));
    budget.charge("the JPEG 2000 component planes", planes)?;
    budget.charge("the JPEG 2000 tile buffers", pixels.and_then(|p| p.checked_mul(12)))?;
    budget.charge_items("the JPEG 2000 tiles", tiles.saturating_mul(h.components), TILE_BYTES)?;
    // One tile's structures at a time, bounded by the whole image's (plus a partial block or
    // precinct per tile edge); the component with the most, times the components.
    let mut blocks = 0u64;
    let mut precincts = 0u64;
    for coding in &h.codings {
        let (b, p) = structures(&h, coding).ok_or_else(|| corrupt("the code blocks cannot be counted"))?;
        blocks = blocks.max(b);
        precincts = precincts.max(p);
    }
    budget.charge_items("the JPEG 2000 code blocks", blocks.saturating_mul(h.components), BLOCK_BYTES)?;
    budget.charge_items("the JPEG 2000 precincts", precincts.saturating_mul(h.components), PRECINCT_BYTES)
}

/// Upper bounds of a component's code blocks and precincts over all its tiles.
fn structures(h: &Header, c: &Coding) -> Option<(u64, u64)> {
    let (tx, ty) = h.tiles;
    let cells = |len: u64, exp: u32, tiles: u64| -> Option<u64> {
        let size = 1u64.checked_shl(exp.min(62))?;
        len.div_ceil(size).checked_add(tiles)
    };
    let (mut blocks, mut precincts) = (0u64, 0u64);
    for r in 0..=c.levels {
        let shift = (c.levels - r).min(62);
        let (w, hgt) = (h.width.div_ceil(1 << shift), h.height.div_ceil(1 << shift));
        let (px, py) = c.precincts.get(r as usize).copied().unwrap_or((15, 15));
        precincts = precincts.checked_add(cells(w, px, tx)?.checked_mul(cells(hgt, py, ty)?)?)?;
        // A band is half the resolution's size (three bands) past the lowest resolution (one).
        let (bands, bw, bh) = if r == 0 { (1, w, hgt) } else { (3, w.div_ceil(2), hgt.div_ceil(2)) };
        let cut = u32::from(r > 0);
        let (ex, ey) = (c.block.0.min(px.saturating_sub(cut)), c.block.1.min(py.saturating_sub(cut)));
        let per_band = cells(bw, ex, tx)?.checked_mul(cells(bh, ey, ty)?)?;
        blocks = blocks.checked_add(per_band.checked_mul(bands)?)?;
    }
    Some((blocks, precincts))
}

/// The codestream inside `data`: `data` itself, or the contents of its JP2 `jp2c` box.
fn codestream(data: &[u8]) -> Option<&[u8]> {
    if data.starts_with(b"\xff\x4f") {
        return Some(data);
    }
    let mut at = 0usize;
    while at < data.len() {
        let len = u32::from_be_bytes(data.get(at..at + 4)?.try_into().ok()?) as u64;
        let kind = data.get(at + 4..at + 8)?;
        let (head, len) = match len {
            0 => (8, (data.len() - at) as u64),
            1 => (16, u64::from_be_bytes(data.get(at + 8..at + 16)?.try_into().ok()?)),
            n => (8, n),
        };
        let end =
            usize::try_from(len).ok().and_then(|l| at.checked_add(l)).filter(|&e| e <= data.len() && len >= head)?;
        if kind == b"jp2c" {
            return data.get(at + head as usize..end);
        }
        at = end;
    }
    None
}

fn be(data: &[u8], at: usize, n: usize) -> Option<u64> {
    Some(data.get(at..at.checked_add(n)?)?.iter().fold(0u64, |v, &b| v << 8 | b as u64))
}

/// Reads `SIZ` and the `COD`/`COC` markers of the main header (up to the first tile).
fn header(data: &[u8]) -> Result<Header, Failure> {
    let cs = codestream(data).ok_or_else(|| corrupt("no codestream"))?;
    let field = |at: usize, n: usize| be(cs, at, n).ok_or_else(|| corrupt("the main header is truncated"));
    if field(0, 2)? != 0xFF4F || field(2, 2)? != 0xFF51 {
        return Err(corrupt("no SIZ marker after SOC"));
    }
    let (xsiz, ysiz, xo, yo) = (field(8, 4)?, field(12, 4)?, field(16, 4)?, field(20, 4)?);
    let (xt, yt, xto, yto) = (field(24, 4)?, field(28, 4)?, field(32, 4)?, field(36, 4)?);
    let components = field(40, 2)?;
    if xsiz <= xo || ysiz <= yo || xt == 0 || yt == 0 || xto > xo || yto > yo || components == 0 {
        return Err(corrupt("an invalid SIZ marker"));
    }
    let tiles = ((xsiz - xto).div_ceil(xt), (ysiz - yto).div_ceil(yt));
    let mut codings = vec![];
    let mut at = 4 + field(4, 2)? as usize;
    loop {
        let marker = field(at, 2)?;
        if marker == 0xFF90 || marker == 0xFF93 || marker == 0xFFD9 {
            break;
        }
        let len = field(at + 2, 2)? as usize;
        if len < 2 {
            return Err(corrupt("a marker shorter than its length field"));
        }
        let body = cs.get(at + 4..at + 2 + len).ok_or_else(|| corrupt("the main header is truncated"))?;
        match marker {
            0xFF52 => codings.push(coding(body, 0, 4)?),
            0xFF53 => {
                let skip = if components < 257 { 1 } else { 2 };
                codings.push(coding(body, skip, 0)?)
            }
            _ => {}
        }
        at += 2 + len;
    }
    if codings.is_empty() {
        return Err(corrupt("no COD marker"));
    }
    Ok(Header { width: xsiz - xo, height: ysiz - yo, tiles, components, codings })
}

/// A `COD` (`skip` 0, `sg` 4: `Scod`, then the progression, layers and transform bytes) or `COC`
/// (`skip` the component index, no `SGcod`) body.
fn coding(body: &[u8], skip: usize, sg: usize) -> Result<Coding, Failure> {
    let b = |i: usize| body.get(i).copied().ok_or_else(|| corrupt("a COD or COC marker is truncated"));
    let style = b(skip)?;
    let sp = skip + 1 + sg;
    let levels = b(sp)? as u32;
    let block = (b(sp + 1)? as u32 + 2, b(sp + 2)? as u32 + 2);
    let mut precincts = vec![];
    if style & 1 == 1 {
        for r in 0..=levels as usize {
            let p = b(sp + 5 + r)?;
            precincts.push(((p & 15) as u32, (p >> 4) as u32));
        }
    }
    Ok(Coding { levels, block, precincts })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A bare codestream: SIZ of `w` x `h` with tiles of `t` x `t`, one component, a COD of
    /// `levels` levels, code blocks of 2^`cb` and, when given, precincts of 2^`p` (all levels).
    pub(crate) fn stream(w: u32, h: u32, t: u32, levels: u8, cb: u8, p: Option<u8>) -> Vec<u8> {
        let mut s = vec![0xFF, 0x4F, 0xFF, 0x51, 0, 41, 0, 0];
        for v in [w, h, 0, 0, t, t, 0, 0] {
            s.extend_from_slice(&v.to_be_bytes());
        }
        s.extend_from_slice(&[0, 1, 7, 1, 1]);
        let precincts: Vec<u8> = p.map(|p| vec![p << 4 | p; levels as usize + 1]).unwrap_or_default();
        s.extend_from_slice(&[0xFF, 0x52, 0, 12 + precincts.len() as u8, u8::from(p.is_some()), 0, 0, 1, 0]);
        s.extend_from_slice(&[levels, cb - 2, cb - 2, 0, 0]);
        s.extend_from_slice(&precincts);
        s.extend_from_slice(&[0xFF, 0x90]);
        s
    }

    #[test]
    fn the_main_header_is_read() {
        let h = header(&stream(4000, 3000, 16, 5, 6, Some(7))).unwrap();
        assert_eq!((h.width, h.height, h.tiles, h.components), (4000, 3000, (250, 188), 1));
        assert_eq!(h.codings, [Coding { levels: 5, block: (6, 6), precincts: vec![(7, 7); 6] }]);
    }

    #[test]
    fn blocks_and_precincts_are_bounded_above() {
        // One 64x64 image, one tile, no decomposition, 4x4 blocks: 256 blocks (+ a tile edge each way).
        let h = header(&stream(64, 64, 64, 0, 2, None)).unwrap();
        assert_eq!(structures(&h, &h.codings[0]), Some((17 * 17, 2 * 2)));
        // Precincts of 2x2 at every level make blocks of 1x1 past the lowest resolution.
        let h = header(&stream(64, 64, 64, 1, 6, Some(1))).unwrap();
        let (blocks, precincts) = structures(&h, &h.codings[0]).unwrap();
        assert_eq!(blocks, 17 * 17 + 3 * 33 * 33);
        assert_eq!(precincts, 17 * 17 + 33 * 33);
    }
}
