//! Writing `.npy` files: the header, then the tensor's own bytes, with no copy in between (on a
//! big-endian machine, swapped a block at a time). Files are written atomically.

use super::numpy_name;
use anyhow::bail;
use std::io::Write;
use std::path::Path;
use tract_onnx::prelude::*;

/// The little-endian numpy type descriptor of a datum type `.npy` files hold.
pub(crate) fn descr_for(dt: DatumType) -> anyhow::Result<&'static str> {
    Ok(match dt {
        DatumType::Bool => "|b1",
        DatumType::I8 => "|i1",
        DatumType::U8 => "|u1",
        DatumType::I16 => "<i2",
        DatumType::U16 => "<u2",
        DatumType::I32 => "<i4",
        DatumType::U32 => "<u4",
        DatumType::I64 => "<i8",
        DatumType::U64 => "<u8",
        DatumType::F16 => "<f2",
        DatumType::F32 => "<f4",
        DatumType::F64 => "<f8",
        other => bail!("a tensor of {} cannot be written as .npy (only numbers and bool can)", numpy_name(other)),
    })
}

/// Checks that a tensor can be written as `.npy`, before anything is written.
pub(crate) fn check_writable(tensor: &Tensor) -> anyhow::Result<()> {
    descr_for(tensor.datum_type()).map(|_| ())
}

/// The header of a `.npy` file: magic, version, length, then the dict, padded with spaces so that the
/// data starts at a multiple of 64 bytes, as numpy writes it.
fn header(descr: &str, shape: &[usize]) -> Vec<u8> {
    let dims: Vec<String> = shape.iter().map(usize::to_string).collect();
    let shape = match dims.len() {
        1 => format!("({},)", dims[0]),
        _ => format!("({})", dims.join(", ")),
    };
    let dict = format!("{{'descr': '{descr}', 'fortran_order': False, 'shape': {shape}, }}");
    // Version 1.0 holds a header of up to 65535 bytes; 2.0 a longer one (a shape of 64 huge dims).
    let (version, prefix) = if 10 + dict.len() + 1 + 63 <= usize::from(u16::MAX) { (1u8, 10) } else { (2u8, 12) };
    let pad = (64 - (prefix + dict.len() + 1) % 64) % 64;
    let text_len = dict.len() + pad + 1;
    let mut out = Vec::with_capacity(prefix + text_len);
    out.extend_from_slice(super::header::MAGIC);
    out.extend_from_slice(&[version, 0]);
    if version == 1 {
        out.extend_from_slice(&(text_len as u16).to_le_bytes());
    } else {
        out.extend_from_slice(&(text_len as u32).to_le_bytes());
    }
    out.extend_from_slice(dict.as_bytes());
    out.resize(out.len() + pad, b' ');
    out.push(b'\n');
    out
}

/// Writes a tensor in numpy's format (exact dtype and shape) to `w`.
pub fn write_npy_to(w: &mut impl Write, tensor: &Tensor) -> anyhow::Result<()> {
    let dt = tensor.datum_type();
    let descr = descr_for(dt)?;
    w.write_all(&header(descr, tensor.shape()))?;
    let plain = tensor.try_as_plain_ram()?;
    let bytes = plain.as_bytes();
    let size_of = dt.size_of();
    if cfg!(target_endian = "big") && size_of > 1 {
        let mut block = vec![0u8; size_of * 8192];
        for chunk in bytes.chunks(block.len()) {
            let out = &mut block[..chunk.len()];
            out.copy_from_slice(chunk);
            out.chunks_exact_mut(size_of).for_each(|c| c.reverse());
            w.write_all(out)?;
        }
    } else {
        w.write_all(bytes)?;
    }
    Ok(())
}

/// Writes a tensor as a `.npy` file, atomically: to a temporary file in the target's folder, renamed once complete.
pub fn write_npy(path: &Path, tensor: &Tensor) -> anyhow::Result<()> {
    check_writable(tensor)?;
    crate::io::atomic::write_atomic(path, |f| write_npy_to(f, tensor))
}
