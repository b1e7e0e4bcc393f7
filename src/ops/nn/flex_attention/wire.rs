//! FlexAttention's parts as tract's ops, between which the analysis splices the modifier graphs:
//! [`check`] the inputs, [`scores`] (`Q Kᵀ` scaled, in the softmax precision), [`softmax`] over the
//! keys, [`output`] (the probabilities times V, in V's type).
//!
//! Rounding follows onnx's reference: Q and K are each multiplied by the square root of the scale in
//! their own type, `Q Kᵀ` is computed in that type (float16 as numpy does it: summed in float32,
//! rounded once), then cast to the precision, where everything else is computed.

use super::scale::{root_scale, RootScale, ScaleOf};
use super::FlexAttention;
use crate::ops::nn::attention::wire::{heads, same_head_size, same_kv_heads, scores as qk, weighted, Heads};
use crate::ops::HalfSoftmax;
use tract_onnx::prelude::*;
use tract_onnx::tract_core::ops::cast::cast;
use tract_onnx::tract_core::ops::change_axes::wire_with_rank_broadcast;
use tract_onnx::tract_core::ops::nn::{Softmax, SoftmaxKind};

/// What the checks of Q, K and V settle.
pub(crate) struct Plan {
    /// The inputs' type (Y's too).
    pub dt: DatumType,
    /// The type of the scores, the probabilities and the product with V.
    pub precision: DatumType,
    /// How query heads read key/value heads.
    pub(crate) heads: Heads,
    /// The square root of the scale, as Q and K are multiplied by it (in float32); `None`: the
    /// default scale over a head size known only at run time ([`RootScale`] computes it).
    pub root_scale: Option<f32>,
    /// The scores' shape `(B, Hq, L, S)`: the modifier graphs take and return it.
    pub scores_shape: TVec<TDim>,
    /// The node, for errors.
    pub node: String,
}

fn show(d: &TDim) -> String {
    crate::dims::format_dim(d)
}

fn show_all(dims: &[TDim]) -> String {
    dims.iter().map(show).collect::<Vec<_>>().join(", ")
}

/// Checks Q, K and V (types, ranks, dims that must agree) and settles the computation.
pub(crate) fn check(op: &FlexAttention, q: &TypedFact, k: &TypedFact, v: &TypedFact) -> TractResult<Plan> {
    let l = &op.label;
    let dt = q.datum_type;
    let float = |t: DatumType| matches!(t, DatumType::F16 | DatumType::F32 | DatumType::F64);
    if !float(dt) {
        return Err(match op.precision {
            None => l.err(format!(
                "Q is {dt:?}: inputs other than float16, float and double need softmax_precision, and FlexAttention \
                 takes only those (bfloat16 is not run)"
            )),
            Some(p) => l.err(format!(
                "Q is {dt:?}: FlexAttention takes float16, float or double inputs (softmax_precision {p:?} given)"
            )),
        });
    }
    for (name, f) in [("K", k), ("V", v)] {
        if f.datum_type != dt {
            return Err(l.err(format!("{name} is {:?} but Q is {dt:?}: Q, K and V must have one type", f.datum_type)));
        }
    }
    for (name, f) in [("Q", q), ("K", k), ("V", v)] {
        if f.rank() != 4 {
            return Err(l.err(format!(
                "{name} has shape [{}]: Q, K and V must have rank 4 (batch, heads, sequence, head size)",
                show_all(&f.shape.to_tvec())
            )));
        }
    }
    let (qd, kd, vd) = (q.shape.to_tvec(), k.shape.to_tvec(), v.shape.to_tvec());
    if qd[0] != kd[0] || qd[0] != vd[0] {
        return Err(l.err(format!(
            "the batch sizes differ: Q has {}, K {} and V {}",
            show(&qd[0]),
            show(&kd[0]),
            show(&vd[0])
        )));
    }
    same_kv_heads(l, &kd, &vd)?;
    same_head_size(l, &qd, &kd)?;
    let heads = heads(l, &qd[1], &kd[1])?;
    // As the reference: 1/sqrt(E) in double, then float32, its square root in float32.
    let root_scale = match (op.scale, qd[3].to_i64()) {
        (Some(s), _) => Some(s.sqrt()),
        // E is a dim: not negative.
        (None, Ok(e)) => Some(root_scale(usize::try_from(e)?)),
        (None, Err(_)) => None,
    };
    let precision = op.precision.unwrap_or(if dt == DatumType::F64 { DatumType::F64 } else { DatumType::F32 });
    let scores_shape = tvec![qd[0].clone(), qd[1].clone(), qd[2].clone(), kd[2].clone()];
    Ok(Plan { dt, precision, heads, root_scale, scores_shape, node: l.node.clone() })
}

/// `x` cast to `dt` (itself when it has that type already).
fn cast_to(model: &mut TypedModel, name: String, x: OutletId, dt: DatumType) -> TractResult<OutletId> {
    if model.outlet_fact(x)?.datum_type == dt {
        return Ok(x);
    }
    Ok(model.wire_node(name, cast(dt), &[x])?[0])
}

/// A product computed in `dt` as numpy computes it: float16 summed in float32 and rounded once.
fn product(
    prefix: &str,
    model: &mut TypedModel,
    dt: DatumType,
    a: OutletId,
    b: OutletId,
    einsum: impl FnOnce(&mut TypedModel, OutletId, OutletId, DatumType) -> TractResult<OutletId>,
) -> TractResult<OutletId> {
    if dt != DatumType::F16 {
        let a = cast_to(model, format!("{prefix}.a_cast"), a, dt)?;
        let b = cast_to(model, format!("{prefix}.b_cast"), b, dt)?;
        return einsum(model, a, b, dt);
    }
    let a = cast_to(model, format!("{prefix}.a_f32"), a, DatumType::F32)?;
    let b = cast_to(model, format!("{prefix}.b_f32"), b, DatumType::F32)?;
    let p = einsum(model, a, b, DatumType::F32)?;
    cast_to(model, format!("{prefix}.f16"), p, DatumType::F16)
}

/// The scaled scores `(Q √s)(K √s)ᵀ` computed in the inputs' type, cast to the precision:
/// `(B, Hq, L, S)`.
pub(crate) fn scores(
    plan: &Plan,
    prefix: &str,
    model: &mut TypedModel,
    q: OutletId,
    k: OutletId,
) -> TractResult<OutletId> {
    let root = match plan.root_scale {
        Some(r) => {
            let root = tensor0(r).cast_to_dt(plan.dt)?.into_owned().broadcast_into_rank(4)?;
            model.add_const(format!("{prefix}.root_scale"), root)?
        }
        None => {
            let op = RootScale { dt: plan.dt, of: ScaleOf::Flex, node: plan.node.clone() };
            model.wire_node(format!("{prefix}.root_scale"), op, &[q])?[0]
        }
    };
    let mul = || -> Box<dyn TypedOp> { Box::new(tract_onnx::tract_core::ops::math::mul()) };
    let qs = wire_with_rank_broadcast(format!("{prefix}.q_scaled"), model, mul(), &[q, root])?[0];
    let ks = wire_with_rank_broadcast(format!("{prefix}.k_scaled"), model, mul(), &[k, root])?[0];
    let heads = &plan.heads;
    let s = product(&format!("{prefix}.qk"), model, plan.dt, qs, ks, |m, a, b, dt| qk(prefix, m, heads, a, b, dt))?;
    cast_to(model, format!("{prefix}.scores"), s, plan.precision)
}

/// The softmax over the last axis (the keys), in the scores' type; a row of -inf is NaN, as in the
/// specification's Softmax. Float16 (`softmax_precision` 10) rounds as numpy does ([`HalfSoftmax`]).
pub(crate) fn softmax(plan: &Plan, prefix: &str, model: &mut TypedModel, scores: OutletId) -> TractResult<OutletId> {
    let name = format!("{prefix}.softmax");
    if model.outlet_fact(scores)?.datum_type == DatumType::F16 {
        let op = HalfSoftmax { axis: 3, count: 1, node: plan.node.clone() };
        return Ok(model.wire_node(name, op, &[scores])?[0]);
    }
    let op = Softmax { axes: tvec![3], quant_output_dt: None, kind: SoftmaxKind::Softmax };
    Ok(model.wire_node(name, op, &[scores])?[0])
}

/// The probabilities times V, computed in the precision, cast to V's type: `(B, Hq, L, Ev)`.
pub(crate) fn output(
    plan: &Plan,
    prefix: &str,
    model: &mut TypedModel,
    probs: OutletId,
    v: OutletId,
) -> TractResult<OutletId> {
    let v = cast_to(model, format!("{prefix}.v_cast"), v, plan.precision)?;
    let heads = &plan.heads;
    let y = product(&format!("{prefix}.pv"), model, plan.precision, probs, v, |m, a, b, dt| {
        weighted(prefix, m, heads, a, b, dt)
    })?;
    cast_to(model, format!("{prefix}.y"), y, plan.dt)
}
