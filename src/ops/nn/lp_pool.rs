//! ONNX `LpPool` (opsets 2-22): `(Σ |x|^p)^(1/p)` over each window, padding counting as zeros.
//!
//! Wired as tract's ops: `abs`, a power, tract's sum pooling (the window rules of ONNX pooling:
//! `pads`, `auto_pad`, `strides`, `dilations`, `ceil_mode`), and the inverse power.

use crate::node::attrs;
use crate::node::expanded::{Expanded, Io};
use crate::node::Label;
use tract_onnx::model::ParsingContext;
use tract_onnx::pb::NodeProto;
use tract_onnx::prelude::*;
use tract_onnx::tract_core::ops::change_axes::wire_with_rank_broadcast;
use tract_onnx::tract_core::ops::cnn::{PaddingSpec, PoolSpec, SumPool};
use tract_onnx::tract_core::ops::math;
use tract_onnx::tract_core::ops::nn::DataFormat;
use tract_onnx::tract_hir::internal::*;

/// The LpPool builder.
pub(crate) fn lp_pool(_ctx: &ParsingContext, node: &NodeProto) -> TractResult<(Box<dyn InferenceOp>, Vec<String>)> {
    let label = crate::node::node_label(node);
    let p = attrs::int(&label, node, "p")?.unwrap_or(2);
    if p < 1 {
        return Err(label.err(format!("attribute p is {p}: it must be at least 1")));
    }
    let positive = |name: &str, v: Option<Vec<i64>>| -> TractResult<Option<TVec<usize>>> {
        v.map(|v| {
            v.iter()
                .map(|&x| match usize::try_from(x) {
                    Ok(u) if u >= 1 || name == "pads" => Ok(u),
                    _ => Err(label.err(format!("attribute {name} holds {x}"))),
                })
                .collect()
        })
        .transpose()
    };
    let Some(kernel) = positive("kernel_shape", attrs::ints(&label, node, "kernel_shape")?)? else {
        return Err(label.err("the attribute kernel_shape is required"));
    };
    let n = kernel.len();
    let strides = positive("strides", attrs::ints(&label, node, "strides")?)?;
    let dilations = positive("dilations", attrs::ints(&label, node, "dilations")?)?;
    let pads = positive("pads", attrs::ints(&label, node, "pads")?)?;
    for (name, len, want) in [
        ("strides", strides.as_ref().map(|v| v.len()), n),
        ("dilations", dilations.as_ref().map(|v| v.len()), n),
        ("pads", pads.as_ref().map(|v| v.len()), 2 * n),
    ] {
        if let Some(len) = len.filter(|&l| l != want) {
            return Err(label.err(format!("attribute {name} has {len} values, {want} expected for a {n}-D kernel")));
        }
    }
    let ceil = attrs::flag(&label, node, "ceil_mode")?;
    let auto_pad = attrs::string(&label, node, "auto_pad")?.unwrap_or_else(|| "NOTSET".into());
    let padding = match (auto_pad.as_str(), pads) {
        ("NOTSET", Some(p)) => PaddingSpec::ExplicitOnnxPool(p[..n].into(), p[n..].into(), ceil),
        ("NOTSET", None) => PaddingSpec::ExplicitOnnxPool(tvec![0; n], tvec![0; n], ceil),
        ("VALID", None) => PaddingSpec::Valid,
        ("SAME_UPPER", None) => PaddingSpec::SameUpper,
        ("SAME_LOWER", None) => PaddingSpec::SameLower,
        (other, Some(_)) if other != "NOTSET" => {
            return Err(label.err(format!("auto_pad is {other}: pads cannot be given with it")))
        }
        (other, _) => {
            return Err(label.err(format!("auto_pad is {other:?}: it must be NOTSET, VALID, SAME_UPPER or SAME_LOWER")))
        }
    };
    let spec = PoolSpec {
        data_format: DataFormat::NCHW,
        kernel_shape: kernel,
        padding,
        dilations,
        strides,
        input_channels: 0,
        output_channels: 0,
    };
    Expanded::new("LpPool", LpPool { label, p, spec }, 1, LpPool::rules, LpPool::wire).built()
}

/// `LpPool` with its pooling spec (channels filled in when wired).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct LpPool {
    /// The node, for errors.
    pub label: Label,
    /// The norm's order.
    pub p: i64,
    /// The windows.
    pub spec: PoolSpec,
}

impl LpPool {
    fn rules<'r>(&'r self, s: &mut Solver<'r>, Io { inputs, outputs }: Io<'r>) -> InferenceResult {
        s.equals(&outputs[0].datum_type, &inputs[0].datum_type)?;
        s.equals(&outputs[0].rank, &inputs[0].rank)?;
        s.equals(&outputs[0].shape[0], &inputs[0].shape[0])?;
        s.equals(&outputs[0].shape[1], &inputs[0].shape[1])
    }

    fn wire(&self, prefix: &str, model: &mut TypedModel, inputs: &[OutletId]) -> TractResult<TVec<OutletId>> {
        let fact = model.outlet_fact(inputs[0])?.clone();
        let dt = fact.datum_type;
        if !matches!(dt, DatumType::F16 | DatumType::F32 | DatumType::F64) {
            return Err(self.label.err(format!("X must be float16, float or double, got {dt:?}")));
        }
        let n = self.spec.kernel_shape.len();
        if fact.rank() != n + 2 {
            return Err(self.label.err(format!(
                "X has rank {} but the kernel has {n} dims: X must be (N, C, {n} spatial dims)",
                fact.rank()
            )));
        }
        let c = fact.shape[1].to_usize().map_err(|_| {
            self.label.err(format!("the channel count {} must be known", crate::dims::format_dim(&fact.shape[1])))
        })?;
        let spec = PoolSpec { input_channels: c, output_channels: c, ..self.spec.clone() };
        let abs = model.wire_node(format!("{prefix}.abs"), math::abs(), inputs)?[0];
        let powered = self.power(model, &format!("{prefix}.pow"), abs, self.p as f64, dt)?;
        let sum = SumPool { pool_spec: spec, count_include_pad: true, normalize: false };
        let summed = model.wire_node(format!("{prefix}.sum"), sum, &[powered])?[0];
        Ok(tvec![self.power(model, &format!("{prefix}.root"), summed, 1.0 / self.p as f64, dt)?])
    }
}

impl LpPool {
    fn power(&self, model: &mut TypedModel, name: &str, x: OutletId, e: f64, dt: DatumType) -> TractResult<OutletId> {
        if e == 1.0 {
            return Ok(x);
        }
        if e == 2.0 {
            return Ok(model.wire_node(name, math::square(), &[x])?[0]);
        }
        if e == 0.5 {
            return Ok(model.wire_node(name, math::sqrt(), &[x])?[0]);
        }
        let rank = model.outlet_fact(x)?.rank();
        let k = tensor0(e).cast_to_dt(dt)?.into_owned().broadcast_into_rank(rank)?;
        let k = model.add_const(format!("{name}.exponent"), k)?;
        Ok(wire_with_rank_broadcast(name, model, math::pow(), &[x, k])?[0])
    }
}
