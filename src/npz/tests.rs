//! The writer's zip64 forms, on an archive small enough to test: the thresholds lowered to 0 (moved
//! here from tests/npz_files.rs, as the thresholds are internal).

use super::write::write_npz_with_limits;
use super::{read_npz, write_npz_to};
use tract_onnx::prelude::*;

const ZIP64_EOCD_SIG: u32 = 0x0606_4b50;

/// The arrays tests/npz/generate.py writes, built here.
fn generated() -> Vec<(String, Tensor)> {
    let x = tract_ndarray::arr2(&[[0.0f32, 0.25, 0.5], [0.75, 1.0, 1.25]]).into_tensor();
    let mask = tract_ndarray::arr1(&[true, false, true]).into_tensor();
    let ab = tensor0(-7i64);
    let h = tract_ndarray::arr2(&[[0.0f32, 1.0, 2.0], [3.0, 4.0, 5.0]]).mapv(half::f16::from_f32).into_tensor();
    let empty = Tensor::zero::<u8>(&[0, 4]).unwrap();
    vec![("x".into(), x), ("mask".into(), mask), ("a/b".into(), ab), ("h\u{e9}".into(), h), ("empty".into(), empty)]
}

/// Reads archive bytes through a file, as the CLI does.
fn read_bytes(name: &str, bytes: &[u8]) -> anyhow::Result<Vec<(String, Tensor)>> {
    let dir = std::env::temp_dir().join(format!("sliceops-npz-unit-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(name);
    std::fs::write(&path, bytes).unwrap();
    let result = read_npz(&path);
    std::fs::remove_file(&path).unwrap();
    result
}

#[test]
fn written_archives_read_back_in_their_zip64_forms() {
    let arrays = generated();
    let mut plain = vec![];
    write_npz_to(&mut plain, &arrays).unwrap();
    assert!(!plain.windows(4).any(|w| w == ZIP64_EOCD_SIG.to_le_bytes()));
    // Every size, offset and the count past the thresholds: the zip64 forms, read back the same.
    let mut zip64 = vec![];
    write_npz_with_limits(&mut zip64, &arrays, 0, 0).unwrap();
    assert!(zip64.windows(4).any(|w| w == ZIP64_EOCD_SIG.to_le_bytes()));
    assert_eq!(&zip64[zip64.len() - 22 + 8..zip64.len() - 22 + 20], [0xFF; 12]);
    assert_eq!(read_bytes("zip64.npz", &zip64).unwrap(), arrays);
}
