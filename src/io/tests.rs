//! Atomic writes and regular-file reads on a scratch folder.

use super::atomic::{write_atomic, AtomicFile};
use super::regular::{open_regular, read_regular};
use std::io::Write;
use std::os::unix::fs::PermissionsExt;
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
fn a_symlink_target_replaces_the_file_it_names() {
    let dir = scratch("symlink");
    let real = dir.join("real.bin");
    std::fs::write(&real, b"old").unwrap();
    let link = dir.join("link.bin");
    std::os::unix::fs::symlink(&real, &link).unwrap();
    write_atomic(&link, |f| Ok(f.write_all(b"new")?)).unwrap();
    assert!(std::fs::symlink_metadata(&link).unwrap().file_type().is_symlink());
    assert_eq!(std::fs::read(&real).unwrap(), b"new");
}

#[test]
fn unwritable_targets_are_named() {
    let dir = scratch("unwritable");
    let err = AtomicFile::create(&dir).err().unwrap();
    assert_eq!(err.to_string(), format!("cannot write {}: it is a directory", dir.display()));
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
