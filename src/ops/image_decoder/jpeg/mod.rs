//! JPEG, read here to libjpeg-turbo's exact output, which the reference (Pillow) gives: baseline,
//! extended sequential and progressive Huffman-coded 8-bit frames (`SOF0`, `SOF1`, `SOF2`), scans
//! interleaved or not, restart intervals ([`progressive`]: each kind of scan as libjpeg decodes it);
//! libjpeg's accurate integer IDCT ([`idct`]), its fancy chroma upsampling and YCbCr conversion
//! ([`mod@upsample`]). A scan using table 0 or 1 that no DHT segment defined gets the standard table
//! ([`standard_tables`]), as libjpeg does for Motion-JPEG frames. One component is grey; three are YCbCr unless an Adobe marker says RGB (or,
//! with neither a JFIF nor an Adobe marker, the component ids are `R`, `G`, `B`), as libjpeg
//! decides. Arithmetic-coded, lossless, hierarchical, 12-bit and four-component (CMYK) images are
//! refused.

pub(crate) mod huffman;
pub(crate) mod idct;
pub(crate) mod progressive;
pub(crate) mod standard_tables;
pub(crate) mod upsample;

use super::pixels::Pixels;
use super::{Budget, Failure};
use huffman::{Bits, Table};
use progressive::{Pass, Run};
use upsample::{upsample, ycc_to_rgb, Plane};

pub(crate) fn corrupt(what: &str) -> Failure {
    Failure::Corrupt(format!("JPEG: {what}"))
}

/// The zigzag order: `ZIGZAG[k]` is the natural (row-major) index of the `k`-th coefficient.
pub(crate) const ZIGZAG: [usize; 64] = [
    0, 1, 8, 16, 9, 2, 3, 10, 17, 24, 32, 25, 18, 11, 4, 5, 12, 19, 26, 33, 40, 48, 41, 34, 27, 20, 13, 6, 7, 14, 21,
    28, 35, 42, 49, 56, 57, 50, 43, 36, 29, 22, 15, 23, 30, 37, 44, 51, 58, 59, 52, 45, 38, 31, 39, 46, 53, 60, 61, 54,
    47, 55, 62, 63,
];

/// A frame component.
struct Component {
    id: u8,
    h: usize,
    v: usize,
    quant: usize,
    /// The quantization table latched when the component's first scan starts.
    table: Option<[u16; 64]>,
    /// Blocks per row and per column of its plane (whole MCUs).
    blocks_w: usize,
    blocks_h: usize,
    /// The quantized coefficients of its blocks, row by row of blocks, 64 each in natural order.
    coefs: Vec<i16>,
}

/// What the markers before and between scans set.
struct State {
    quant: [Option<[u16; 64]>; 4],
    dc: [Option<Table>; 4],
    ac: [Option<Table>; 4],
    restart: usize,
    jfif: bool,
    adobe: Option<u8>,
}

fn u16_at(data: &[u8], at: usize) -> Result<usize, Failure> {
    let b = data.get(at..at + 2).ok_or_else(|| corrupt("the image is truncated"))?;
    Ok(u16::from_be_bytes([b[0], b[1]]) as usize)
}

/// Decodes a JPEG image.
pub(crate) fn decode(data: &[u8], budget: &Budget<'_>) -> Result<Pixels, Failure> {
    let mut s = State {
        quant: [None; 4],
        dc: Default::default(),
        ac: Default::default(),
        restart: 0,
        jfif: false,
        adobe: None,
    };
    let mut frame: Option<(usize, usize, Vec<Component>)> = None;
    let mut progressive = false;
    let mut at = 2;
    loop {
        // A marker: fill bytes FF, then its code.
        if data.get(at) != Some(&0xFF) {
            return Err(corrupt("a marker was expected"));
        }
        while data.get(at) == Some(&0xFF) {
            at += 1;
        }
        let marker = *data.get(at).ok_or_else(|| corrupt("the image is truncated"))?;
        at += 1;
        if marker == 0xD9 {
            break;
        }
        if (0xD0..=0xD7).contains(&marker) || marker == 0x01 {
            continue;
        }
        let len = u16_at(data, at)?;
        let body = data.get(at + 2..at + len.max(2)).ok_or_else(|| corrupt("a segment is truncated"))?;
        if len < 2 {
            return Err(corrupt("a segment shorter than its length field"));
        }
        match marker {
            0xC0..=0xC2 => {
                if frame.is_some() {
                    return Err(corrupt("two frames"));
                }
                progressive = marker == 0xC2;
                frame = Some(read_frame(body, budget)?);
            }
            0xC3 | 0xC5..=0xC7 | 0xC9..=0xCB | 0xCD..=0xCF => {
                return Err(Failure::Unsupported("lossless, hierarchical or arithmetic-coded JPEG".into()))
            }
            0xC4 => read_huffman(body, &mut s)?,
            0xDB => read_quant(body, &mut s)?,
            0xDD => s.restart = u16_at(body, 0)?,
            0xE0 if body.starts_with(b"JFIF\0") => s.jfif = true,
            0xEE if body.starts_with(b"Adobe") && body.len() >= 12 => s.adobe = Some(body[11]),
            0xDA => {
                let (w, h, comps) = frame.as_mut().ok_or_else(|| corrupt("a scan before the frame"))?;
                at = read_scan(data, at, body, &mut s, (*w, *h), comps, progressive)?;
                continue;
            }
            _ => {}
        }
        at += len;
    }
    let (width, height, comps) = frame.ok_or_else(|| corrupt("no frame"))?;
    if comps.iter().any(|c| c.table.is_none()) {
        return Err(corrupt("a component has no scan"));
    }
    assemble(width, height, &comps, &s)
}

/// `SOF0`/`SOF1`/`SOF2`: the image's size and components, their planes allocated once everything
/// the decoding allocates is charged to the budget.
fn read_frame(body: &[u8], budget: &Budget<'_>) -> Result<(usize, usize, Vec<Component>), Failure> {
    let b = |i: usize| body.get(i).copied().ok_or_else(|| corrupt("the frame header is truncated"));
    match b(0)? {
        8 => {}
        12 | 16 => return Err(Failure::Unsupported(format!("{}-bit JPEG samples", b(0)?))),
        p => return Err(corrupt(&format!("{p}-bit samples"))),
    }
    let (height, width, n) = (u16_at(body, 1)?, u16_at(body, 3)?, b(5)? as usize);
    if height == 0 {
        return Err(Failure::Unsupported("a JPEG whose height follows the scan (DNL)".into()));
    }
    if width == 0 {
        return Err(corrupt("the width is 0"));
    }
    match n {
        1 | 3 => {}
        2 | 4 => return Err(Failure::Unsupported(format!("JPEG with {n} components"))),
        _ => return Err(corrupt(&format!("{n} components"))),
    }
    let mut comps: Vec<Component> = vec![];
    for i in 0..n {
        let (id, hv, quant) = (b(6 + 3 * i)?, b(7 + 3 * i)?, b(8 + 3 * i)? as usize);
        let (h, v) = ((hv >> 4) as usize, (hv & 15) as usize);
        if !(1..=4).contains(&h) || !(1..=4).contains(&v) || quant > 3 {
            return Err(corrupt("bad sampling factors or quantization table"));
        }
        comps.push(Component { id, h, v, quant, table: None, blocks_w: 0, blocks_h: 0, coefs: vec![] });
    }
    let hmax = comps.iter().map(|c| c.h).max().unwrap_or(1);
    let vmax = comps.iter().map(|c| c.v).max().unwrap_or(1);
    if comps.iter().any(|c| hmax % c.h != 0 || vmax % c.v != 0) {
        return Err(corrupt("fractional sampling"));
    }
    let pixels = budget.image(height, width, n)?;
    let (mcus_x, mcus_y) = (width.div_ceil(8 * hmax), height.div_ceil(8 * vmax));
    // Each component's coefficients (2 bytes each), one component's samples at a time, the
    // upsampled planes and the interleaved pixels.
    let mut largest = 0u64;
    for c in &mut comps {
        c.blocks_w = mcus_x * c.h;
        c.blocks_h = mcus_y * c.v;
        let samples = (c.blocks_w as u64).checked_mul(c.blocks_h as u64).and_then(|b| b.checked_mul(64));
        budget.charge("the JPEG coefficients", samples.and_then(|s| s.checked_mul(2)))?;
        largest = largest.max(samples.unwrap_or(u64::MAX));
    }
    budget.charge("the JPEG samples", Some(largest))?;
    budget.charge_items("the JPEG planes and pixels", pixels as u64, 2)?;
    for c in &mut comps {
        c.coefs = vec![0; c.blocks_w * c.blocks_h * 64];
    }
    Ok((width, height, comps))
}

/// `DHT`: one or more tables.
fn read_huffman(mut body: &[u8], s: &mut State) -> Result<(), Failure> {
    while !body.is_empty() {
        let (class, id) = (body[0] >> 4, (body[0] & 15) as usize);
        let counts: [u8; 16] =
            body.get(1..17).and_then(|c| c.try_into().ok()).ok_or_else(|| corrupt("DHT truncated"))?;
        let n: usize = counts.iter().map(|&c| c as usize).sum();
        let values = body.get(17..17 + n).ok_or_else(|| corrupt("DHT truncated"))?.to_vec();
        if class > 1 || id > 3 {
            return Err(corrupt("a Huffman table of bad class or id"));
        }
        let table = Table::new(&counts, values, class == 0)?;
        if class == 0 {
            s.dc[id] = Some(table)
        } else {
            s.ac[id] = Some(table)
        }
        body = &body[17 + n..];
    }
    Ok(())
}

/// `DQT`: one or more tables, 8 or 16-bit, in zigzag order.
fn read_quant(mut body: &[u8], s: &mut State) -> Result<(), Failure> {
    while !body.is_empty() {
        let (wide, id) = (body[0] >> 4, (body[0] & 15) as usize);
        if wide > 1 || id > 3 {
            return Err(corrupt("a quantization table of bad precision or id"));
        }
        let size = if wide == 1 { 128 } else { 64 };
        let raw = body.get(1..1 + size).ok_or_else(|| corrupt("DQT truncated"))?;
        let mut table = [0u16; 64];
        for (k, &n) in ZIGZAG.iter().enumerate() {
            table[n] = if wide == 1 { u16::from_be_bytes([raw[2 * k], raw[2 * k + 1]]) } else { raw[k] as u16 };
        }
        s.quant[id] = Some(table);
        body = &body[1 + size..];
    }
    Ok(())
}

/// One scan (its header `body`, its data from `at`): the coefficients it codes decoded into its
/// components' blocks. Gives the position of the marker after it.
fn read_scan(
    data: &[u8],
    at: usize,
    body: &[u8],
    s: &mut State,
    (width, height): (usize, usize),
    comps: &mut [Component],
    progressive: bool,
) -> Result<usize, Failure> {
    let b = |i: usize| body.get(i).copied().ok_or_else(|| corrupt("the scan header is truncated"));
    let n = b(0)? as usize;
    if n == 0 || n > comps.len() {
        return Err(corrupt("a scan of no or too many components"));
    }
    // Tables 0 and 1 that no DHT defined are the standard ones (libjpeg's `jpeg_std_huff_table`).
    for i in 0..n {
        let tables = b(2 + 2 * i)?;
        for (dc, id) in [(true, (tables >> 4) as usize), (false, (tables & 15) as usize)] {
            let slot = if dc { s.dc.get_mut(id) } else { s.ac.get_mut(id) };
            if let Some(slot @ None) = slot {
                *slot = standard_tables::standard(dc, id).transpose()?;
            }
        }
    }
    let s = &*s;
    let mut members = vec![];
    for i in 0..n {
        let (id, tables) = (b(1 + 2 * i)?, b(2 + 2 * i)?);
        let c = comps.iter().position(|c| c.id == id).ok_or_else(|| corrupt("a scan of an unknown component"))?;
        let dc = s.dc.get((tables >> 4) as usize).and_then(Option::as_ref);
        let ac = s.ac.get((tables & 15) as usize).and_then(Option::as_ref);
        if comps[c].table.is_none() {
            comps[c].table = Some(s.quant[comps[c].quant].ok_or_else(|| corrupt("an undefined quantization table"))?);
        }
        members.push((c, dc, ac));
    }
    let pass = if progressive {
        let (ss, se, a) = (b(1 + 2 * n)? as usize, b(2 + 2 * n)? as usize, b(3 + 2 * n)?);
        let (ah, al) = ((a >> 4) as u32, (a & 15) as u32);
        // libjpeg's "invalid progressive parameters".
        let dc = ss == 0;
        if (dc && se != 0) || (!dc && (se < ss || se > 63 || n != 1)) || (ah != 0 && al + 1 != ah) || al > 13 {
            return Err(corrupt("invalid progressive scan parameters"));
        }
        match (dc, ah) {
            (true, 0) => Pass::DcFirst { al },
            (true, _) => Pass::DcRefine { al },
            (false, 0) => Pass::AcFirst { ss, se, al },
            (false, _) => Pass::AcRefine { ss, se, al },
        }
    } else {
        Pass::Sequential
    };
    let hmax = comps.iter().map(|c| c.h).max().unwrap_or(1);
    let vmax = comps.iter().map(|c| c.v).max().unwrap_or(1);
    // MCUs: in an interleaved scan, h x v blocks of each component; otherwise one block, over the
    // blocks that cover the component's own samples.
    let (mcus_x, mcus_y) = if n == 1 {
        let c = &comps[members[0].0];
        ((width * c.h).div_ceil(hmax).div_ceil(8), (height * c.v).div_ceil(vmax).div_ceil(8))
    } else {
        (width.div_ceil(8 * hmax), height.div_ceil(8 * vmax))
    };
    let mut bits = Bits::new(data, at + u16_at(data, at)?);
    let mut pred = vec![0i32; n];
    let mut run = Run::default();
    for m in 0..mcus_x * mcus_y {
        if s.restart > 0 && m > 0 && m % s.restart == 0 {
            bits.restart()?;
            pred.iter_mut().for_each(|p| *p = 0);
            run = Run::default();
        }
        let (mx, my) = (m % mcus_x, m / mcus_x);
        for (k, &(c, dc, ac)) in members.iter().enumerate() {
            let comp = &mut comps[c];
            let (bh, bv) = if n == 1 { (1, 1) } else { (comp.h, comp.v) };
            for by in 0..bv {
                for bx in 0..bh {
                    let index = (my * bv + by) * comp.blocks_w + mx * bh + bx;
                    let block = &mut comp.coefs[index * 64..index * 64 + 64];
                    progressive::block(pass, &mut bits, &mut run, (dc, ac), &mut pred[k], block)?;
                }
            }
        }
    }
    bits.end()
}

/// A component's samples: each block dequantized with the component's table and transformed.
fn samples(comp: &Component) -> Vec<u8> {
    let stride = comp.blocks_w * 8;
    let mut out = vec![0u8; stride * comp.blocks_h * 8];
    let quant = comp.table.unwrap_or([0; 64]);
    let mut coefs = [0i32; 64];
    for (index, block) in comp.coefs.chunks_exact(64).enumerate() {
        for i in 0..64 {
            coefs[i] = block[i] as i32 * quant[i] as i32;
        }
        let (x, y) = (index % comp.blocks_w * 8, index / comp.blocks_w * 8);
        idct::idct_islow(&coefs, &mut out[y * stride + x..], stride);
    }
    out
}

/// The planes upsampled to the image's size and converted to grey or RGB.
fn assemble(width: usize, height: usize, comps: &[Component], s: &State) -> Result<Pixels, Failure> {
    let hmax = comps.iter().map(|c| c.h).max().unwrap_or(1);
    let vmax = comps.iter().map(|c| c.v).max().unwrap_or(1);
    let planes: Vec<Vec<u8>> = comps
        .iter()
        .map(|c| {
            let data = samples(c);
            let plane = Plane {
                data: &data,
                stride: c.blocks_w * 8,
                width: (width * c.h).div_ceil(hmax),
                height: (height * c.v).div_ceil(vmax),
            };
            upsample(&plane, hmax / c.h, vmax / c.v, width, height)
        })
        .collect();
    if comps.len() == 1 {
        return Pixels::new(height, width, 1, planes.into_iter().next().unwrap_or_default());
    }
    let ids = [comps[0].id, comps[1].id, comps[2].id];
    let rgb = if s.jfif {
        false
    } else if let Some(transform) = s.adobe {
        transform == 0
    } else {
        ids == [b'R', b'G', b'B']
    };
    let mut out = Vec::with_capacity(width * height * 3);
    for ((&a, &b), &c) in planes[0].iter().zip(&planes[1]).zip(&planes[2]) {
        out.extend_from_slice(&if rgb { [a, b, c] } else { ycc_to_rgb(a, b, c) });
    }
    Pixels::new(height, width, 3, out)
}
