//! Atomic writes and regular-file reads on a scratch folder.

use super::atomic::{write_atomic, AtomicFile};
use super::regular::{open_regular, read_regular};
use std::io::Write;
use std::os::unix::fs::{FileTypeExt, PermissionsExt};
use std::path::PathBuf;

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("sliceops-io-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn names(dir: &std::path::Path) -> Vec<String> {
    let mut v: Vec<String> =
        std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    v.sort();
    v
}

#[test]
fn a_write_replaces_the_target_only_when_complete() {
    let dir = scratch("complete");
    let target = dir.join("out.bin");
    std::fs::write(&target, b"old").unwrap();
    std::fs::set_permissions(&target, std::fs::Permissions::from_mode(0o640)).unwrap();
    let mut file = AtomicFile::create(&target).unwrap();
    file.write_all(b"new content").unwrap();
    assert_eq!(std::fs::read(&target).unwrap(), b"old");
    let staged = file.finish().unwrap();
    assert_eq!(std::fs::read(&target).unwrap(), b"old");
    assert_eq!(names(&dir).len(), 2);
    staged.commit().unwrap();
    assert_eq!(std::fs::read(&target).unwrap(), b"new content");
    assert_eq!(std::fs::metadata(&target).unwrap().permissions().mode() & 0o777, 0o640);
    assert_eq!(names(&dir), vec!["out.bin"]);
}

#[test]
fn an_error_or_a_drop_removes_the_temporary_file() {
    let dir = scratch("error");
    let target = dir.join("out.bin");
    std::fs::write(&target, b"old").unwrap();
    let err = write_atomic(&target, |f| {
        f.write_all(b"partial")?;
        anyhow::bail!("the producer failed")
    })
    .unwrap_err();
    assert_eq!(format!("{err:#}"), format!("cannot write {}: the producer failed", target.display()));
    assert_eq!(names(&dir), vec!["out.bin"]);
    drop(AtomicFile::create(&target).unwrap());
    let staged = AtomicFile::create(&target).unwrap().finish().unwrap();
    drop(staged);
    assert_eq!(names(&dir), vec!["out.bin"]);
    assert_eq!(std::fs::read(&target).unwrap(), b"old");
}

#[test]
fn a_symlink_target_is_replaced_as_a_name_and_its_file_untouched() {
    let dir = scratch("symlink");
    let outside = scratch("symlink-outside");
    let real = outside.join("real.bin");
    std::fs::write(&real, b"old").unwrap();
    let link = dir.join("link.bin");
    std::os::unix::fs::symlink(&real, &link).unwrap();
    write_atomic(&link, |f| Ok(f.write_all(b"new")?)).unwrap();
    assert!(std::fs::symlink_metadata(&link).unwrap().file_type().is_file());
    assert_eq!(std::fs::read(&link).unwrap(), b"new");
    assert_eq!(std::fs::read(&real).unwrap(), b"old");
    // A dangling link too: replaced, nothing created where it pointed.
    let dangling = dir.join("dangling.bin");
    std::os::unix::fs::symlink(outside.join("missing.bin"), &dangling).unwrap();
    write_atomic(&dangling, |f| Ok(f.write_all(b"new")?)).unwrap();
    assert_eq!(std::fs::read(&dangling).unwrap(), b"new");
    assert!(!outside.join("missing.bin").exists());
    assert_eq!(names(&dir), vec!["dangling.bin", "link.bin"]);
}

/// Makes a FIFO at `path`.
fn mkfifo(path: &std::path::Path) {
    use std::os::unix::ffi::OsStrExt;
    let c = std::ffi::CString::new(path.as_os_str().as_bytes()).unwrap();
    // Safety: `c` is a valid NUL-terminated path that outlives the call.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0, "mkfifo {}", path.display());
}

#[test]
fn fifos_and_devices_are_refused_by_name_and_left_alone() {
    let dir = scratch("fifo");
    let fifo = dir.join("out.bin");
    mkfifo(&fifo);
    let err = AtomicFile::create(&fifo).err().unwrap();
    assert_eq!(
        err.to_string(),
        format!("cannot write {}: it is a named pipe (FIFO), not a regular file", fifo.display())
    );
    assert!(std::fs::symlink_metadata(&fifo).unwrap().file_type().is_fifo());
    assert_eq!(names(&dir), vec!["out.bin"]);
    // /dev/null is only looked at: refused before any file is created next to it.
    let null = std::path::Path::new("/dev/null");
    let err = super::atomic::check_target(null).unwrap_err();
    assert_eq!(err.to_string(), "cannot write /dev/null: it is a character device, not a regular file");
    assert!(std::fs::symlink_metadata(null).unwrap().file_type().is_char_device());
    // A target that becomes a FIFO after the temporary file was made is refused at the rename.
    let late = dir.join("late.bin");
    let staged = AtomicFile::create(&late).unwrap().finish().unwrap();
    mkfifo(&late);
    let err = staged.commit().unwrap_err();
    assert_eq!(
        err.to_string(),
        format!("cannot write {}: it is a named pipe (FIFO), not a regular file", late.display())
    );
    assert!(std::fs::symlink_metadata(&late).unwrap().file_type().is_fifo());
    assert_eq!(names(&dir), vec!["late.bin", "out.bin"]);
}

#[test]
fn unwritable_targets_are_named() {
    let dir = scratch("unwritable");
    let err = AtomicFile::create(&dir).err().unwrap();
    assert_eq!(err.to_string(), format!("cannot write {}: it is a directory, not a regular file", dir.display()));
    let missing = dir.join("no").join("out.bin");
    let err = AtomicFile::create(&missing).err().unwrap();
    assert_eq!(
        format!("{err:#}"),
        format!("cannot write {}: No such file or directory (os error 2)", missing.display())
    );
}

#[test]
fn only_regular_files_are_read() {
    let dir = scratch("regular");
    let err = |p: &std::path::Path| open_regular(p).err().unwrap().to_string();
    assert_eq!(err(&dir), format!("cannot read {}: it is a directory, not a regular file", dir.display()));
    assert_eq!(err("/dev/zero".as_ref()), "cannot read /dev/zero: it is a character device, not a regular file");
    let file = dir.join("f.bin");
    std::fs::write(&file, [7u8; 100]).unwrap();
    assert_eq!(read_regular(&file, 100, "too big").unwrap(), vec![7u8; 100]);
    assert_eq!(
        read_regular(&file, 99, "the limit is 99 bytes").unwrap_err().to_string(),
        format!("cannot read {}: it is 100 bytes long; the limit is 99 bytes", file.display())
    );
}
