//! The `.npz` reader on numpy's own files (stored and deflated), the writer read back (its zip64
//! forms in src/npz/tests.rs), and malformed archives: every truncation, every byte flipped, and the named errors.

use sliceops::npz::{list_npz, read_npz, write_npz_to};
use std::path::{Path, PathBuf};
use tract_onnx::prelude::*;

const CENTRAL_SIG: u32 = 0x0201_4b50;
const ZIP64_EOCD_SIG: u32 = 0x0606_4b50;
const EOCD_LEN: usize = 22;

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("sliceops-npz-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name)
}

fn committed(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/npz").join(name)
}

/// Reads archive bytes through a file, as the CLI does.
fn read_bytes(name: &str, bytes: &[u8]) -> anyhow::Result<Vec<(String, Tensor)>> {
    let path = scratch(name);
    std::fs::write(&path, bytes).unwrap();
    let result = read_npz(&path);
    std::fs::remove_file(&path).unwrap();
    result
}

fn error(name: &str, bytes: &[u8]) -> String {
    format!("{:#}", read_bytes(name, bytes).unwrap_err())
}

/// The arrays tests/npz/generate.py writes, built here.
fn generated() -> Vec<(String, Tensor)> {
    let x = tract_ndarray::arr2(&[[0.0f32, 0.25, 0.5], [0.75, 1.0, 1.25]]).into_tensor();
    let mask = tract_ndarray::arr1(&[true, false, true]).into_tensor();
    let ab = tensor0(-7i64);
    let h = tract_ndarray::arr2(&[[0.0f32, 1.0, 2.0], [3.0, 4.0, 5.0]]).mapv(half::f16::from_f32).into_tensor();
    let empty = Tensor::zero::<u8>(&[0, 4]).unwrap();
    vec![("x".into(), x), ("mask".into(), mask), ("a/b".into(), ab), ("h\u{e9}".into(), h), ("empty".into(), empty)]
}

fn assert_arrays(got: &[(String, Tensor)], want: &[(String, Tensor)]) {
    assert_eq!(
        got.iter().map(|(n, _)| n.as_str()).collect::<Vec<_>>(),
        want.iter().map(|(n, _)| n.as_str()).collect::<Vec<_>>()
    );
    for ((name, g), (_, w)) in got.iter().zip(want) {
        assert_eq!(g, w, "array {name}");
    }
}

#[test]
fn numpy_savez_and_savez_compressed_read_exactly() {
    for file in ["savez.npz", "compressed.npz"] {
        assert_arrays(&read_npz(&committed(file)).unwrap(), &generated());
        assert_eq!(list_npz(&committed(file)).unwrap(), ["x", "mask", "a/b", "h\u{e9}", "empty"]);
    }
}

#[test]
fn written_archives_read_back() {
    let arrays = generated();
    let mut plain = vec![];
    write_npz_to(&mut plain, &arrays).unwrap();
    assert_arrays(&read_bytes("plain.npz", &plain).unwrap(), &arrays);
    // No zip64 record in an archive this small.
    assert!(!plain.windows(4).any(|w| w == ZIP64_EOCD_SIG.to_le_bytes()));
    // (The zip64 forms, written past lowered thresholds, are tested in src/npz/tests.rs.)
    // Written twice, the same bytes (no time stamp).
    let mut again = vec![];
    write_npz_to(&mut again, &arrays).unwrap();
    assert_eq!(plain, again);
    // An empty archive is an end record alone.
    let mut none = vec![];
    write_npz_to(&mut none, &[]).unwrap();
    assert_eq!(none.len(), EOCD_LEN);
    assert!(read_bytes("none.npz", &none).unwrap().is_empty());
}

#[test]
fn write_refuses_duplicates_and_strings_before_writing() {
    let t = tensor1(&[1i64]);
    let mut out = vec![];
    let e = write_npz_to(&mut out, &[("a".into(), t.clone()), ("a".into(), t.clone())]).unwrap_err();
    assert_eq!(e.to_string(), "two arrays named 'a' cannot go in one .npz");
    let s = tensor1(&["x".to_string()]);
    let e = write_npz_to(&mut out, &[("a".into(), t), ("s".into(), s)]).unwrap_err();
    assert_eq!(format!("{e:#}"), "output 's': a tensor of str cannot be written as .npy (only numbers and bool can)");
    assert!(out.is_empty());
}

#[test]
fn every_truncation_and_every_flipped_byte_is_an_error_or_the_same_arrays() {
    for file in ["savez.npz", "compressed.npz"] {
        let bytes = std::fs::read(committed(file)).unwrap();
        let path = scratch(&format!("cut-{file}"));
        for len in 0..bytes.len() {
            std::fs::write(&path, &bytes[..len]).unwrap();
            assert!(read_npz(&path).is_err(), "{file} cut to {len} bytes read");
        }
        for at in 0..bytes.len() {
            let mut flipped = bytes.clone();
            flipped[at] ^= 0x55;
            std::fs::write(&path, &flipped).unwrap();
            // A flip in a field the reader does not use (times, attributes, versions) changes nothing.
            if let Ok(arrays) = read_npz(&path) {
                assert_arrays(&arrays, &generated());
            }
        }
        std::fs::remove_file(&path).unwrap();
    }
}

/// A one-entry stored archive of `x.npy`, built by our writer.
fn one_entry() -> Vec<u8> {
    let mut out = vec![];
    write_npz_to(&mut out, &[("x".into(), tensor1(&[1.5f32, 2.5]))]).unwrap();
    out
}

/// Where the central directory header starts in [`one_entry`].
fn central(bytes: &[u8]) -> usize {
    bytes.windows(4).position(|w| w == CENTRAL_SIG.to_le_bytes()).unwrap()
}

#[test]
fn malformed_archives_are_named_errors() {
    let ok = one_entry();
    let cd = central(&ok);
    let with = |patches: &[(usize, &[u8])]| {
        let mut b = ok.clone();
        for (at, value) in patches {
            b[*at..*at + value.len()].copy_from_slice(value);
        }
        b
    };
    let eocd = ok.len() - EOCD_LEN;
    let table: Vec<(Vec<u8>, &str)> = vec![
        (
            b"not a zip at all, just text".to_vec(),
            "not a zip archive (.npz): no end of central directory record in its last bytes",
        ),
        (with(&[(cd + 16, &[1, 2, 3, 4])]), "array 'x': CRC-32 "),
        (
            with(&[(cd + 10, &[14, 0])]),
            "entry 'x.npy': compression method 14 is not supported (numpy writes stored and deflate entries)",
        ),
        (with(&[(cd + 8, &[1, 0])]), "entry 'x.npy': it is encrypted"),
        (with(&[(cd + 42, &[9, 0, 0, 0])]), "entry 'x.npy': no local header where the directory points"),
        (
            with(&[(cd + 42, &[0xF0, 0xFF, 0xFF, 0x7F])]),
            "entry 'x.npy': its local header lies outside the file's entries",
        ),
        (with(&[(cd + 20, &[0xF0, 0, 0, 0])]), "entry 'x.npy': stored, yet 240 bytes in the archive and 136 once read"),
        (
            with(&[(cd + 20, &[0xF0, 0, 0, 0]), (cd + 24, &[0xF0, 0, 0, 0])]),
            "entry 'x.npy': its data runs past the start of the central directory",
        ),
        (
            with(&[(cd + 28, &[0xFF, 0x00])]),
            "central directory entry #0: its name, extra field or comment runs past the directory",
        ),
        (with(&[(cd, b"PK\x09\x09")]), "central directory entry #0: no central directory signature"),
        (
            with(&[(eocd + 8, &[2, 0, 2, 0])]),
            "the central directory (offset 171, 51 bytes, 2 entries) does not fit in the file (244 bytes)",
        ),
        (with(&[(eocd + 4, &[1, 0])]), "a zip archive split over several files (disks) is not supported"),
        (
            with(&[(eocd + 12, &[0xFF; 4])]),
            "malformed zip64 end of central directory: the end record says zip64 but no zip64 locator precedes it",
        ),
        (with(&[(cd + 46, b"y")]), "entry 'y.npy': the names in its local header and in the directory differ"),
        (
            with(&[(cd + 48, b"txt"), (32, b"txt")]),
            "entry 'x.txt' is not a .npy array (an .npz holds one NAME.npy per array)",
        ),
        // The local header's own CRC-32 and sizes are not read: the directory's are the ones checked.
        (with(&[(14, &[0; 12])]), ""),
    ];
    for (k, (bytes, want)) in table.iter().enumerate() {
        if want.is_empty() {
            // A local header's own CRC field is not read: the directory's is the one checked.
            assert_eq!(read_bytes("table.npz", bytes).unwrap().len(), 1);
            continue;
        }
        let got = error(&format!("table-{k}.npz"), bytes);
        assert!(got.contains(want), "case {k}: {got}\nwanted: {want}");
    }
}

#[test]
fn deflated_entries_claiming_more_than_deflate_can_expand_are_refused_before_reading() {
    let bytes = std::fs::read(committed("compressed.npz")).unwrap();
    let cd = central(&bytes);
    let mut b = bytes.clone();
    // Entry x.npy: 1 GiB claimed from a few dozen bytes.
    b[cd + 24..cd + 28].copy_from_slice(&(1u32 << 30).to_le_bytes());
    let e = error("ratio.npz", &b);
    assert!(
        e.contains("entry 'x.npy': 1073741824 bytes claimed from") && e.ends_with("more than deflate can expand"),
        "{e}"
    );
    // Corrupt deflate data: an error (the stream or its CRC-32), never a panic.
    let data = 30 + 5 + 20;
    for at in data..data + 20 {
        let mut b = bytes.clone();
        b[at] ^= 0xFF;
        let e = error("corrupt.npz", &b);
        assert!(e.contains("array 'x'"), "{e}");
    }
}

#[test]
fn overlapping_entries_and_duplicate_names_are_refused() {
    let mut out = vec![];
    let t = tensor1(&[1i32, 2]);
    write_npz_to(&mut out, &[("a".into(), t.clone()), ("b".into(), t)]).unwrap();
    // Point b's directory entry at a's local header (and name): the same data twice.
    let first = central(&out);
    let second = first + out[first + 4..].windows(4).position(|w| w == CENTRAL_SIG.to_le_bytes()).unwrap() + 4;
    let mut dup = out.clone();
    dup[second + 42..second + 46].copy_from_slice(&0u32.to_le_bytes());
    dup[second + 46] = b'a';
    let e = error("overlap.npz", &dup);
    assert!(e.contains("its data overlaps entry"), "{e}");
    // Two entries of the same name, each with its own data.
    let mut same = out.clone();
    let local_b = u32::from_le_bytes(out[second + 42..second + 46].try_into().unwrap()) as usize;
    same[local_b + 30] = b'a';
    same[second + 46] = b'a';
    assert!(error("twice.npz", &same).ends_with("the array 'a' is in it twice"));
}
