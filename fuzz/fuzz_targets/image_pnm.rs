//! Arbitrary bytes as a PNM image, through `ImageDecoder`'s decoder for it (see `image/mod.rs`).

#![no_main]

mod image;

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| image::check(b"P6 ", data));
