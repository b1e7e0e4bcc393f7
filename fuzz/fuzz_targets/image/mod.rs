//! Shared body of the image-decoder targets (one per format): arbitrary bytes, given the format's
//! signature when they lack it, decoded by `ImageDecoder`'s decoders within a 256 MiB budget (what
//! the node gets is what the process can allocate; a fixed budget keeps the fuzzer under its own
//! memory limit). Each run gives pixels, the empty image or an error naming the node: never a panic,
//! and never an allocation past the budget (libFuzzer's `-malloc_limit_mb` catches one).

use sliceops::ops::image_decoder::budget::{Budget, Purpose};
use sliceops::ops::image_decoder::decode_within;
use sliceops::ops::image_decoder::pixels::PixelFormat;
use sliceops::node::Label;

/// The budget of one decoding: 256 MiB.
pub const BUDGET: u64 = 256 << 20;

/// Decodes `data` (prefixed with `signature` unless it starts with it) in each pixel format.
pub fn check(signature: &[u8], data: &[u8]) {
    let data = if data.starts_with(signature) { data.to_vec() } else { [signature, data].concat() };
    let label = Label { node: "dec".into(), op: "ImageDecoder".into() };
    for format in [PixelFormat::Rgb, PixelFormat::Grayscale] {
        let budget = Budget::new(&label, BUDGET, Purpose::Run, format.channels());
        match decode_within(&label, &data, format, &budget) {
            Ok(Some((h, w, samples))) => assert_eq!(Some(samples.len()), h.checked_mul(w).map(|n| n * format.channels())),
            Ok(None) => panic!("a run budget never defers"),
            Err(e) => {
                let text = format!("{e:#}");
                assert!(text.contains("node 'dec' (ImageDecoder)"), "{text}");
                assert!(!text.contains("panicked"), "{text}");
            }
        }
    }
}
