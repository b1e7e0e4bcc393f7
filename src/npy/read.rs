//! Reading `.npy` files: the header is parsed once (see [`super::header`]), the data length checked
//! against it before anything is allocated, and the data read straight into the tensor's own buffer,
//! so reading a file takes its size in memory once. Big-endian data is swapped in place; Fortran-order
//! data is read as the transposed shape, then transposed into row-major order (a second buffer only
//! then).

use super::header::{header_span, parse_header, NpyHeaderError};
use super::parse_descr;
use anyhow::{bail, Context};
use std::io::Read;
use std::path::Path;
use tract_onnx::prelude::*;

/// Reads a `.npy` file (a regular file: FIFOs, devices and directories are refused) as a tract tensor.
pub fn read_npy(path: &Path) -> anyhow::Result<Tensor> {
    let (file, size) = crate::io::regular::open_regular(path)?;
    read_npy_from(std::io::BufReader::new(file), size).with_context(|| format!("{}", path.display()))
}

/// Reads `.npy` bytes as a tract tensor.
pub fn read_npy_bytes(bytes: &[u8]) -> anyhow::Result<Tensor> {
    read_npy_from(bytes, bytes.len() as u64)
}

/// Reads exactly `buf.len()` bytes, or says the file is truncated.
fn fill(r: &mut impl Read, buf: &mut [u8], what: &str) -> anyhow::Result<()> {
    r.read_exact(buf).map_err(|e| match e.kind() {
        std::io::ErrorKind::UnexpectedEof => anyhow::anyhow!("truncated .npy file: it ends inside its {what}"),
        _ => anyhow::Error::new(e).context(format!("cannot read the .npy {what}")),
    })
}

/// Reads a `.npy` file of `size` bytes from `r`.
pub(crate) fn read_npy_from(mut r: impl Read, size: u64) -> anyhow::Result<Tensor> {
    // Magic and version, then the header length (2 bytes in version 1.0, 4 after).
    let mut prefix = [0u8; 12];
    if size < 8 {
        return Err(NpyHeaderError::BadMagic.into());
    }
    fill(&mut r, &mut prefix[..8], "header")?;
    let prefix_len = if prefix[6] == 1 { 10 } else { 12 };
    if &prefix[..6] == super::header::MAGIC && matches!(prefix[6], 1..=3) && prefix[7] == 0 {
        fill(&mut r, &mut prefix[8..prefix_len], "header")?;
    }
    let (start, len) = header_span(&prefix[..prefix_len])?;
    let end = start + len;
    if end as u64 > size {
        return Err(NpyHeaderError::Truncated { claimed: end as u64, available: size }.into());
    }
    let mut head = prefix[..start].to_vec();
    head.resize(end, 0);
    fill(&mut r, &mut head[start..], "header")?;
    let header = parse_header(&head)?;
    let (dt, big_endian) = parse_descr(&header.descr)?;
    let numel = header.shape.iter().try_fold(1usize, |acc, &d| acc.checked_mul(d));
    let nbytes = numel.and_then(|n| n.checked_mul(dt.size_of()));
    let data_len = size - end as u64;
    if nbytes.map(|n| n as u64) != Some(data_len) {
        bail!("holds {data_len} bytes of data but its header says shape {:?} of {}", header.shape, header.descr);
    }
    let mut shape = header.shape.clone();
    if header.fortran_order {
        shape.reverse();
    }
    let mut tensor = Tensor::zero_dt(dt, &shape)?;
    let bytes = tensor.as_bytes_mut();
    fill(&mut r, bytes, "data")?;
    let mut extra = [0u8; 1];
    if r.read(&mut extra).context("cannot read the .npy data")? > 0 {
        bail!("holds more data than its header says (shape {:?} of {})", header.shape, header.descr);
    }
    if dt == DatumType::Bool {
        // numpy writes 0 and 1; anything else is true, as numpy reads it.
        bytes.iter_mut().for_each(|b| *b = u8::from(*b != 0));
    }
    let size_of = dt.size_of();
    if size_of > 1 && big_endian != cfg!(target_endian = "big") {
        bytes.chunks_exact_mut(size_of).for_each(|c| c.reverse());
    }
    if header.fortran_order && shape.len() > 1 {
        let axes: Vec<usize> = (0..shape.len()).rev().collect();
        tensor = tensor.permute_axes(&axes)?;
    }
    Ok(tensor)
}
