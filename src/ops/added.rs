//! Standard ONNX ops tract-onnx 0.23.9 does not implement (or implements only in part), built on
//! tract's kernels where one exists:
//!
//! - `AffineGrid` (20): the sampling grid of an affine transform, `size` a shape parameter;
//! - `Attention` (opsets 23-25): every variant of the specification, as tract's einsums around our
//!   masked softmax ([`attention`](super::nn::attention));
//! - `Binarizer` (`ai.onnx.ml` 1): 1 above a threshold, else 0, in the input's type;
//! - `BitCast` (26): the same bits read as another type of the same width;
//! - `CausalConvWithState` (27): a depthwise causal 1-D convolution continuing a past state, with
//!   an optional SiLU;
//! - `CenterCropPad` (18): centred crop and zero pad, output dims from `shape` (symbolic when known
//!   as dims, minted when only known at run time);
//! - `Col2Im` (18): columns of blocks summed back into images (padding, strides, dilations), the
//!   image dims exact when `image_shape` is known, minted when only known at run time;
//! - `CumProd` (26): running products, `exclusive` and `reverse`;
//! - `DeformConv` (19): a grouped convolution whose taps are moved by offsets (interpolated
//!   linearly, zero outside) and scaled by an optional mask, any spatial rank;
//! - `Det` (11): determinants of the last two axes;
//! - `FlexAttention` (`ai.onnx.preview` 1): attention with `score_mod` / `prob_mod` graphs spliced in
//!   between tract's ops by the analysis ([`flex_attention`](super::nn::flex_attention));
//! - `ImageDecoder` (20): JPEG, PNG, TIFF, WebP, JPEG 2000, BMP and PNM images decoded to RGB, BGR
//!   or greyscale pixels, the dims symbols bound when the node runs ([`image_decoder`](super::image_decoder));
//! - `LinearAttention` (27): recurrent linear attention, linear/gated/delta/gated_delta updates,
//!   grouped query heads ([`linear_attention`](super::nn::linear_attention));
//! - `NegativeLogLikelihoodLoss` and `SoftmaxCrossEntropyLoss` (12-22): per-element losses from
//!   class indices, weights, `ignore_index`, reductions ([`loss`](super::nn::loss));
//! - `Loop` (1-27): the body parsed with the outer values it reads; analysed and run by
//!   `analysis` (its `loops.rs`), as `If` is;
//! - `LpPool` (2-22): `(Σ |x|^p)^(1/p)` pooling, as tract's sum pooling between two powers;
//! - `MaxUnpool` (9, 11): `MaxPool`'s values written back at their indices, zeros elsewhere, the
//!   output dims from the pooling or from `output_shape` (symbolic when known as dims, minted when
//!   only known at run time);
//! - `Adagrad`, `Adam`, `Momentum` (`ai.onnx.preview.training` 1): one optimizer step over groups
//!   of tensors ([`optimizers`](super::training::optimizers));
//! - `OptionalHasElement`, `OptionalGetElement` (15, 18): over the plain tensors tract carries (no
//!   input: no element; a tensor: its element) ([`optional`](super::control::optional));
//! - `Bernoulli` (15-22), `RandomUniform`, `RandomNormal` and their `Like` forms (1-22), `Dropout`
//!   in training mode (12-22): numpy's legacy `RandomState` draws, exact when seeded ([`random`](super::random));
//! - `ReverseSequence` (10): each batch entry's prefix reversed along time;
//! - `RoiAlign` (10, 16): regions of interest pooled to a fixed grid by bilinear samples, `avg` or
//!   `max`, `half_pixel` or `output_half_pixel` coordinates;
//! - `SwiGLU` (28): `a * sigmoid(alpha * a) * b`, two inputs of one shape;
//! - `TensorScatter` (24): a key/value cache written from per-batch positions, linear or circular;
//! - `TfIdfVectorizer` (9): counts of a pool's n-grams (with skips) in rows of integer tokens, as
//!   term frequencies, presence or weighted counts ([`tfidf`](super::ml::tfidf); string pools are refused);
//! - `TreeEnsemble` (`ai.onnx.ml` 5): decision tree ensembles, every node mode incl. set membership,
//!   the four aggregations, checked indices and acyclic trees ([`tree_ensemble`](super::ml::tree_ensemble));
//! - `Unique` (11): distinct elements or slices, sorted or in order of first occurrence, with
//!   indices, inverse indices and counts; their number a symbol bound when the node runs;
//! - `Upsample` (9): built as the `Resize` of opset 10 it became ([`upsample`](super::nn::upsample)).

#[cfg(feature = "image-decoder")]
use super::image_decoder;
use super::{array, control, math, ml, nn, random, training};
use tract_onnx::Onnx;

/// Registers every op of this module (replacing tract-onnx's builder where it has one).
pub(crate) fn register(onnx: &mut Onnx) {
    onnx.op_register.insert("Adagrad", training::optimizers::optimizer);
    onnx.op_register.insert("Adam", training::optimizers::optimizer);
    onnx.op_register.insert("AffineGrid", nn::affine_grid::affine_grid);
    onnx.op_register.insert("Momentum", training::optimizers::optimizer);
    onnx.op_register.insert("Attention", nn::attention::attention);
    onnx.op_register.insert("Binarizer", ml::binarizer::binarizer);
    onnx.op_register.insert("BitCast", array::bitcast::bitcast);
    onnx.op_register.insert("CausalConvWithState", nn::causal_conv::causal_conv);
    onnx.op_register.insert("CenterCropPad", array::center_crop_pad::center_crop_pad);
    onnx.op_register.insert("Col2Im", array::col2im::col2im);
    onnx.op_register.insert("CumProd", math::cumprod::cumprod);
    onnx.op_register.insert("DeformConv", nn::deform_conv::deform_conv);
    onnx.op_register.insert("Det", math::det::det);
    onnx.op_register.insert("FlexAttention", nn::flex_attention::flex_attention);
    #[cfg(feature = "image-decoder")]
    onnx.op_register.insert("ImageDecoder", image_decoder::image_decoder);
    onnx.op_register.insert("LinearAttention", nn::linear_attention::linear_attention);
    onnx.op_register.insert("Loop", control::loop_body::loop_);
    onnx.op_register.insert("LpPool", nn::lp_pool::lp_pool);
    onnx.op_register.insert("MaxUnpool", nn::max_unpool::max_unpool);
    onnx.op_register.insert("NegativeLogLikelihoodLoss", nn::loss::loss);
    onnx.op_register.insert("SoftmaxCrossEntropyLoss", nn::loss::loss);
    onnx.op_register.insert("OptionalGetElement", control::optional::optional_get_element);
    onnx.op_register.insert("OptionalHasElement", control::optional::optional_has_element);
    onnx.op_register.insert("Bernoulli", random::bernoulli::bernoulli);
    onnx.op_register.insert("Dropout", random::dropout::dropout);
    for op in ["RandomUniform", "RandomUniformLike", "RandomNormal", "RandomNormalLike"] {
        onnx.op_register.insert(op, random::sample::random_sample);
    }
    onnx.op_register.insert("ReverseSequence", array::reverse_sequence::reverse_sequence);
    onnx.op_register.insert("RoiAlign", nn::roi_align::roi_align);
    onnx.op_register.insert("SwiGLU", math::swiglu::swiglu);
    onnx.op_register.insert("TensorScatter", array::tensor_scatter::tensor_scatter);
    onnx.op_register.insert("TfIdfVectorizer", ml::tfidf::tfidf);
    onnx.op_register.insert("TreeEnsemble", ml::tree_ensemble::tree_ensemble);
    onnx.op_register.insert("Unique", array::unique::unique);
    onnx.op_register.insert("Upsample", nn::upsample::upsample);
}
