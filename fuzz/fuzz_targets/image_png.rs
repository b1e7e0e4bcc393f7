//! Arbitrary bytes as a PNG image, through `ImageDecoder`'s decoder for it (see `image/mod.rs`).

#![no_main]

mod image;

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| image::check(b"\x89PNG\r\n\x1a\n", data));
