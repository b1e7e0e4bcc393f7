//! Reading only regular files. A FIFO would block the reader forever, `/dev/zero` never ends, a
//! directory reads as an error nobody understands: such paths are refused, by name, before anything is
//! read. Opening never blocks (`O_NONBLOCK`, which regular files ignore) and the check is made on the
//! opened file itself (`fstat`), so the path cannot be swapped for a FIFO between the check and the
//! read.

use anyhow::{bail, Context};
use std::fs::File;
use std::io::Read;
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::Path;

/// Opens `path` for reading if it is a regular file (symlinks followed); returns it with its size.
pub(crate) fn open_regular(path: &Path) -> anyhow::Result<(File, u64)> {
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)
        .with_context(|| format!("cannot read {}", path.display()))?;
    let meta = file.metadata().with_context(|| format!("cannot read {}", path.display()))?;
    if let Some(what) = not_regular(meta.file_type()) {
        bail!("cannot read {}: it is {what}, not a regular file", path.display());
    }
    Ok((file, meta.len()))
}

/// What a file of type `kind` is, in words ("a named pipe (FIFO)"), if it is not a regular file.
pub(crate) fn not_regular(kind: std::fs::FileType) -> Option<&'static str> {
    if kind.is_file() {
        return None;
    }
    Some(if kind.is_dir() {
        "a directory"
    } else if kind.is_symlink() {
        "a symbolic link"
    } else if kind.is_fifo() {
        "a named pipe (FIFO)"
    } else if kind.is_char_device() {
        "a character device"
    } else if kind.is_block_device() {
        "a block device"
    } else if kind.is_socket() {
        "a socket"
    } else {
        "something other than a file"
    })
}

/// Reads the whole of a regular file of at most `limit` bytes (`what` names it in the error:
/// "ONNX models are at most 2 GiB").
pub(crate) fn read_regular(path: &Path, limit: u64, what: &str) -> anyhow::Result<Vec<u8>> {
    let (file, size) = open_regular(path)?;
    if size > limit {
        bail!("cannot read {}: it is {size} bytes long; {what}", path.display());
    }
    // A file may grow while it is read, and /proc files report size 0: the read itself is bounded too.
    let mut bytes = Vec::with_capacity(usize::try_from(size).unwrap_or(0));
    file.take(limit.saturating_add(1))
        .read_to_end(&mut bytes)
        .with_context(|| format!("cannot read {}", path.display()))?;
    if bytes.len() as u64 > limit {
        bail!("cannot read {}: it is more than {limit} bytes long; {what}", path.display());
    }
    Ok(bytes)
}
