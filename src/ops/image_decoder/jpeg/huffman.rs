//! Huffman tables and the entropy-coded bit stream of a JPEG scan: a stuffed `FF 00` is a data byte
//! `FF`. A scan whose blocks need bits past the marker that ends its data is corrupt (libjpeg would
//! warn and read zeros: with a huge declared size and no data, minutes of decoding nothing), and so
//! is the end of the buffer.

use super::corrupt;
use crate::ops::image_decoder::Failure;

/// A Huffman table as JPEG's annex C builds it: for each code length, the largest code and where
/// its symbols start.
#[derive(Debug, Clone)]
pub(crate) struct Table {
    /// `maxcode[l]`: the largest code of `l` bits, -1 when none (index 1..=16).
    maxcode: [i32; 17],
    /// `valptr[l] - mincode[l]`: the symbol index of a code of `l` bits is the code plus this.
    offset: [i32; 17],
    /// The symbols in code order.
    values: Vec<u8>,
}

impl Table {
    /// From the 16 counts of codes of each length and the symbols; `dc` tables may hold sizes up to
    /// 15 only (libjpeg refuses the table otherwise).
    pub(crate) fn new(counts: &[u8; 16], values: Vec<u8>, dc: bool) -> Result<Table, Failure> {
        let total: usize = counts.iter().map(|&c| c as usize).sum();
        if total != values.len() || total > 256 {
            return Err(corrupt("a Huffman table's counts and symbols disagree"));
        }
        if dc && values.iter().any(|&v| v > 15) {
            return Err(corrupt("a DC Huffman table has a size over 15"));
        }
        let (mut maxcode, mut offset) = ([-1i32; 17], [0i32; 17]);
        let (mut code, mut k) = (0i32, 0i32);
        for l in 1..=16 {
            let n = counts[l - 1] as i32;
            if n > 0 {
                offset[l] = k - code;
                code += n;
                k += n;
                maxcode[l] = code - 1;
            }
            // Codes of a length must fit in it (libjpeg: "bad Huffman table").
            if code > (1 << l) {
                return Err(corrupt("a Huffman table has more codes than its lengths allow"));
            }
            code <<= 1;
        }
        Ok(Table { maxcode, offset, values })
    }
}

/// The bits of a scan's entropy-coded data.
pub(crate) struct Bits<'a> {
    data: &'a [u8],
    /// The next byte to read.
    pub at: usize,
    acc: u32,
    count: u32,
}

impl<'a> Bits<'a> {
    /// Reading `data` from `at`.
    pub(crate) fn new(data: &'a [u8], at: usize) -> Bits<'a> {
        Bits { data, at, acc: 0, count: 0 }
    }

    fn byte(&mut self) -> Result<u32, Failure> {
        let b = *self.data.get(self.at).ok_or_else(|| corrupt("the image is truncated"))?;
        if b != 0xFF {
            self.at += 1;
            return Ok(b as u32);
        }
        // Fill bytes FF FF ... before a marker.
        let mut next = self.at + 1;
        while self.data.get(next) == Some(&0xFF) {
            next += 1;
        }
        match self.data.get(next) {
            Some(0) => {
                self.at = next + 1;
                Ok(0xFF)
            }
            Some(_) => Err(corrupt("a scan's data ends before its last block")),
            None => Err(corrupt("the image is truncated")),
        }
    }

    /// The next bit.
    fn bit(&mut self) -> Result<u32, Failure> {
        if self.count == 0 {
            self.acc = self.byte()?;
            self.count = 8;
        }
        self.count -= 1;
        Ok((self.acc >> self.count) & 1)
    }

    /// The next `n` bits (at most 16), most significant first.
    pub(crate) fn bits(&mut self, n: u32) -> Result<i32, Failure> {
        let mut v = 0i32;
        for _ in 0..n {
            v = (v << 1) | self.bit()? as i32;
        }
        Ok(v)
    }

    /// The next symbol of `table`; a code longer than 16 bits is libjpeg's "bad Huffman code":
    /// 17 bits read (libjpeg reads up to its sentinel length, 17), symbol 0.
    pub(crate) fn decode(&mut self, table: &Table) -> Result<u8, Failure> {
        let mut code = 0i32;
        for l in 1..=16 {
            code = (code << 1) | self.bit()? as i32;
            if code <= table.maxcode[l] {
                return Ok(table.values.get((code + table.offset[l]) as usize).copied().unwrap_or(0));
            }
        }
        self.bit()?;
        Ok(0)
    }

    /// A restart: the partial byte dropped, the `RSTn` marker (any, as libjpeg resynchronises) read.
    pub(crate) fn restart(&mut self) -> Result<(), Failure> {
        self.count = 0;
        while self.data.get(self.at) == Some(&0xFF) {
            self.at += 1;
        }
        match self.data.get(self.at) {
            Some(0xD0..=0xD7) => {
                self.at += 1;
                Ok(())
            }
            Some(_) => Ok(()),
            None => Err(corrupt("the image is truncated")),
        }
    }

    /// Past the scan's data: the position of the marker that ends it.
    pub(crate) fn end(&mut self) -> Result<usize, Failure> {
        loop {
            match (self.data.get(self.at), self.data.get(self.at + 1)) {
                (Some(0xFF), Some(0)) => self.at += 2,
                (Some(0xFF), Some(0xD0..=0xD7)) => self.at += 2,
                (Some(0xFF), Some(0xFF)) => self.at += 1,
                (Some(0xFF), Some(_)) => return Ok(self.at),
                (Some(_), _) => self.at += 1,
                (None, _) => return Err(corrupt("the image is truncated")),
            }
        }
    }
}

/// `HUFF_EXTEND`: the signed value of `s` bits `v`.
pub(crate) fn extend(v: i32, s: u32) -> i32 {
    if s == 0 {
        0
    } else if v < (1 << (s - 1)) {
        v - (1 << s) + 1
    } else {
        v
    }
}
