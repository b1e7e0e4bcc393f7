//! Attention wired from tract's ops, with typed facts (symbolic dims included) for its inputs.

use super::{Attention, AttentionSoftmax, QkOutput};
use crate::ops::nn::flex_attention::scale::{attention_root_scale, RootScale, ScaleOf};
use tract_onnx::prelude::*;
use tract_onnx::tract_core::ops::array::TypedConcat;
use tract_onnx::tract_core::ops::change_axes::{wire_with_rank_broadcast, AxisOp};
use tract_onnx::tract_core::ops::einsum::EinSum;
use tract_onnx::tract_hir::internal::*;

/// How query heads map onto key/value heads.
pub(crate) enum Heads {
    /// As many of each: head `h` reads head `h`.
    Same,
    /// `kv` key/value heads, each read by `group` consecutive query heads.
    Grouped { q: usize, kv: usize, group: usize },
}

fn dims(model: &TypedModel, o: OutletId) -> TractResult<TVec<TDim>> {
    Ok(model.outlet_fact(o)?.shape.to_tvec())
}

fn show(d: &TDim) -> String {
    crate::dims::format_dim(d)
}

/// The whole node: returns its outputs in ONNX order (those asked for).
pub(crate) fn wire(
    op: &Attention,
    prefix: &str,
    model: &mut TypedModel,
    inputs: &[OutletId],
) -> TractResult<TVec<OutletId>> {
    let l = &op.label;
    ensure!(inputs.len() == op.input_count(), l.err(format!("expected {} inputs", op.input_count())));
    let [mask, past_key, past_value, nonpad] = op.slots();
    let q_fact = model.outlet_fact(inputs[0])?.clone();
    let dt = q_fact.datum_type;
    if !matches!(dt, DatumType::F16 | DatumType::F32 | DatumType::F64) {
        return Err(l.err(format!("Q must be float16, float or double, got {dt:?}")));
    }
    let k_dt = model.outlet_fact(inputs[1])?.datum_type;
    let v_dt = model.outlet_fact(inputs[2])?.datum_type;
    if k_dt != dt {
        return Err(l.err(format!("K has type {k_dt:?} but Q has {dt:?}: they must be the same")));
    }
    if !matches!(v_dt, DatumType::F16 | DatumType::F32 | DatumType::F64) {
        return Err(l.err(format!("V must be float16, float or double, got {v_dt:?}")));
    }
    let rank = q_fact.rank();
    for (name, i) in [("K", 1), ("V", 2)] {
        let r = model.outlet_fact(inputs[i])?.rank();
        if r != rank {
            return Err(l.err(format!("Q has rank {rank} but {name} has rank {r}: they must be equal")));
        }
    }
    let (q4, k4, v4) = match rank {
        3 => {
            let (Some(qh), Some(kvh)) = (op.q_heads, op.kv_heads) else {
                return Err(l.err("3D inputs need the attributes q_num_heads and kv_num_heads"));
            };
            (
                split_heads(op, model, &format!("{prefix}.q"), "Q", inputs[0], qh)?,
                split_heads(op, model, &format!("{prefix}.k"), "K", inputs[1], kvh)?,
                split_heads(op, model, &format!("{prefix}.v"), "V", inputs[2], kvh)?,
            )
        }
        4 => {
            for (name, attr, i) in [("Q", op.q_heads, 0), ("K", op.kv_heads, 1), ("V", op.kv_heads, 2)] {
                let d = dims(model, inputs[i])?[1].clone();
                if let (Some(h), Ok(n)) = (attr, d.to_i64()) {
                    if usize::try_from(n).ok() != Some(h) {
                        return Err(l.err(format!("{name} has {n} heads but the attributes say {h}")));
                    }
                }
            }
            (inputs[0], inputs[1], inputs[2])
        }
        r => return Err(l.err(format!("Q, K and V must have rank 3 or 4, got {r}"))),
    };
    let (qd, kd, vd) = (dims(model, q4)?, dims(model, k4)?, dims(model, v4)?);
    same_head_size(l, &qd, &kd)?;
    same_kv_heads(l, &kd, &vd)?;
    // The cache: past keys and values come first.
    let (key, value) = match (past_key, past_value) {
        (Some(pk), Some(pv)) => {
            let mut cat = |name: &str, past: OutletId, new: OutletId| -> TractResult<OutletId> {
                let (pf, nf) = (model.outlet_fact(past)?.clone(), model.outlet_fact(new)?.clone());
                if pf.datum_type != nf.datum_type {
                    return Err(l.err(format!(
                        "past_{name} has type {:?} but the new {name}s have {:?}",
                        pf.datum_type, nf.datum_type
                    )));
                }
                let (p, n) = (pf.shape.to_tvec(), nf.shape.to_tvec());
                if p.len() != 4 || p[0] != n[0] || p[1] != n[1] || p[3] != n[3] {
                    let all = |d: &TVec<TDim>| d.iter().map(show).collect::<Vec<_>>().join(", ");
                    return Err(l.err(format!(
                        "past_{name} has shape [{}], which does not extend the new {name}s [{}] along the sequence",
                        all(&p),
                        all(&n)
                    )));
                }
                Ok(model.wire_node(format!("{prefix}.present_{name}"), TypedConcat { axis: 2 }, &[past, new])?[0])
            };
            (cat("key", inputs[pk], k4)?, cat("value", inputs[pv], v4)?)
        }
        _ => (k4, v4),
    };
    let heads = heads(&op.label, &qd[1], &kd[1])?;
    // Q and K each scaled by the square root of the scale, in Q's type (the default over a symbolic
    // head size computed from Q's shape when run).
    let root = match (op.scale, qd[3].to_i64()) {
        (Some(s), _) => Some(f64::from(s).sqrt()),
        // A dim: not negative.
        (None, Ok(d)) => Some(attention_root_scale(usize::try_from(d)?)),
        (None, Err(_)) => None,
    };
    let factor = match root {
        Some(r) => {
            let factor = tensor0(r).cast_to_dt(dt)?.into_owned().broadcast_into_rank(4)?;
            model.add_const(format!("{prefix}.scale"), factor)?
        }
        None => {
            let root = RootScale { dt, of: ScaleOf::Attention, node: l.node.clone() };
            model.wire_node(format!("{prefix}.scale"), root, &[q4])?[0]
        }
    };
    let qs = wire_with_rank_broadcast(format!("{prefix}.q_scaled"), model, tract_core_mul(), &[q4, factor])?[0];
    let ks = wire_with_rank_broadcast(format!("{prefix}.k_scaled"), model, tract_core_mul(), &[key, factor])?[0];
    let scores = scores(prefix, model, &heads, qs, ks, dt)?;
    // The masks, the soft cap and the softmax.
    let qk_extra = op.out_qk && matches!(op.qk_mode, QkOutput::Capped | QkOutput::Biased);
    let softmax = AttentionSoftmax {
        node: op.label.node.clone(),
        softcap: op.softcap,
        causal: op.causal,
        left_window: op.left_window,
        right_window: op.right_window,
        has_mask: mask.is_some(),
        has_past: past_key.is_some(),
        has_nonpad: nonpad.is_some(),
        // By default the scores' type; but float16 soft-capped scores are float32 in the reference
        // (its cap is a float32 number), and so is their softmax.
        precision: op.precision.unwrap_or(if dt == DatumType::F16 && op.softcap > 0.0 { DatumType::F32 } else { dt }),
        output: dt,
        qk_output: if qk_extra { Some(op.qk_mode) } else { None },
    };
    let mut soft_inputs = tvec![scores];
    soft_inputs.extend(mask.map(|i| inputs[i]));
    soft_inputs.extend(past_key.map(|i| inputs[i]));
    soft_inputs.extend(nonpad.map(|i| inputs[i]));
    let soft = model.wire_node(format!("{prefix}.softmax"), softmax, &soft_inputs)?;
    let probs = soft[0];
    let value_t = if v_dt == dt {
        value
    } else {
        model.wire_node(format!("{prefix}.v_cast"), tract_onnx::tract_core::ops::cast::cast(dt), &[value])?[0]
    };
    let y4 = weighted(prefix, model, &heads, probs, value_t, dt)?;
    let y = if rank == 3 {
        let yd = dims(model, y4)?;
        let moved = model.wire_node(format!("{prefix}.y_transpose"), AxisOp::Move(1, 2), &[y4])?[0];
        let hidden = yd[1].clone() * yd[3].clone();
        model.wire_node(
            format!("{prefix}.y_merge"),
            AxisOp::Reshape(2, tvec![yd[1].clone(), yd[3].clone()], tvec![hidden]),
            &[moved],
        )?[0]
    } else {
        y4
    };
    let mut outputs = tvec![y];
    if op.out_present_key {
        outputs.push(key);
    }
    if op.out_present_value {
        outputs.push(value);
    }
    if op.out_qk {
        outputs.push(match op.qk_mode {
            QkOutput::Scores => scores,
            QkOutput::Capped | QkOutput::Biased => soft[1],
            QkOutput::Probabilities => probs,
        });
    }
    Ok(outputs)
}

fn tract_core_mul() -> Box<dyn TypedOp> {
    Box::new(tract_onnx::tract_core::ops::math::mul())
}

/// `(batch, seq, heads * size)` to `(batch, heads, seq, size)`.
fn split_heads(
    op: &Attention,
    model: &mut TypedModel,
    prefix: &str,
    name: &str,
    x: OutletId,
    heads: usize,
) -> TractResult<OutletId> {
    let d = dims(model, x)?;
    let hidden = d[2].to_i64().map_err(|_| {
        op.label.err(format!("{name}'s hidden size {} must be known to split it into {heads} heads", show(&d[2])))
    })?;
    let h = i64::try_from(heads).map_err(|_| op.label.err(format!("{heads} heads")))?;
    if hidden % h != 0 {
        return Err(op.label.err(format!("{name}'s hidden size {hidden} is not a multiple of its {heads} heads")));
    }
    let split = AxisOp::Reshape(2, tvec![hidden.to_dim()], tvec![h.to_dim(), (hidden / h).to_dim()]);
    let x = model.wire_node(format!("{prefix}.split_heads"), split, &[x])?[0];
    Ok(model.wire_node(format!("{prefix}.heads_first"), AxisOp::Move(2, 1), &[x])?[0])
}

/// Checks that Q and K (rank 4, `(batch, heads, sequence, head size)`) have one head size; the error
/// names the node `label`.
pub(crate) fn same_head_size(label: &crate::node::Label, q: &[TDim], k: &[TDim]) -> TractResult<()> {
    if q[3] != k[3] {
        return Err(label.err(format!("Q's head size {} differs from K's {}", show(&q[3]), show(&k[3]))));
    }
    Ok(())
}

/// Checks that K and V (rank 4) have as many heads of as many positions; the error names the node
/// `label`.
pub(crate) fn same_kv_heads(label: &crate::node::Label, k: &[TDim], v: &[TDim]) -> TractResult<()> {
    if k[1] != v[1] || k[2] != v[2] {
        return Err(label.err(format!(
            "K has {} heads of {} positions but V has {} of {}: they must agree",
            show(&k[1]),
            show(&k[2]),
            show(&v[1]),
            show(&v[2])
        )));
    }
    Ok(())
}

/// The head mapping of `q` query heads over `kv` key/value heads (grouped ones must be known
/// numbers, `q` a multiple of `kv`); errors name the node `label`.
pub(crate) fn heads(label: &crate::node::Label, q: &TDim, kv: &TDim) -> TractResult<Heads> {
    if q == kv {
        return Ok(Heads::Same);
    }
    let (Ok(qn), Ok(kvn)) = (q.to_i64(), kv.to_i64()) else {
        return Err(label.err(format!(
            "Q has {} heads and K and V {}: grouped heads must be known numbers",
            show(q),
            show(kv)
        )));
    };
    let (qn, kvn) = (usize::try_from(qn)?, usize::try_from(kvn)?);
    if kvn == 0 || qn % kvn != 0 {
        return Err(label.err(format!("Q has {qn} heads, not a multiple of the {kvn} heads of K and V")));
    }
    Ok(Heads::Grouped { q: qn, kv: kvn, group: qn / kvn })
}

/// Splits axis 1 (`q` heads) into `(kv, group)`, or merges them back.
fn group_axis(model: &mut TypedModel, name: String, x: OutletId, heads: &Heads, split: bool) -> TractResult<OutletId> {
    let Heads::Grouped { q, kv, group } = heads else { return Ok(x) };
    let (one, two) = (tvec![q.to_dim()], tvec![kv.to_dim(), group.to_dim()]);
    let op = if split { AxisOp::Reshape(1, one, two) } else { AxisOp::Reshape(1, two, one) };
    Ok(model.wire_node(name, op, &[x])?[0])
}

/// `Q Kᵀ` computed in `dt`: `(batch, q_heads, q_seq, total)`.
pub(crate) fn scores(
    prefix: &str,
    model: &mut TypedModel,
    heads: &Heads,
    q: OutletId,
    k: OutletId,
    dt: DatumType,
) -> TractResult<OutletId> {
    let q = group_axis(model, format!("{prefix}.q_groups"), q, heads, true)?;
    let expr = if matches!(heads, Heads::Same) { "bhsd,bhtd->bhst" } else { "bkgsd,bktd->bkgst" };
    let s = model.wire_node(format!("{prefix}.qk"), EinSum::new(expr.parse()?, dt), &[q, k])?[0];
    group_axis(model, format!("{prefix}.qk_heads"), s, heads, false)
}

/// The probabilities times V computed in `dt`: `(batch, q_heads, q_seq, v_head_size)`.
pub(crate) fn weighted(
    prefix: &str,
    model: &mut TypedModel,
    heads: &Heads,
    p: OutletId,
    v: OutletId,
    dt: DatumType,
) -> TractResult<OutletId> {
    let p = group_axis(model, format!("{prefix}.p_groups"), p, heads, true)?;
    let expr = if matches!(heads, Heads::Same) { "bhst,bhtv->bhsv" } else { "bkgst,bktv->bkgsv" };
    let y = model.wire_node(format!("{prefix}.pv"), EinSum::new(expr.parse()?, dt), &[p, v])?[0];
    group_axis(model, format!("{prefix}.y_heads"), y, heads, false)
}
