//! What a decoder may allocate: a pixel limit against decompression bombs (Pillow's), and a byte
//! budget for everything the decoding allocates (working buffers, decoded samples, the output),
//! checked from the header before any of it is allocated.
//!
//! A few hundred bytes of header can declare an image of billions of pixels; its decoder would then
//! allocate for it (coefficient planes, tiles, rows) before finding the stream holds nothing. Each
//! decoder reads the declared size first and [`Budget::image`] checks it against [`MAX_PIXELS`]; then
//! it [`Budget::charge`]s the bytes of what it will allocate, in checked arithmetic, against the
//! budget: what the process can allocate when the model runs, the analysis budget when a constant
//! image is decoded while the model is analysed (over it, the image is decoded when the model runs).

use super::Failure;
use crate::node::Label;
use std::cell::Cell;

/// The most pixels an image may declare: Pillow's `DecompressionBombError` threshold, twice its
/// `Image.MAX_IMAGE_PIXELS` (89,478,485, a 24-bit image of 256 MiB).
pub(crate) const MAX_PIXELS: u64 = 2 * 89_478_485;

/// When the decoding happens, which decides what going over the byte budget means.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Purpose {
    /// A constant image while the model is analysed: over the budget, it is decoded later.
    Analysis,
    /// The model is running: over the budget is an error naming the node.
    Run,
}

/// The limits of one decoding and what it has charged so far.
pub(crate) struct Budget<'a> {
    label: &'a Label,
    bytes: u64,
    purpose: Purpose,
    /// The output's channels.
    out_channels: usize,
    used: Cell<u64>,
    /// Whether the output has been charged (by the first [`Budget::image`]).
    output_charged: Cell<bool>,
}

impl<'a> Budget<'a> {
    /// A budget of `bytes` for the node `label`, whose output has `out_channels` channels.
    pub(crate) fn new(label: &'a Label, bytes: u64, purpose: Purpose, out_channels: usize) -> Budget<'a> {
        Budget { label, bytes, purpose, out_channels, used: Cell::new(0), output_charged: Cell::new(false) }
    }

    /// Checks an image of `height` x `width` pixels against [`MAX_PIXELS`]; gives
    /// `height * width * channels`, the bytes of its 8-bit samples, not charged. The first call
    /// charges the output: the converted samples, and as much again for the tensor made of them.
    pub(crate) fn image(&self, height: usize, width: usize, channels: usize) -> Result<usize, Failure> {
        let pixels = (height as u64).checked_mul(width as u64);
        if pixels.is_none_or(|p| p > MAX_PIXELS) {
            let count = pixels.map_or_else(|| "more than 2^64".to_string(), |p| p.to_string());
            return Err(Failure::Refused(self.label.err(format!(
                "the image declares {width}x{height} pixels ({count}), over the decompression-bomb limit of \
                 {MAX_PIXELS} pixels"
            ))));
        }
        let samples = pixels.and_then(|p| p.checked_mul(channels as u64)).and_then(|s| usize::try_from(s).ok());
        let samples = samples.ok_or_else(|| self.too_large(&format!("{width}x{height}x{channels} samples")))?;
        if !self.output_charged.replace(true) {
            let output = pixels.and_then(|p| p.checked_mul(2 * self.out_channels as u64));
            self.charge(&format!("an output of {width}x{height}x{} samples", self.out_channels), output)?;
        }
        Ok(samples)
    }

    /// Charges `bytes` for `what` (a phrase for the error); over the budget, a refusal (when the
    /// model runs) or [`Failure::Deferred`] (while it is analysed).
    pub(crate) fn charge(&self, what: &str, bytes: Option<u64>) -> Result<(), Failure> {
        let total = bytes.and_then(|b| b.checked_add(self.used.get()));
        match total {
            Some(t) if t <= self.bytes => {
                self.used.set(t);
                Ok(())
            }
            _ if self.purpose == Purpose::Analysis => Err(Failure::Deferred),
            _ => Err(self.too_large(what)),
        }
    }

    /// Charges `count` items of `size` bytes each.
    pub(crate) fn charge_items(&self, what: &str, count: u64, size: u64) -> Result<(), Failure> {
        self.charge(what, count.checked_mul(size))
    }

    /// The bytes not charged yet.
    pub(crate) fn left(&self) -> u64 {
        self.bytes.saturating_sub(self.used.get())
    }

    fn too_large(&self, what: &str) -> Failure {
        let used = self.used.get();
        Failure::Refused(self.label.err(format!(
            "decoding the image needs more memory than this process can allocate: {what} after {used} bytes, \
             over the budget of {} bytes",
            self.bytes
        )))
    }
}
