//! Atomic writes: a file is written to a temporary file in its target's folder (`.name.tmp-PID-N`),
//! flushed and synced to disk, then renamed over the target. Until the rename the target is untouched,
//! so a full disk, a file size limit or a kill mid-write never leaves it truncated or half-written, and
//! a concurrent reader sees the old file or the new one, never a mix. On any error the temporary file
//! is removed. Writing over the input being read (`-o` equal to the model) is safe for the same reason.
//!
//! Only a regular file or a new name is written: a target that is a directory, a FIFO, a device
//! (`/dev/null`) or a socket is refused by name, before anything is created and again just before the
//! rename. A symbolic link at the target is replaced as a name (the rename replaces the link itself):
//! the file it points to, inside the folder or outside it, is never written.

use anyhow::Context;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// Distinguishes the temporary files of one process.
static COUNTER: AtomicU64 = AtomicU64::new(0);

/// A file being written to a temporary file next to its target.
pub(crate) struct AtomicFile {
    writer: Option<BufWriter<File>>,
    temp: Option<PathBuf>,
    target: PathBuf,
}

/// A complete, synced temporary file, waiting to be renamed over its target.
pub(crate) struct Staged {
    temp: Option<PathBuf>,
    target: PathBuf,
}

/// Checks that `target` may be replaced: it does not exist, or it is a regular file, or a symbolic
/// link (replaced as a name: the file it points to is never written). Anything else (a directory, a
/// FIFO, a device such as `/dev/null`, a socket) is refused by name: renaming over it would replace
/// the device or pipe itself with a regular file. Returns the target's permissions when it is a
/// regular file, for the new file to keep.
fn replaceable(target: &Path) -> anyhow::Result<Option<std::fs::Permissions>> {
    match std::fs::symlink_metadata(target) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e).with_context(|| format!("cannot write {}", target.display())),
        Ok(m) if m.file_type().is_file() => Ok(Some(m.permissions())),
        Ok(m) if m.file_type().is_symlink() => Ok(None),
        Ok(m) => {
            let what = super::regular::not_regular(m.file_type()).unwrap_or("something other than a file");
            anyhow::bail!("cannot write {}: it is {what}, not a regular file", target.display())
        }
    }
}

/// Checks, before any work, that `target` may be written (see [`AtomicFile::create`], which checks
/// again): a new name, a regular file or a symbolic link, in an existing folder or not.
pub(crate) fn check_target(target: &Path) -> anyhow::Result<()> {
    replaceable(target).map(|_| ())
}

impl AtomicFile {
    /// Starts writing `target`: creates the temporary file (with the target's permissions when it
    /// is a regular file). Fails, naming `target`, if its folder does not exist or it exists and is
    /// neither a regular file nor a symbolic link (see the module docs).
    pub(crate) fn create(target: &Path) -> anyhow::Result<AtomicFile> {
        let target = target.to_path_buf();
        let fail = || format!("cannot write {}", target.display());
        let permissions = replaceable(&target)?;
        let name =
            target.file_name().with_context(|| format!("cannot write {}: it names no file", target.display()))?;
        let dir = match target.parent() {
            Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
            _ => PathBuf::from("."),
        };
        let mut attempts = 0;
        let (file, temp) = loop {
            let n = COUNTER.fetch_add(1, Ordering::Relaxed);
            let temp = dir.join(format!(".{}.tmp-{}-{n}", name.to_string_lossy(), std::process::id()));
            match std::fs::OpenOptions::new().write(true).create_new(true).open(&temp) {
                Ok(file) => break (file, temp),
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists && attempts < 100 => attempts += 1,
                Err(e) => return Err(e).with_context(fail),
            }
        };
        let message = fail();
        let this = AtomicFile { writer: Some(BufWriter::new(file)), temp: Some(temp), target };
        if let (Some(permissions), Some(w)) = (permissions, &this.writer) {
            w.get_ref().set_permissions(permissions).context(message)?;
        }
        Ok(this)
    }

    /// Flushes and syncs the temporary file; the target is still untouched.
    pub(crate) fn finish(mut self) -> anyhow::Result<Staged> {
        let target = self.target.clone();
        let fail = || format!("cannot write {}", target.display());
        let writer = self.writer.take().with_context(fail)?;
        let file = writer.into_inner().map_err(|e| e.into_error()).with_context(fail)?;
        file.sync_all().with_context(fail)?;
        drop(file);
        Ok(Staged { temp: self.temp.take(), target })
    }
}

impl Write for AtomicFile {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        match &mut self.writer {
            Some(w) => w.write(buf),
            None => Err(std::io::Error::other("the file is already finished")),
        }
    }

    fn write_all(&mut self, buf: &[u8]) -> std::io::Result<()> {
        match &mut self.writer {
            Some(w) => w.write_all(buf),
            None => Err(std::io::Error::other("the file is already finished")),
        }
    }

    fn flush(&mut self) -> std::io::Result<()> {
        match &mut self.writer {
            Some(w) => w.flush(),
            None => Ok(()),
        }
    }
}

impl Drop for AtomicFile {
    fn drop(&mut self) {
        drop(self.writer.take());
        if let Some(temp) = self.temp.take() {
            let _ = std::fs::remove_file(temp);
        }
    }
}

impl Staged {
    /// Renames the temporary file over the target, then syncs the folder so the rename is durable.
    pub(crate) fn commit(mut self) -> anyhow::Result<()> {
        let temp = self.temp.take().with_context(|| format!("cannot write {}", self.target.display()))?;
        // Checked again just before the rename: the target may have become a FIFO or a device since.
        let checked = replaceable(&self.target).map(|_| ());
        if let Err(e) = checked.and_then(|()| {
            std::fs::rename(&temp, &self.target).with_context(|| format!("cannot write {}", self.target.display()))
        }) {
            let _ = std::fs::remove_file(&temp);
            return Err(e);
        }
        // Best effort: some file systems refuse to sync a directory; the data itself is synced.
        if let Some(dir) = self.target.parent().filter(|p| !p.as_os_str().is_empty()) {
            if let Ok(d) = File::open(dir) {
                let _ = d.sync_all();
            }
        }
        Ok(())
    }
}

impl Drop for Staged {
    fn drop(&mut self) {
        if let Some(temp) = self.temp.take() {
            let _ = std::fs::remove_file(temp);
        }
    }
}

/// Writes `target` atomically with what `write` puts into it.
pub(crate) fn write_atomic(
    target: &Path,
    write: impl FnOnce(&mut AtomicFile) -> anyhow::Result<()>,
) -> anyhow::Result<()> {
    let mut file = AtomicFile::create(target)?;
    write(&mut file).with_context(|| format!("cannot write {}", target.display()))?;
    file.finish()?.commit()
}

/// Renames staged files over their targets, in order. Each is complete and synced before any is
/// renamed, so an error before this point leaves every target untouched.
pub(crate) fn commit_all(staged: Vec<Staged>) -> anyhow::Result<()> {
    for s in staged {
        s.commit()?;
    }
    Ok(())
}
