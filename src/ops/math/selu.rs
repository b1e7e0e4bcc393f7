//! `Selu` with the specification's default `alpha` and `gamma` (tract-onnx's builder defaulted to
//! `1.67326` and `1.0507`, five and six digits: `Selu(1e30)` was `1.0507e30`, 30 ulps from onnxruntime's
//! and onnx's reference `1.0507010e30`). The op is tract's own.

use tract_onnx::model::ParsingContext;
use tract_onnx::pb::NodeProto;
use tract_onnx::prelude::*;
use tract_onnx::tract_hir::internal::InferenceOp;
use tract_onnx::tract_hir::ops::activations::Selu;
use tract_onnx::tract_hir::ops::expandable::expand;

/// The default `alpha`, as the specification writes it (a float32 value).
#[allow(clippy::excessive_precision)]
pub(crate) const ALPHA: f32 = 1.67326319217681884765625;
/// The default `gamma`, as the specification writes it (a float32 value).
#[allow(clippy::excessive_precision)]
pub(crate) const GAMMA: f32 = 1.05070102214813232421875;

/// The `Selu` builder: `gamma * x` for `x > 0`, `gamma * (alpha * exp(x) - alpha)` elsewhere.
pub(crate) fn selu(_ctx: &ParsingContext, node: &NodeProto) -> TractResult<(Box<dyn InferenceOp>, Vec<String>)> {
    let label = crate::node::node_label(node);
    let alpha = crate::node::attrs::float(&label, node, "alpha")?.unwrap_or(ALPHA);
    let gamma = crate::node::attrs::float(&label, node, "gamma")?.unwrap_or(GAMMA);
    Ok((expand(Selu(alpha, gamma)), vec![]))
}
