//! ONNX `ImageDecoder` (opset 20): an encoded image (a 1-D uint8 tensor holding a file's bytes)
//! decoded into a uint8 `[height, width, channels]` tensor, in `pixel_format` `RGB` (the default),
//! `BGR` or `Grayscale` (one channel, Pillow's `convert("L")` luma, see [`pixels::luma`]).
//!
//! The format is told by the first bytes: PNG, TIFF, WebP, JPEG 2000 (decoded by one pure-Rust crate
//! each), JPEG (read here to libjpeg-turbo's exact output, [`jpeg`]), BMP and PNM (read here). Whatever the
//! source (grey, palette, alpha), the pixels are converted as Pillow converts to `RGB` or `L`: alpha
//! dropped, grey repeated, palettes resolved.
//!
//! As the specification says, a stream that cannot be decoded (corrupt, truncated, of no known
//! format) gives an empty image, `[0, 0, channels]`. An image the decoders do not support (e.g. a
//! arithmetic-coded JPEG, 16-bit grey), one declaring more pixels than Pillow's decompression-bomb
//! limit, and one whose decoding would allocate more than the process can (both checked from its
//! header, before decoding: [`budget`]) are errors naming the node, and so is an input that is not
//! 1-D uint8. Each decoder runs under the panic guard.
//!
//! The output's height and width depend on the data: when the input is a constant they are known
//! when the model is analysed (if decoding it takes at most the analysis budget, else they are
//! found when it runs), otherwise they are symbols of the node's own, bound when it runs.

pub(crate) mod bmp;
pub(crate) mod budget;
pub(crate) mod jpeg;
pub(crate) mod jpeg2000;
mod jpeg2000_size;
pub(crate) mod pixels;
pub(crate) mod png;
pub(crate) mod pnm;
pub(crate) mod tiff;
pub(crate) mod webp;

#[cfg(test)]
mod tests;

use crate::node::expanded::{Expanded, Io};
use crate::node::Label;
use pixels::{PixelFormat, Pixels};
use tract_onnx::model::ParsingContext;
use tract_onnx::pb::NodeProto;
use tract_onnx::prelude::*;
use tract_onnx::tract_core::internal::*;
use tract_onnx::tract_hir::internal::*;

/// Why a decoder gave no pixels.
#[derive(Debug)]
pub(crate) enum Failure {
    /// The stream is not a valid image: the output is empty, as the specification says. The reason
    /// is kept for `Debug` output (a failing test, a debugger): the node itself gives no error.
    Corrupt(#[allow(dead_code)] String),
    /// A valid image using something not decoded here: an error.
    Unsupported(String),
    /// Refused before decoding (its size): an error naming the node.
    Refused(TractError),
    /// Over the analysis budget: decoded when the model runs.
    Deferred,
}

pub(crate) use budget::Budget;
use budget::Purpose;

/// The bytes a constant image's decoding may take while the model is analysed: the analysis budget.
pub(crate) const ANALYSIS_BYTES: u64 = crate::memory::DEFAULT_FOLD_BYTES;

/// The image formats, told by their first bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Format {
    /// Portable Network Graphics.
    Png,
    /// JPEG (JFIF, Exif or bare).
    Jpeg,
    /// JPEG 2000: JP2 boxes or a bare codestream.
    Jpeg2000,
    /// Windows or OS/2 bitmap.
    Bmp,
    /// TIFF, little or big endian, classic or BigTIFF.
    Tiff,
    /// WebP in its RIFF container.
    WebP,
    /// Netpbm `P1` to `P6`.
    Pnm,
}

impl Format {
    /// The format of `data`, if it starts as one of them does.
    pub(crate) fn sniff(data: &[u8]) -> Option<Format> {
        let starts = |p: &[u8]| data.starts_with(p);
        Some(if starts(b"\x89PNG\r\n\x1a\n") {
            Format::Png
        } else if starts(b"\xff\xd8\xff") {
            Format::Jpeg
        } else if starts(b"\x00\x00\x00\x0cjP  \r\n\x87\n") || starts(b"\xff\x4f\xff\x51") {
            Format::Jpeg2000
        } else if starts(b"BM") {
            Format::Bmp
        } else if starts(b"II*\0") || starts(b"MM\0*") || starts(b"II+\0") || starts(b"MM\0+") {
            Format::Tiff
        } else if data.len() >= 12 && starts(b"RIFF") && &data[8..12] == b"WEBP" {
            Format::WebP
        } else if matches!(data, [b'P', b'1'..=b'6', c, ..] if c.is_ascii_whitespace() || *c == b'#') {
            Format::Pnm
        } else {
            return None;
        })
    }

    fn decoder(self) -> fn(&[u8], &Budget<'_>) -> Result<Pixels, Failure> {
        match self {
            Format::Png => png::decode,
            Format::Jpeg => jpeg::decode,
            Format::Jpeg2000 => jpeg2000::decode,
            Format::Bmp => bmp::decode,
            Format::Tiff => tiff::decode,
            Format::WebP => webp::decode,
            Format::Pnm => pnm::decode,
        }
    }
}

/// The node's image `data` decoded to `format`: `(height, width, samples)`, `(0, 0, [])` for a
/// stream that cannot be decoded; what it allocates is limited by what the process can allocate.
pub(crate) fn decode(label: &Label, data: &[u8], format: PixelFormat) -> TractResult<(usize, usize, Vec<u8>)> {
    let budget = Budget::new(label, crate::memory::value_limit(), Purpose::Run, format.channels());
    decode_within(label, data, format, &budget)?.ok_or_else(|| label.err("the image decoder deferred a run"))
}

/// [`decode`] within `budget`; `None` when it is over an analysis budget.
pub(crate) fn decode_within(
    label: &Label,
    data: &[u8],
    format: PixelFormat,
    budget: &Budget<'_>,
) -> TractResult<Option<(usize, usize, Vec<u8>)>> {
    let Some(kind) = Format::sniff(data) else { return Ok(Some((0, 0, vec![]))) };
    let decoded = crate::guard::guard("the image decoder", || Ok(kind.decoder()(data, budget)))
        .map_err(|e| label.err(format!("the {kind:?} decoder failed: {e:#}")))?;
    match decoded {
        Ok(pixels) => Ok(Some((pixels.height, pixels.width, pixels.convert(format)))),
        Err(Failure::Corrupt(_)) => Ok(Some((0, 0, vec![]))),
        Err(Failure::Unsupported(what)) => Err(label.err(format!("cannot decode the image: {what}"))),
        Err(Failure::Refused(e)) => Err(e),
        Err(Failure::Deferred) => Ok(None),
    }
}

/// The ImageDecoder builder.
pub(crate) fn image_decoder(
    _ctx: &ParsingContext,
    node: &NodeProto,
) -> TractResult<(Box<dyn InferenceOp>, Vec<String>)> {
    let label = crate::node::node_label(node);
    if node.input.len() != 1 || node.input[0].is_empty() {
        return Err(label.err("ImageDecoder takes one input, the encoded image"));
    }
    if node.output.len() != 1 {
        return Err(label.err(format!("{} outputs: ImageDecoder has one", node.output.len())));
    }
    let text = crate::node::attrs::string(&label, node, "pixel_format")?.unwrap_or_else(|| "RGB".into());
    let Some(format) = PixelFormat::parse(&text) else {
        return Err(label.err(format!("pixel_format is {text:?}: it must be \"RGB\", \"BGR\" or \"Grayscale\"")));
    };
    Expanded::new("ImageDecoder", Spec { label, format }, 1, rules, wire).built()
}

/// The node's attribute.
#[derive(Debug, Clone)]
struct Spec {
    label: Label,
    format: PixelFormat,
}

fn rules<'r>(spec: &'r Spec, s: &mut Solver<'r>, Io { outputs, .. }: Io<'r>) -> InferenceResult {
    s.equals(&outputs[0].datum_type, u8::datum_type())?;
    s.equals(&outputs[0].rank, 3)?;
    s.equals(&outputs[0].shape[2], spec.format.channels().to_dim())
}

fn wire(spec: &Spec, prefix: &str, model: &mut TypedModel, inputs: &[OutletId]) -> TractResult<TVec<OutletId>> {
    let x = model.outlet_fact(inputs[0])?.clone();
    check_input(&spec.label, x.datum_type, x.rank())?;
    let dims = match &x.konst {
        Some(k) => {
            // Within the analysis budget; a larger image is decoded when the model runs.
            let budget = Budget::new(&spec.label, ANALYSIS_BYTES, Purpose::Analysis, spec.format.channels());
            match decode_within(&spec.label, k.try_as_plain_ram()?.as_slice::<u8>()?, spec.format, &budget)? {
                Some((h, w, _)) => Dims::Known(h, w),
                None => fresh(prefix, model),
            }
        }
        None => fresh(prefix, model),
    };
    model.wire_node(prefix, ImageDecoder { label: spec.label.clone(), format: spec.format, dims }, inputs)
}

/// Height and width as symbols of the node's own.
fn fresh(prefix: &str, model: &TypedModel) -> Dims {
    Dims::Fresh(
        model.symbols.new_with_prefix(&format!("{prefix}_height")),
        model.symbols.new_with_prefix(&format!("{prefix}_width")),
    )
}

fn check_input(label: &Label, dt: DatumType, rank: usize) -> TractResult<()> {
    if dt != u8::datum_type() || rank != 1 {
        return Err(label.err(format!("the encoded image must be a 1-D uint8 tensor, got {dt:?} of rank {rank}")));
    }
    Ok(())
}

/// The output's height and width.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) enum Dims {
    /// Read from a constant input when the model was analysed.
    Known(usize, usize),
    /// Known when the node runs.
    Fresh(Symbol, Symbol),
}

/// `ImageDecoder` with its output dims known or minted.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct ImageDecoder {
    /// The node, for errors.
    pub label: Label,
    /// The output's pixel format.
    pub format: PixelFormat,
    /// The output's height and width.
    pub dims: Dims,
}

impl Op for ImageDecoder {
    fn name(&self) -> StaticName {
        "ImageDecoder".into()
    }

    fn mints_runtime_symbols(&self) -> bool {
        matches!(self.dims, Dims::Fresh(..))
    }

    op_as_typed_op!();
}

impl TypedOp for ImageDecoder {
    as_op!();

    fn output_facts(&self, _inputs: &[&TypedFact]) -> TractResult<TVec<TypedFact>> {
        let c = self.format.channels().to_dim();
        Ok(tvec![match &self.dims {
            Dims::Known(h, w) => u8::fact([h.to_dim(), w.to_dim(), c]),
            Dims::Fresh(h, w) => u8::fact([TDim::Sym(h.clone()), TDim::Sym(w.clone()), c]),
        }])
    }
}

impl EvalOp for ImageDecoder {
    op_out_of_plan!();

    fn eval(&self, _ctx: &EvalContext, inputs: TVec<TValue>) -> TractResult<TVec<TValue>> {
        let x = &inputs[0];
        check_input(&self.label, x.datum_type(), x.rank())?;
        let (h, w, samples) = decode(&self.label, x.try_as_plain_ram()?.as_slice::<u8>()?, self.format)?;
        Ok(tvec![tract_ndarray::Array3::from_shape_vec((h, w, self.format.channels()), samples)?.into_tvalue()])
    }
}
