//! Arbitrary bytes as a TIFF image, through `ImageDecoder`'s decoder for it (see `image/mod.rs`).

#![no_main]

mod image;

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| image::check(b"II*\0", data));
