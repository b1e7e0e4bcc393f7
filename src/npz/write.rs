//! Writing `.npz` archives as `np.savez` does: one stored (uncompressed) `NAME.npy` entry per array,
//! each `.npy` written straight from the tensor's buffer. The CRC-32 and size of an entry go in its
//! local header, before its data, so each array is passed over twice: once to checksum it, once to
//! write it. Sizes and offsets past 4 GiB, and more than 65535 entries, get zip64 records.

use super::format::*;
use anyhow::{bail, Context};
use std::io::Write;
use std::path::Path;
use tract_onnx::prelude::*;

/// Where the zip64 forms start: a size or offset at or past this is written in a zip64 extra field.
const SIZE_LIMIT: u64 = 0xFFFF_FFFF;
/// An entry count at or past this is written in the zip64 end record.
const COUNT_LIMIT: u64 = 0xFFFF;
/// MS-DOS date of 1980-01-01 (the earliest a zip can hold): the archive's bytes do not depend on when
/// it is written.
const DOS_DATE: u16 = (1 << 5) | 1;
/// Made by: Unix (host 3), APPNOTE 4.5 (zip64).
const MADE_BY: u16 = (3 << 8) | 45;
/// A regular file, rw-r--r--, in the Unix mode bits of the external attributes.
const EXTERNAL_ATTRS: u32 = 0o100644 << 16;

/// Counts and checksums what is written, writing it on when it has somewhere to go.
struct Tee<W> {
    inner: W,
    crc: flate2::Crc,
    len: u64,
}

impl<W: Write> Write for Tee<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.crc.update(&buf[..n]);
        self.len += n as u64;
        Ok(n)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.inner.flush()
    }
}

/// What the central directory says of one written entry.
struct Written {
    name: Vec<u8>,
    crc: u32,
    len: u64,
    offset: u64,
}

impl Written {
    fn flags(&self) -> u16 {
        if self.name.is_ascii() {
            0
        } else {
            FLAG_UTF8
        }
    }
}

/// A field's 32-bit value, or the zip64 marker when it needs the extra field.
fn field32(value: u64, limit: u64) -> u32 {
    if value >= limit {
        u32::MAX
    } else {
        value as u32
    }
}

/// Writes the archive as [`write_npz_to`] does, with the zip64 thresholds given: a size or offset at or
/// past `size_limit`, or an entry count at or past `count_limit`, takes the zip64 form (the defaults
/// are 2^32-1 and 2^16-1; the tests lower them to check the zip64 forms on small archives).
pub(crate) fn write_npz_with_limits(
    w: &mut impl Write,
    arrays: &[(String, Tensor)],
    size_limit: u64,
    count_limit: u64,
) -> anyhow::Result<()> {
    let mut names = std::collections::HashSet::new();
    for (name, tensor) in arrays {
        crate::npy::check_writable(tensor).with_context(|| format!("output '{name}'"))?;
        if !names.insert(name.as_str()) {
            bail!("two arrays named '{name}' cannot go in one .npz");
        }
        if name.len() + 4 > usize::from(u16::MAX) {
            bail!("the name of output '{}...' is too long for a zip entry", &name[..name.floor_char_boundary(40)]);
        }
    }
    let mut offset = 0u64;
    let mut written = Vec::with_capacity(arrays.len());
    for (name, tensor) in arrays {
        let mut sink = Tee { inner: std::io::sink(), crc: flate2::Crc::new(), len: 0 };
        crate::npy::write_npy_to(&mut sink, tensor)?;
        let entry = Written { name: format!("{name}.npy").into_bytes(), crc: sink.crc.sum(), len: sink.len, offset };
        let zip64 = entry.len >= size_limit;
        let mut local = Vec::with_capacity(LOCAL_LEN + entry.name.len() + 20);
        local.extend(LOCAL_SIG.to_le_bytes());
        local.extend((if zip64 { 45u16 } else { 20 }).to_le_bytes());
        local.extend(entry.flags().to_le_bytes());
        local.extend(STORED.to_le_bytes());
        local.extend(0u16.to_le_bytes());
        local.extend(DOS_DATE.to_le_bytes());
        local.extend(entry.crc.to_le_bytes());
        local.extend(field32(entry.len, size_limit).to_le_bytes());
        local.extend(field32(entry.len, size_limit).to_le_bytes());
        local.extend((entry.name.len() as u16).to_le_bytes());
        local.extend((if zip64 { 20u16 } else { 0 }).to_le_bytes());
        local.extend(&entry.name);
        if zip64 {
            local.extend(ZIP64_EXTRA_ID.to_le_bytes());
            local.extend(16u16.to_le_bytes());
            local.extend(entry.len.to_le_bytes());
            local.extend(entry.len.to_le_bytes());
        }
        w.write_all(&local)?;
        let mut tee = Tee { inner: &mut *w, crc: flate2::Crc::new(), len: 0 };
        crate::npy::write_npy_to(&mut tee, tensor)?;
        if (tee.crc.sum(), tee.len) != (entry.crc, entry.len) {
            bail!("output '{name}' changed while it was written");
        }
        offset = offset
            .checked_add(local.len() as u64)
            .and_then(|o| o.checked_add(entry.len))
            .context("the archive is too large")?;
        written.push(entry);
    }
    let cd_offset = offset;
    let mut cd = Vec::new();
    for e in &written {
        let mut extra = Vec::new();
        for value in [e.len, e.len, e.offset] {
            if value >= size_limit {
                extra.extend(value.to_le_bytes());
            }
        }
        let zip64 = !extra.is_empty();
        cd.extend(CENTRAL_SIG.to_le_bytes());
        cd.extend(MADE_BY.to_le_bytes());
        cd.extend((if zip64 { 45u16 } else { 20 }).to_le_bytes());
        cd.extend(e.flags().to_le_bytes());
        cd.extend(STORED.to_le_bytes());
        cd.extend(0u16.to_le_bytes());
        cd.extend(DOS_DATE.to_le_bytes());
        cd.extend(e.crc.to_le_bytes());
        cd.extend(field32(e.len, size_limit).to_le_bytes());
        cd.extend(field32(e.len, size_limit).to_le_bytes());
        cd.extend((e.name.len() as u16).to_le_bytes());
        cd.extend((if zip64 { extra.len() as u16 + 4 } else { 0 }).to_le_bytes());
        cd.extend(0u16.to_le_bytes()); // comment
        cd.extend(0u16.to_le_bytes()); // disk
        cd.extend(0u16.to_le_bytes()); // internal attributes
        cd.extend(EXTERNAL_ATTRS.to_le_bytes());
        cd.extend(field32(e.offset, size_limit).to_le_bytes());
        cd.extend(&e.name);
        if zip64 {
            cd.extend(ZIP64_EXTRA_ID.to_le_bytes());
            cd.extend((extra.len() as u16).to_le_bytes());
            cd.extend(extra);
        }
    }
    w.write_all(&cd)?;
    let count = written.len() as u64;
    let cd_size = cd.len() as u64;
    let mut end = Vec::new();
    if count >= count_limit || cd_size >= size_limit || cd_offset >= size_limit {
        let record = cd_offset.checked_add(cd_size).context("the archive is too large")?;
        end.extend(ZIP64_EOCD_SIG.to_le_bytes());
        end.extend((ZIP64_EOCD_LEN as u64 - 12).to_le_bytes());
        end.extend(MADE_BY.to_le_bytes());
        end.extend(45u16.to_le_bytes());
        end.extend(0u32.to_le_bytes());
        end.extend(0u32.to_le_bytes());
        end.extend(count.to_le_bytes());
        end.extend(count.to_le_bytes());
        end.extend(cd_size.to_le_bytes());
        end.extend(cd_offset.to_le_bytes());
        end.extend(ZIP64_LOCATOR_SIG.to_le_bytes());
        end.extend(0u32.to_le_bytes());
        end.extend(record.to_le_bytes());
        end.extend(1u32.to_le_bytes());
    }
    let count16 = if count >= count_limit { u16::MAX } else { count as u16 };
    end.extend(EOCD_SIG.to_le_bytes());
    end.extend(0u16.to_le_bytes());
    end.extend(0u16.to_le_bytes());
    end.extend(count16.to_le_bytes());
    end.extend(count16.to_le_bytes());
    end.extend(field32(cd_size, size_limit).to_le_bytes());
    end.extend(field32(cd_offset, size_limit).to_le_bytes());
    end.extend(0u16.to_le_bytes());
    w.write_all(&end)?;
    Ok(())
}

/// Writes arrays as an `.npz` to `w`, as `np.savez(f, **arrays)` would (stored entries, `NAME.npy`).
/// Names must be distinct; every tensor must be writable as `.npy` (checked before anything is written).
pub fn write_npz_to(w: &mut impl Write, arrays: &[(String, Tensor)]) -> anyhow::Result<()> {
    write_npz_with_limits(w, arrays, SIZE_LIMIT, COUNT_LIMIT)
}

/// Writes arrays as an `.npz` file, atomically: to a temporary file in the target's folder, renamed once complete.
pub fn write_npz(path: &Path, arrays: &[(String, Tensor)]) -> anyhow::Result<()> {
    crate::io::atomic::write_atomic(path, |f| write_npz_to(f, arrays))
}
