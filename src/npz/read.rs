//! Reading `.npz` archives: the end record (zip64 too), the central directory, then each entry's local
//! header and data, every offset and size checked against the file and the entries' data checked not to
//! overlap (so the arrays together cannot claim more memory than 1032 times the file's size). Each
//! array is decoded by the `.npy` reader straight into its tensor, through a reader that checks the
//! entry's CRC-32 and size.

use super::format::*;
use anyhow::{bail, Context};
use std::io::{Read, Seek, SeekFrom};
use std::path::Path;
use tract_onnx::prelude::*;

/// An entry as the central directory describes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Entry {
    /// The file name in the archive (`x.npy`).
    pub name: String,
    /// [`STORED`] or [`DEFLATED`].
    pub method: u16,
    /// CRC-32 of the uncompressed data.
    pub crc: u32,
    /// Bytes in the archive.
    pub compressed: u64,
    /// Bytes once uncompressed.
    pub uncompressed: u64,
    /// Where its local header starts.
    pub local_offset: u64,
}

/// Reads `len` bytes at `at`.
fn read_at(f: &mut (impl Read + Seek), at: u64, len: usize) -> std::io::Result<Vec<u8>> {
    f.seek(SeekFrom::Start(at))?;
    let mut buf = vec![0u8; len];
    f.read_exact(&mut buf)?;
    Ok(buf)
}

/// Where the central directory is and how many entries it has.
struct Directory {
    offset: u64,
    size: u64,
    entries: u64,
    /// Where the record after it (zip64 end record, or end record) starts.
    end: u64,
}

/// Finds and reads the end of central directory record (and its zip64 form when there is one).
fn find_directory(f: &mut (impl Read + Seek), size: u64) -> anyhow::Result<Directory> {
    let tail_len = size.min((EOCD_LEN + usize::from(u16::MAX)) as u64);
    if tail_len < EOCD_LEN as u64 {
        return Err(ZipError::NoEndRecord.into());
    }
    let tail_start = size - tail_len;
    let tail = read_at(f, tail_start, tail_len as usize).context("cannot read the zip end record")?;
    // The last signature whose comment ends within the file.
    let at = (0..=tail.len() - EOCD_LEN)
        .rev()
        .find(|&i| u32_at(&tail, i) == EOCD_SIG && i + EOCD_LEN + usize::from(u16_at(&tail, i + 20)) <= tail.len())
        .ok_or(ZipError::NoEndRecord)?;
    let eocd = &tail[at..at + EOCD_LEN];
    let eocd_pos = tail_start + at as u64;
    let (disk, cd_disk) = (u16_at(eocd, 4), u16_at(eocd, 6));
    let (on_disk, total) = (u16_at(eocd, 8), u16_at(eocd, 10));
    let (cd_size, cd_offset) = (u32_at(eocd, 12), u32_at(eocd, 16));
    let saturated = total == u16::MAX || cd_size == u32::MAX || cd_offset == u32::MAX;
    let locator = match eocd_pos.checked_sub(ZIP64_LOCATOR_LEN as u64) {
        Some(pos) => {
            let bytes = read_at(f, pos, ZIP64_LOCATOR_LEN).context("cannot read the zip64 locator")?;
            (u32_at(&bytes, 0) == ZIP64_LOCATOR_SIG).then_some((pos, bytes))
        }
        None => None,
    };
    let Some((locator_pos, locator)) = locator else {
        if saturated {
            return Err(ZipError::Zip64("the end record says zip64 but no zip64 locator precedes it").into());
        }
        if disk != 0 || cd_disk != 0 || on_disk != total {
            return Err(ZipError::MultiDisk.into());
        }
        return Ok(Directory { offset: cd_offset.into(), size: cd_size.into(), entries: total.into(), end: eocd_pos });
    };
    if u32_at(&locator, 4) != 0 || u32_at(&locator, 16) > 1 {
        return Err(ZipError::MultiDisk.into());
    }
    let record_pos = u64_at(&locator, 8);
    if record_pos.checked_add(ZIP64_EOCD_LEN as u64).is_none_or(|end| end > locator_pos) {
        return Err(ZipError::Zip64("its record lies outside the file").into());
    }
    let record = read_at(f, record_pos, ZIP64_EOCD_LEN).context("cannot read the zip64 end record")?;
    if u32_at(&record, 0) != ZIP64_EOCD_SIG {
        return Err(ZipError::Zip64("no record where its locator points").into());
    }
    if u32_at(&record, 16) != 0 || u32_at(&record, 20) != 0 || u64_at(&record, 24) != u64_at(&record, 32) {
        return Err(ZipError::MultiDisk.into());
    }
    Ok(Directory {
        offset: u64_at(&record, 48),
        size: u64_at(&record, 40),
        entries: u64_at(&record, 32),
        end: record_pos,
    })
}

/// The zip64 extra field's values for the fields saturated in the header, in the order APPNOTE gives.
fn zip64_extra(extra: &[u8], fields: &mut [(&mut u64, bool)]) -> Result<(), String> {
    let mut at = 0usize;
    while at + 4 <= extra.len() {
        let (id, len) = (u16_at(extra, at), usize::from(u16_at(extra, at + 2)));
        let body = extra.get(at + 4..at + 4 + len).ok_or("an extra field runs past its header")?;
        if id == ZIP64_EXTRA_ID {
            let mut pos = 0;
            for (value, saturated) in fields.iter_mut() {
                if *saturated {
                    let bytes = body.get(pos..pos + 8).ok_or("the zip64 extra field is too short")?;
                    **value = u64_at(bytes, 0);
                    pos += 8;
                }
            }
            return Ok(());
        }
        at += 4 + len;
    }
    if fields.iter().any(|(_, saturated)| *saturated) {
        return Err("sizes saturated for zip64 but no zip64 extra field".into());
    }
    Ok(())
}

/// Parses the central directory into entries, each checked on its own.
fn parse_directory(cd: &[u8], count: u64) -> Result<Vec<Entry>, ZipError> {
    let bad = |index: u64, why: String| ZipError::BadCentral { index, why };
    let mut entries = Vec::new();
    let mut at = 0usize;
    for index in 0..count {
        let head = cd.get(at..at + CENTRAL_LEN).ok_or_else(|| bad(index, "runs past the directory".into()))?;
        if u32_at(head, 0) != CENTRAL_SIG {
            return Err(bad(index, "no central directory signature".into()));
        }
        let (flags, method) = (u16_at(head, 8), u16_at(head, 10));
        let name_len = usize::from(u16_at(head, 28));
        let extra_len = usize::from(u16_at(head, 30));
        let comment_len = usize::from(u16_at(head, 32));
        let name_end = at + CENTRAL_LEN + name_len;
        let extra_end = name_end + extra_len;
        let next = extra_end + comment_len;
        if next > cd.len() {
            return Err(bad(index, "its name, extra field or comment runs past the directory".into()));
        }
        let name = std::str::from_utf8(&cd[at + CENTRAL_LEN..name_end])
            .map_err(|_| bad(index, "its name is not UTF-8".into()))?
            .to_string();
        let entry_error = |why: String| ZipError::BadEntry { name: name.clone(), why };
        if flags & FLAG_ENCRYPTED != 0 {
            return Err(entry_error("it is encrypted".into()));
        }
        if method != STORED && method != DEFLATED {
            return Err(entry_error(format!(
                "compression method {method} is not supported (numpy writes stored and deflate entries)"
            )));
        }
        let (mut uncompressed, mut compressed) = (u64::from(u32_at(head, 24)), u64::from(u32_at(head, 20)));
        let mut local_offset = u64::from(u32_at(head, 42));
        let (su, sc, so) = (uncompressed == 0xFFFF_FFFF, compressed == 0xFFFF_FFFF, local_offset == 0xFFFF_FFFF);
        zip64_extra(
            &cd[name_end..extra_end],
            &mut [(&mut uncompressed, su), (&mut compressed, sc), (&mut local_offset, so)],
        )
        .map_err(entry_error)?;
        if method == STORED && compressed != uncompressed {
            return Err(entry_error(format!(
                "stored, yet {compressed} bytes in the archive and {uncompressed} once read"
            )));
        }
        if method == DEFLATED && uncompressed / MAX_DEFLATE_RATIO > compressed {
            return Err(entry_error(format!(
                "{uncompressed} bytes claimed from {compressed} deflated bytes, more than deflate can expand"
            )));
        }
        entries.push(Entry { name, method, crc: u32_at(head, 16), compressed, uncompressed, local_offset });
        at = next;
    }
    Ok(entries)
}

/// The archive's entries, each with the offset of its data, checked to lie within the file, before the
/// central directory, and not to overlap.
fn entries(f: &mut (impl Read + Seek), size: u64) -> anyhow::Result<Vec<(Entry, u64)>> {
    let dir = find_directory(f, size)?;
    let out_of_file =
        || ZipError::CentralOutOfFile { offset: dir.offset, size: dir.size, entries: dir.entries, file: size };
    if dir.offset.checked_add(dir.size).is_none_or(|end| end > dir.end)
        || dir.entries.checked_mul(CENTRAL_LEN as u64).is_none_or(|min| min > dir.size)
    {
        return Err(out_of_file().into());
    }
    let cd_len = usize::try_from(dir.size).map_err(|_| out_of_file())?;
    let cd = read_at(f, dir.offset, cd_len).context("cannot read the zip central directory")?;
    let mut located = Vec::new();
    for entry in parse_directory(&cd, dir.entries)? {
        let bad = |why: &str| ZipError::BadEntry { name: entry.name.clone(), why: why.to_string() };
        if entry.local_offset.checked_add(LOCAL_LEN as u64).is_none_or(|end| end > dir.offset) {
            return Err(bad("its local header lies outside the file's entries").into());
        }
        let local = read_at(f, entry.local_offset, LOCAL_LEN).context("cannot read a zip local header")?;
        if u32_at(&local, 0) != LOCAL_SIG {
            return Err(bad("no local header where the directory points").into());
        }
        let (name_len, extra_len) = (u64::from(u16_at(&local, 26)), u64::from(u16_at(&local, 28)));
        let data = entry.local_offset + LOCAL_LEN as u64 + name_len + extra_len;
        if data.checked_add(entry.compressed).is_none_or(|end| end > dir.offset) {
            return Err(bad("its data runs past the start of the central directory").into());
        }
        let local_name = read_at(f, entry.local_offset + LOCAL_LEN as u64, name_len as usize)
            .context("cannot read a zip local header")?;
        if local_name != entry.name.as_bytes() {
            return Err(bad("the names in its local header and in the directory differ").into());
        }
        located.push((entry, data));
    }
    // Overlapping entries would let a small file claim the same expansion many times over.
    let mut spans: Vec<(u64, u64, &str)> =
        located.iter().map(|(e, data)| (e.local_offset, data + e.compressed, e.name.as_str())).collect();
    spans.sort_unstable();
    for pair in spans.windows(2) {
        if pair[1].0 < pair[0].1 {
            bail!(ZipError::BadEntry {
                name: pair[1].2.to_string(),
                why: format!("its data overlaps entry '{}'", pair[0].2)
            });
        }
    }
    Ok(located)
}

/// The array name of an entry: its file name without `.npy`; other entries are refused.
fn array_name(entry: &str) -> anyhow::Result<&str> {
    entry
        .strip_suffix(".npy")
        .with_context(|| format!("entry '{entry}' is not a .npy array (an .npz holds one NAME.npy per array)"))
}

/// The entries of `path` checked as an `.npz`, and the open file.
fn open(path: &Path) -> anyhow::Result<(std::fs::File, Vec<(Entry, u64)>)> {
    let (mut file, size) = crate::io::regular::open_regular(path)?;
    let entries = entries(&mut file, size).with_context(|| format!("{}", path.display()))?;
    let mut seen = std::collections::HashSet::new();
    for (entry, _) in &entries {
        let name = array_name(&entry.name).with_context(|| format!("{}", path.display()))?;
        if !seen.insert(name) {
            bail!("{}: the array '{name}' is in it twice", path.display());
        }
    }
    Ok((file, entries))
}

/// The names of the arrays in an `.npz`, in archive order, read from its directory (no array is read).
pub fn list_npz(path: &Path) -> anyhow::Result<Vec<String>> {
    let (_, entries) = open(path)?;
    entries.iter().map(|(e, _)| array_name(&e.name).map(str::to_string)).collect()
}

/// Counts and checksums what passes through.
struct Checked<R> {
    inner: R,
    crc: flate2::Crc,
    len: u64,
}

impl<R: Read> Read for Checked<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.crc.update(&buf[..n]);
        self.len += n as u64;
        Ok(n)
    }
}

/// Decodes one entry's `.npy` through a [`Checked`] reader, then checks its CRC-32 and size.
fn read_entry<R: Read>(raw: R, entry: &Entry) -> anyhow::Result<Tensor> {
    let tensor;
    let (crc, len) = if entry.method == DEFLATED {
        let mut r = Checked { inner: flate2::read::DeflateDecoder::new(raw), crc: flate2::Crc::new(), len: 0 };
        tensor = crate::npy::read_npy_from(&mut r, entry.uncompressed)?;
        (r.crc.sum(), r.len)
    } else {
        let mut r = Checked { inner: raw, crc: flate2::Crc::new(), len: 0 };
        tensor = crate::npy::read_npy_from(&mut r, entry.uncompressed)?;
        (r.crc.sum(), r.len)
    };
    if len != entry.uncompressed {
        bail!("{len} bytes once read, where the directory says {}", entry.uncompressed);
    }
    if crc != entry.crc {
        bail!("CRC-32 {crc:08x} differs from the directory's {:08x}: the data is corrupt", entry.crc);
    }
    Ok(tensor)
}

/// Reads every array of an `.npz` (`np.savez` or `np.savez_compressed`), in archive order, named as
/// `np.load` names them.
pub fn read_npz(path: &Path) -> anyhow::Result<Vec<(String, Tensor)>> {
    let (mut file, entries) = open(path)?;
    let mut arrays = Vec::with_capacity(entries.len());
    for (entry, data) in &entries {
        let name = array_name(&entry.name)?;
        let what = || format!("{}: array '{name}'", path.display());
        file.seek(SeekFrom::Start(*data)).with_context(what)?;
        let raw = std::io::BufReader::new((&mut file).take(entry.compressed));
        arrays.push((name.to_string(), read_entry(raw, entry).with_context(what)?));
    }
    Ok(arrays)
}
