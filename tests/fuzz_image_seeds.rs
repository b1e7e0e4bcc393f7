//! The image-decoder fuzz targets' shared body (fuzz/fuzz_targets/image/mod.rs, on the public API)
//! run on their seed corpora, each seed whole and cut short: pixels in the format's channels, the
//! empty image, or an error naming the node. This also keeps the harness compiling with the crate
//! (the fuzz workspace is built only by cargo-fuzz).
//! Requires the `image-decoder` feature (on by default).

#![cfg(feature = "image-decoder")]

#[path = "../fuzz/fuzz_targets/image/mod.rs"]
mod image;

use std::path::Path;

/// Each format's corpus folder and the signature its target puts in front of bytes that lack it.
const TARGETS: [(&str, &[u8]); 7] = [
    ("image_bmp", b"BM"),
    ("image_jpeg", b"\xff\xd8\xff"),
    ("image_jpeg2000", b"\xff\x4f\xff\x51"),
    ("image_png", b"\x89PNG\r\n\x1a\n"),
    ("image_pnm", b"P6 "),
    ("image_tiff", b"II*\0"),
    ("image_webp", b"RIFF\0\0\0\0WEBP"),
];

#[test]
fn every_seed_whole_and_cut_short_decodes_or_is_an_error_naming_the_node() {
    let corpus = Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz/corpus");
    for (target, signature) in TARGETS {
        let mut seeds: Vec<_> = std::fs::read_dir(corpus.join(target)).unwrap().map(|e| e.unwrap().path()).collect();
        seeds.sort();
        assert!(!seeds.is_empty(), "{target}: no seeds");
        for seed in seeds {
            let data = std::fs::read(&seed).unwrap();
            for len in [data.len(), data.len() / 2, signature.len() + 1] {
                image::check(signature, &data[..len.min(data.len())]);
            }
        }
    }
}
