//! Our kernels in place of tract's slow ones, in the optimized plan.
//!
//! After tract's optimizer, a few of its ops still run on a generic path that is far behind
//! onnxruntime on real models (measured with `sliceops bench --profile`): a softmax over an axis
//! that is not the last, `Resize`, 2-D max pooling, `x^3`, arithmetic on broadcasting operands, and
//! moved axes and strided reads (a transpose, or the `Downsample` before a strided 1x1 convolution,
//! as one copy on our slicing kernel: [`PlannedView`]). Float32 max, min
//! and sigmoid that would drop NaN run as [`ScalarSteps`], [`PairExtremum`] and [`NanActivation`]
//! (sigmoid and tanh), which keep it, as do float `ReduceMax`/`ReduceMin` ([`NanReduce`]); float32
//! `HardSwish` and tanh-form `Gelu` run as [`DefinedActivation`], the definition where tract's
//! kernels overflow or cancel; `NonMaxSuppression`, `ScatterElements` and `NonZero` run as
//! [`BoxNms`], [`RowScatter`] and [`FlatNonZero`], over plain slices where tract's ops index element
//! by element.
//! [`use_our_kernels`] swaps them for ops of the same meaning, inputs and facts that run our
//! kernels, and gives constants whose unit axes tract left with unnatural strides fresh ones (its
//! binary chains took a slow path for them); nothing else in the plan changes. [`DirectConv`], [`RowLayerNorm`] and [`SmallMatMul`]
//! are the exceptions: passes put them in place before code generation (see `passes::direct_conv`,
//! `passes::layer_norm` and `passes::small_matmul`), with the weights, bias, clamp or scale they take
//! inside.

pub(crate) mod activation;
pub(crate) mod broadcast;
pub(crate) mod conv;
pub(crate) mod exact_div;
pub(crate) mod fitted;
pub(crate) mod int_pow;
pub(crate) mod keep_nan;
pub(crate) mod matmul;
pub(crate) mod maxpool;
mod nms;
mod nonzero;
pub(crate) mod pair_extremum;
pub(crate) mod reduce_nan;
pub(crate) mod resize;
mod scatter;
pub(crate) mod self_product;
pub(crate) mod softmax;

use tract_onnx::prelude::*;
use tract_onnx::tract_core::internal::AxisOp;
use tract_onnx::tract_core::ops::array::ScatterElements;
use tract_onnx::tract_core::ops::binary::{OptBinByScalar, OptBinChain, OptBinUnicast, TypedBinOp};
use tract_onnx::tract_core::ops::cnn::OptMaxPool;
use tract_onnx::tract_core::ops::element_wise::ElementWiseOp;
use tract_onnx::tract_core::ops::konst::Const;
use tract_onnx::tract_core::ops::nn::resize::Resize;
use tract_onnx::tract_core::ops::nn::{Reduce, Softmax};
use tract_onnx::tract_core::ops::Downsample;

use crate::slicing::PlannedView;
use tract_onnx_opl::non_max_suppression::NonMaxSuppression;
use tract_onnx_opl::non_zero::NonZero;

pub(crate) use crate::ops::nn::row_layer_norm::RowLayerNorm;
pub(crate) use activation::DefinedActivation;
pub(crate) use broadcast::BroadcastBin;
pub(crate) use conv::DirectConv;
pub(crate) use exact_div::ExactDiv;
pub(crate) use fitted::NanActivation;
pub(crate) use int_pow::CubePow;
pub(crate) use keep_nan::ScalarSteps;
pub(crate) use matmul::SmallMatMul;
pub(crate) use maxpool::PlaneMaxPool;
pub(crate) use nms::BoxNms;
pub(crate) use nonzero::FlatNonZero;
pub(crate) use pair_extremum::PairExtremum;
pub(crate) use reduce_nan::NanReduce;
pub(crate) use resize::RowResize;
pub(crate) use scatter::RowScatter;
pub(crate) use self_product::SelfProduct;
pub(crate) use softmax::AxisSoftmax;

/// Replaces, in an optimized `model`, every tract op one of ours runs faster (see the module docs);
/// returns how many nodes it changed.
/// `konst` with its tensor laid out with the natural strides of its shape, when it is not (`None`
/// when it is, or carries an exotic fact). tract gives a constant broadcast to a higher rank (ONNX's
/// `[C, 1, 1]` against `[N, C, H, W]`) its new unit axis by `Tensor::insert_axis`, which copies the
/// next axis' stride rather than computing the natural one: the tensor is then not "natural" by
/// tract's own test, and its binary chains take their slow path for it. A per-channel normalization
/// `[1, 3, 320, 320] - [3, 1, 1]`, then `* [3, 1, 1]` (SSDlite320's input), ran in 1.15 ms, against
/// 0.086 ms with the constants shaped `[1, 3, 1, 1]` in the file. The values stay the same.
fn with_natural_strides(konst: &Const) -> TractResult<Option<Const>> {
    let t = konst.val();
    let natural = Tensor::natural_strides(t.shape());
    // Only strides of unit axes may differ (what `insert_axis` leaves): the values lie in order.
    let unit_only = t.shape().iter().zip(t.strides().iter().zip(&natural)).all(|(&d, (s, n))| d == 1 || s == n);
    if konst.exotic_fact().is_some() || t.strides() == &*natural || !unit_only {
        return Ok(None);
    }
    // Through a flat shape, so that the strides are computed again (setting the same shape keeps them).
    let fresh = (**t).clone().into_shape(&[t.len()])?.into_shape(t.shape())?;
    Ok(Some(Const::new(Arc::new(fresh))?))
}

pub(crate) fn use_our_kernels(model: &mut TypedModel) -> TractResult<usize> {
    let mut replaced = 0;
    for id in 0..model.nodes.len() {
        let node = &model.nodes[id];
        if let Some(konst) = node.op_as::<Const>() {
            if let Some(natural) = with_natural_strides(konst)? {
                model.nodes[id].op = Box::new(natural);
            }
            continue;
        }
        let op: Option<Box<dyn TypedOp>> = if let Some(softmax) = node.op_as::<Softmax>() {
            let Some(&input) = node.inputs.first() else { continue };
            let fact = model.outlet_fact(input)?;
            AxisSoftmax::replacing(softmax, fact).map(|op| Box::new(op) as _)
        } else if let Some(resize) = node.op_as::<Resize>() {
            Some(Box::new(RowResize { stock: resize.clone() }))
        } else if let Some(pool) = node.op_as::<OptMaxPool>() {
            PlaneMaxPool::replacing(pool).map(|op| Box::new(op) as _)
        } else if let Some(ew) = node.op_as::<ElementWiseOp>() {
            let Some(&input) = node.inputs.first() else { continue };
            let fact = model.outlet_fact(input)?;
            if let Some(op) = CubePow::replacing(ew) {
                Some(Box::new(op) as _)
            } else if let Some(op) = DefinedActivation::replacing(ew, fact) {
                Some(Box::new(op) as _)
            } else {
                NanActivation::replacing(ew, fact).map(|op| Box::new(op) as _)
            }
        } else if node.op_is::<OptBinByScalar>() || node.op_is::<OptBinChain>() {
            ScalarSteps::replacing(model, node)?.map(|op| Box::new(op) as _)
        } else if node.op_is::<OptBinUnicast>() {
            PairExtremum::replacing(model, node)?.map(|op| Box::new(op) as _)
        } else if let (Some(bin), [a, b]) = (node.op_as::<TypedBinOp>(), &*node.inputs) {
            if let Some(op) = ScalarSteps::replacing(model, node)? {
                Some(Box::new(op) as _)
            } else if let Some(op) = PairExtremum::replacing(model, node)? {
                Some(Box::new(op) as _)
            } else {
                BroadcastBin::replacing(bin, model.outlet_fact(*a)?, model.outlet_fact(*b)?).map(|op| Box::new(op) as _)
            }
        } else if let (Some(reduce), [input]) = (node.op_as::<Reduce>(), &*node.inputs) {
            NanReduce::replacing(reduce, model.outlet_fact(*input)?).map(|op| Box::new(op) as _)
        } else if let Some(nms) = node.op_as::<NonMaxSuppression>() {
            Some(Box::new(BoxNms { stock: nms.clone() }))
        } else if let Some(nonzero) = node.op_as::<NonZero>() {
            Some(Box::new(FlatNonZero { stock: nonzero.clone() }))
        } else if let Some(scatter) = node.op_as::<ScatterElements>() {
            Some(Box::new(RowScatter { stock: scatter.clone() }))
        } else if let (Some(_), [input]) = (node.op_as::<AxisOp>(), &*node.inputs) {
            PlannedView::replacing_move(node, model.outlet_fact(*input)?).map(|op| Box::new(op) as _)
        } else if let (true, [input]) = (node.op_is::<Downsample>(), &*node.inputs) {
            PlannedView::replacing_downsample(node, model.outlet_fact(*input)?).map(|op| Box::new(op) as _)
        } else {
            None
        };
        if let Some(op) = op {
            model.nodes[id].op = op;
            replaced += 1;
        }
    }
    Ok(replaced)
}
