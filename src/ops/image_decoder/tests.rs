//! The budget the decoders charge, on the fixtures of tests/image_decoder/ (moved here from
//! tests/image_decoder.rs, as the decoders and their budget are internal; the rest of that file
//! decodes through a model).

use super::budget::{Budget, Purpose};
use super::decode_within;
use super::pixels::PixelFormat;
use crate::node::Label;
use std::path::PathBuf;

fn fixtures_dir() -> PathBuf {
    PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/image_decoder"))
}

/// The fixtures' names (each `NAME.bin` with `NAME.rgb.npy` and `NAME.gray.npy`).
fn fixtures() -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(fixtures_dir())
        .unwrap()
        .filter_map(|e| e.unwrap().file_name().to_str().and_then(|n| n.strip_suffix(".bin")).map(String::from))
        .collect();
    names.sort();
    assert!(names.len() >= 22, "fixtures missing: {names:?}");
    names
}

fn fixture(name: &str) -> Vec<u8> {
    std::fs::read(fixtures_dir().join(format!("{name}.bin"))).unwrap()
}

/// The budget the decoders charge (what the fuzz targets call): a fixture decodes within 256 MiB;
/// under a budget too small for it, decoding for a run is an error naming the node and what did
/// not fit, and decoding while analysing gives way (the image is decoded when the model runs).
#[test]
fn decoders_charge_what_they_allocate_to_the_budget() {
    let label = Label { node: "dec".into(), op: "ImageDecoder".into() };
    for name in fixtures() {
        let data = fixture(&name);
        let budget = Budget::new(&label, 256 << 20, Purpose::Run, 3);
        let (h, w, samples) = decode_within(&label, &data, PixelFormat::Rgb, &budget).unwrap().unwrap();
        assert_eq!(samples.len(), h * w * 3, "{name}");
        let tiny = Budget::new(&label, 64, Purpose::Run, 3);
        let e = format!("{:#}", decode_within(&label, &data, PixelFormat::Rgb, &tiny).unwrap_err());
        assert!(
            e.starts_with(
                "node 'dec' (ImageDecoder): decoding the image needs more memory than this process can \
                           allocate: "
            ) && e.ends_with("over the budget of 64 bytes"),
            "{name}: {e}"
        );
        let analysis = Budget::new(&label, 64, Purpose::Analysis, 3);
        assert!(decode_within(&label, &data, PixelFormat::Rgb, &analysis).unwrap().is_none(), "{name}");
    }
}
