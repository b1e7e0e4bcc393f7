//! ONNX `LinearAttention` (opset 27): recurrent linear attention over a `[dk, dv]` state per
//! key/value head, with the `linear`, `gated`, `delta` and `gated_delta` update rules and grouped
//! query heads.
//!
//! Inputs are packed `[B, T, heads * d]`. At each step `t`, per batch and key/value head: with
//! gating, `S *= exp(decay_t)` (decay per head, or per head and key dim, broadcast over `dv`); with the
//! delta rule, `v_t = beta_t * (v_t - S^T k_t)`; then `S += k_t v_t^T`, and each query head of the
//! group reads `o_t = scale * q_t^T S` (scale `1/sqrt(dk)` when absent or 0). Outputs: `o` packed
//! `[B, T, q_heads * dv]`, and the final state (`present_state`, `[B, kv_heads, dk, dv]`, in the type
//! of `past_state`, or of the query without it). Computed in f64, rounded once.

use crate::node::expanded::{as_is, Expanded, Io};
use crate::node::Label;
use tract_onnx::model::ParsingContext;
use tract_onnx::pb::NodeProto;
use tract_onnx::prelude::*;
use tract_onnx::tract_core::internal::*;
use tract_onnx::tract_hir::internal::*;

/// `LinearAttention`.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct LinearAttention {
    /// `q_num_heads`.
    pub q_heads: usize,
    /// `kv_num_heads`.
    pub kv_heads: usize,
    /// `scale` (0 or absent: `1/sqrt(dk)`).
    pub scale: f32,
    /// Gated update rules (`gated`, `gated_delta`): `decay` is given.
    pub gated: bool,
    /// Delta update rules (`delta`, `gated_delta`): `beta` is given.
    pub delta: bool,
    /// Whether `past_state` is given.
    pub has_past: bool,
    /// Whether `present_state` is asked for.
    pub present: bool,
    /// The node, for errors.
    pub label: Label,
}

/// The LinearAttention builder.
pub(crate) fn linear_attention(
    _ctx: &ParsingContext,
    node: &NodeProto,
) -> TractResult<(Box<dyn InferenceOp>, Vec<String>)> {
    let label = crate::node::node_label(node);
    let given = |i: usize| node.input.get(i).is_some_and(|n| !n.is_empty());
    let heads = |name: &str| -> TractResult<usize> {
        let v = crate::node::attrs::int(&label, node, name)?.ok_or_else(|| label.err(format!("{name} is required")))?;
        usize::try_from(v)
            .ok()
            .filter(|&v| v > 0)
            .ok_or_else(|| label.err(format!("{name} is {v}: it must be positive")))
    };
    let (q_heads, kv_heads) = (heads("q_num_heads")?, heads("kv_num_heads")?);
    if q_heads % kv_heads != 0 {
        return Err(label.err(format!("q_num_heads {q_heads} is not a multiple of kv_num_heads {kv_heads}")));
    }
    let (gated, delta) = match crate::node::attrs::string(&label, node, "update_rule")?.as_deref() {
        Some("linear") => (false, false),
        Some("gated") => (true, false),
        Some("delta") => (false, true),
        None | Some("gated_delta") => (true, true),
        Some(other) => {
            return Err(label.err(format!("update_rule is {other:?}: it must be linear, gated, delta or gated_delta")))
        }
    };
    if !given(0) || !given(1) || !given(2) || node.input.len() > 6 {
        return Err(label.err("the inputs are query, key, value, and optional past_state, decay and beta"));
    }
    if given(4) != gated || given(5) != delta {
        let msg = format!(
            "the update rule needs decay {} and beta {}",
            if gated { "given" } else { "absent" },
            if delta { "given" } else { "absent" }
        );
        return Err(label.err(msg));
    }
    let scale = crate::node::attrs::float(&label, node, "scale")?.unwrap_or(0.0);
    if !scale.is_finite() {
        return Err(label.err(format!("scale is {scale}: it must be finite")));
    }
    let outputs = node.output.iter().rposition(|o| !o.is_empty()).map_or(1, |i| i + 1);
    if outputs > 2 {
        return Err(label.err(format!("{outputs} outputs asked for: output and present_state are the two")));
    }
    let op =
        LinearAttention { q_heads, kv_heads, scale, gated, delta, has_past: given(3), present: outputs == 2, label };
    let inputs = 3 + usize::from(op.has_past) + usize::from(gated) + usize::from(delta);
    Expanded::new("LinearAttention", op, inputs, rules, as_is).with_outputs(outputs).built()
}

// `scale` is finite (checked when built): equality is reflexive.
impl Eq for LinearAttention {}

fn rules<'r>(op: &'r LinearAttention, s: &mut Solver<'r>, Io { inputs, outputs }: Io<'r>) -> InferenceResult {
    s.equals(&outputs[0].datum_type, &inputs[0].datum_type)?;
    s.equals(&outputs[0].rank, 3)?;
    s.equals(&outputs[0].shape[0], &inputs[0].shape[0])?;
    s.equals(&outputs[0].shape[1], &inputs[0].shape[1])?;
    let (q, kv) = (op.q_heads as u64, op.kv_heads as u64);
    s.given(&inputs[2].shape[2], move |s, v| s.equals(&outputs[0].shape[2], (v / kv * q).simplify()))?;
    if op.present {
        let state = if op.has_past { &inputs[3].datum_type } else { &inputs[0].datum_type };
        s.equals(&outputs[1].datum_type, state)?;
        s.equals(&outputs[1].rank, 4)?;
        s.equals(&outputs[1].shape[0], &inputs[0].shape[0])?;
        s.equals(&outputs[1].shape[1], TDim::Val(op.kv_heads as i64))?;
        s.given(&inputs[0].shape[2], move |s, d| s.equals(&outputs[1].shape[2], (d / q).simplify()))?;
        s.given(&inputs[2].shape[2], move |s, d| s.equals(&outputs[1].shape[3], (d / kv).simplify()))?;
    }
    Ok(())
}

impl Op for LinearAttention {
    fn name(&self) -> StaticName {
        "LinearAttention".into()
    }

    op_as_typed_op!();
}

impl TypedOp for LinearAttention {
    as_op!();

    fn output_facts(&self, inputs: &[&TypedFact]) -> TractResult<TVec<TypedFact>> {
        let (q, v) = (inputs[0], inputs[2]);
        if !matches!(q.datum_type, DatumType::F16 | DatumType::F32 | DatumType::F64) {
            return Err(self.label.err(format!("the query must be floats, got {:?}", q.datum_type)));
        }
        if inputs[..3].iter().any(|f| f.rank() != 3) {
            return Err(self.label.err("query, key and value must have rank 3: [batch, time, heads * dim]"));
        }
        let (qh, kvh) = (self.q_heads as u64, self.kv_heads as u64);
        let dv = v.shape[2].clone() / kvh;
        let mut out = tvec![q.datum_type.fact(&[q.shape[0].clone(), q.shape[1].clone(), (dv.clone() * qh).simplify()])];
        if self.present {
            let dt = if self.has_past { inputs[3].datum_type } else { q.datum_type };
            let dk = (q.shape[2].clone() / qh).simplify();
            out.push(dt.fact(&[q.shape[0].clone(), TDim::Val(self.kv_heads as i64), dk, dv.simplify()]));
        }
        Ok(out)
    }
}

/// A packed `[B, T, heads * d]` tensor's values in f64, with its `d`.
fn unpack(
    label: &Label,
    name: &str,
    t: &Tensor,
    b: usize,
    steps: usize,
    heads: usize,
) -> TractResult<(Vec<f64>, usize)> {
    let shape = t.shape();
    if shape.len() != 3 || shape[0] != b || shape[1] != steps || !shape[2].is_multiple_of(heads) {
        let msg = format!("{name} has shape {shape:?}: [{b}, {steps}, a multiple of {heads}] is needed");
        return Err(label.err(msg));
    }
    Ok((t.cast_to::<f64>()?.try_as_plain_ram()?.as_slice::<f64>()?.to_vec(), shape[2] / heads))
}

impl EvalOp for LinearAttention {
    op_out_of_plan!();

    fn eval(&self, _ctx: &EvalContext, inputs: TVec<TValue>) -> TractResult<TVec<TValue>> {
        let label = &self.label;
        let qs = inputs[0].shape();
        let &[b, steps, _] = qs else { return Err(label.err("the query must have rank 3")) };
        let (qh, kvh) = (self.q_heads, self.kv_heads);
        let group = qh / kvh;
        let (q, dk) = unpack(label, "query", &inputs[0], b, steps, qh)?;
        let (k, dk_k) = unpack(label, "key", &inputs[1], b, steps, kvh)?;
        let (v, dv) = unpack(label, "value", &inputs[2], b, steps, kvh)?;
        if dk_k != dk {
            return Err(label.err(format!("the key's head dim is {dk_k}, the query's {dk}")));
        }
        // The state and the output are sized from the inputs' products: checked before allocating.
        for dims in [[b, kvh, dk, dv], [b, steps, qh, dv]] {
            let numel = dims.iter().try_fold(1u64, |a, &d| a.checked_mul(d as u64)).unwrap_or(u64::MAX);
            crate::kernel::check_allocation(numel, 8).map_err(|e| label.err(e))?;
        }
        let mut next = 3;
        let mut state = vec![0f64; b * kvh * dk * dv];
        let mut state_dt = inputs[0].datum_type();
        if self.has_past {
            let past = &inputs[next];
            next += 1;
            if past.shape() != [b, kvh, dk, dv] {
                let msg = format!("past_state has shape {:?}, [{b}, {kvh}, {dk}, {dv}] is needed", past.shape());
                return Err(label.err(msg));
            }
            state_dt = past.datum_type();
            state.copy_from_slice(past.cast_to::<f64>()?.try_as_plain_ram()?.as_slice::<f64>()?);
        }
        // decay per (b, t, head[, key dim]); beta per (b, t, head or 1).
        let decay = if self.gated {
            let t = &inputs[next];
            next += 1;
            let per_dim = match t.shape() {
                [tb, tt, last] if *tb == b && *tt == steps && *last == kvh => false,
                [tb, tt, last] if *tb == b && *tt == steps && *last == kvh * dk => true,
                other => {
                    return Err(label
                        .err(format!("decay has shape {other:?}: [{b}, {steps}, {kvh} or {}] is needed", kvh * dk)))
                }
            };
            Some((t.cast_to::<f64>()?.try_as_plain_ram()?.as_slice::<f64>()?.to_vec(), per_dim))
        } else {
            None
        };
        let beta = if self.delta {
            let t = &inputs[next];
            let width = match t.shape() {
                [tb, tt, last] if *tb == b && *tt == steps && (*last == kvh || *last == 1) => *last,
                other => {
                    return Err(label.err(format!("beta has shape {other:?}: [{b}, {steps}, {kvh} or 1] is needed")))
                }
            };
            Some((t.cast_to::<f64>()?.try_as_plain_ram()?.as_slice::<f64>()?.to_vec(), width))
        } else {
            None
        };
        let scale = if self.scale == 0.0 { 1.0 / (dk as f64).sqrt() } else { self.scale as f64 };
        let mut out = vec![0f64; b * steps * qh * dv];
        let mut vt = vec![0f64; dv];
        for bi in 0..b {
            for t in 0..steps {
                for h in 0..kvh {
                    let s = &mut state[((bi * kvh + h) * dk) * dv..((bi * kvh + h + 1) * dk) * dv];
                    let kt = &k[((bi * steps + t) * kvh + h) * dk..][..dk];
                    vt.copy_from_slice(&v[((bi * steps + t) * kvh + h) * dv..][..dv]);
                    if let Some((decay, per_dim)) = &decay {
                        for d in 0..dk {
                            let g = if *per_dim {
                                decay[((bi * steps + t) * kvh + h) * dk + d]
                            } else {
                                decay[(bi * steps + t) * kvh + h]
                            };
                            let factor = g.exp();
                            s[d * dv..(d + 1) * dv].iter_mut().for_each(|x| *x *= factor);
                        }
                    }
                    if let Some((beta, width)) = &beta {
                        let bt = beta[(bi * steps + t) * width + if *width == 1 { 0 } else { h }];
                        for (m, value) in vt.iter_mut().enumerate() {
                            let retrieved: f64 = (0..dk).map(|d| s[d * dv + m] * kt[d]).sum();
                            *value = bt * (*value - retrieved);
                        }
                    }
                    for d in 0..dk {
                        for m in 0..dv {
                            s[d * dv + m] += kt[d] * vt[m];
                        }
                    }
                    for qi in h * group..(h + 1) * group {
                        let qt = &q[((bi * steps + t) * qh + qi) * dk..][..dk];
                        let o = &mut out[((bi * steps + t) * qh + qi) * dv..][..dv];
                        for (m, slot) in o.iter_mut().enumerate() {
                            *slot = scale * (0..dk).map(|d| qt[d] * s[d * dv + m]).sum::<f64>();
                        }
                    }
                }
            }
        }
        let dt = inputs[0].datum_type();
        let y = tract_ndarray::ArrayD::from_shape_vec(&[b, steps, qh * dv][..], out)?.into_tensor();
        let mut outs = tvec![y.cast_to_dt(dt)?.into_owned().into_tvalue()];
        if self.present {
            let p = tract_ndarray::ArrayD::from_shape_vec(&[b, kvh, dk, dv][..], state)?.into_tensor();
            outs.push(p.cast_to_dt(state_dt)?.into_owned().into_tvalue());
        }
        Ok(outs)
    }
}
