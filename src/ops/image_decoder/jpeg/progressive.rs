//! The entropy decoding of one block in each kind of scan, as libjpeg's `jdhuff.c` (sequential)
//! and `jdphuff.c` (progressive) do it, into quantized coefficients in natural order: a run past
//! the 64th coefficient writes the last one (libjpeg's extended natural-order table).

use super::huffman::{extend, Bits, Table};
use super::ZIGZAG;
use crate::ops::image_decoder::Failure;

/// The natural index of the `k`-th coefficient in zigzag order, `k` past 63 reading 63.
fn natural(k: usize) -> usize {
    ZIGZAG[k.min(63)]
}

/// What a scan codes, from its `Ss`, `Se`, `Ah`, `Al`: `al` is the bit the pass starts at (its
/// values shifted left by it), `ss..=se` the band of AC coefficients (zigzag positions).
#[derive(Debug, Clone, Copy)]
pub(crate) enum Pass {
    /// A sequential scan: every coefficient.
    Sequential,
    /// The DC coefficients' first bits.
    DcFirst {
        /// Their lowest bit.
        al: u32,
    },
    /// One more bit of the DC coefficients.
    DcRefine {
        /// That bit.
        al: u32,
    },
    /// The first bits of the AC coefficients of a band.
    AcFirst {
        /// The band's first position.
        ss: usize,
        /// The band's last position.
        se: usize,
        /// Their lowest bit.
        al: u32,
    },
    /// One more bit of the AC coefficients of a band.
    AcRefine {
        /// The band's first position.
        ss: usize,
        /// The band's last position.
        se: usize,
        /// That bit.
        al: u32,
    },
}

/// A scan's decoding state: the end-of-band run of progressive AC scans.
#[derive(Debug, Default)]
pub(crate) struct Run {
    /// Blocks left whose band is all zero (first scans) or holds only corrections (refinements).
    pub eobrun: u32,
}

/// Decodes one block of `pass` into `block` (quantized, natural order): `pred` is the component's
/// DC prediction; `dc`/`ac` its tables where the pass uses them.
pub(crate) fn block(
    pass: Pass,
    bits: &mut Bits<'_>,
    run: &mut Run,
    tables: (Option<&Table>, Option<&Table>),
    pred: &mut i32,
    block: &mut [i16],
) -> Result<(), Failure> {
    let missing = || super::corrupt("a scan uses an undefined Huffman table");
    match pass {
        Pass::Sequential | Pass::DcFirst { .. } => {
            let dc = tables.0.ok_or_else(missing)?;
            let s = bits.decode(dc)? as u32;
            *pred = pred.wrapping_add(extend(bits.bits(s)?, s));
            let al = if let Pass::DcFirst { al } = pass { al } else { 0 };
            block[0] = (*pred << al) as i16;
            if let Pass::Sequential = pass {
                let ac = tables.1.ok_or_else(missing)?;
                let mut k = 1;
                while k < 64 {
                    let rs = bits.decode(ac)?;
                    let (r, s) = ((rs >> 4) as usize, (rs & 15) as u32);
                    if s != 0 {
                        k += r;
                        block[natural(k)] = extend(bits.bits(s)?, s) as i16;
                    } else if r != 15 {
                        break;
                    } else {
                        k += 15;
                    }
                    k += 1;
                }
            }
        }
        Pass::DcRefine { al } => {
            if bits.bits(1)? == 1 {
                block[0] |= 1 << al;
            }
        }
        Pass::AcFirst { ss, se, al } => {
            if run.eobrun > 0 {
                run.eobrun -= 1;
                return Ok(());
            }
            let ac = tables.1.ok_or_else(missing)?;
            let mut k = ss;
            while k <= se {
                let rs = bits.decode(ac)?;
                let (r, s) = ((rs >> 4) as usize, (rs & 15) as u32);
                if s != 0 {
                    k += r;
                    block[natural(k)] = (extend(bits.bits(s)?, s) << al) as i16;
                } else if r == 15 {
                    k += 15;
                } else {
                    run.eobrun = (1 << r) + bits.bits(r as u32)? as u32 - 1;
                    break;
                }
                k += 1;
            }
        }
        Pass::AcRefine { ss, se, al } => refine(bits, run, tables.1, (ss, se, al), block)?,
    }
    Ok(())
}

/// `decode_mcu_AC_refine`: a correction bit for each coefficient already non-zero in the band,
/// new coefficients of magnitude `1 << al` placed after the zero runs the codes give.
fn refine(
    bits: &mut Bits<'_>,
    run: &mut Run,
    ac: Option<&Table>,
    (ss, se, al): (usize, usize, u32),
    block: &mut [i16],
) -> Result<(), Failure> {
    let (p1, m1) = (1i16 << al, (-1i16) << al);
    let correct = |bits: &mut Bits<'_>, c: &mut i16| -> Result<(), Failure> {
        if bits.bits(1)? == 1 && *c & p1 == 0 {
            *c = c.wrapping_add(if *c >= 0 { p1 } else { m1 });
        }
        Ok(())
    };
    let mut k = ss;
    if run.eobrun == 0 {
        let ac = ac.ok_or_else(|| super::corrupt("a scan uses an undefined Huffman table"))?;
        while k <= se {
            let rs = bits.decode(ac)?;
            let (mut r, s) = ((rs >> 4) as i32, rs & 15);
            // A size other than 1 is libjpeg's "bad Huffman code" warning: read as 1.
            let value = if s != 0 {
                Some(if bits.bits(1)? == 1 { p1 } else { m1 })
            } else if r != 15 {
                run.eobrun = (1 << r) + bits.bits(r as u32)? as u32;
                break;
            } else {
                None
            };
            while k <= se {
                let c = &mut block[natural(k)];
                if *c != 0 {
                    correct(bits, c)?;
                } else {
                    r -= 1;
                    if r < 0 {
                        break;
                    }
                }
                k += 1;
            }
            if let Some(v) = value {
                block[natural(k)] = v;
            }
            k += 1;
        }
    }
    if run.eobrun > 0 {
        while k <= se {
            let c = &mut block[natural(k)];
            if *c != 0 {
                correct(bits, c)?;
            }
            k += 1;
        }
        run.eobrun -= 1;
    }
    Ok(())
}
