//! The middle of Attention: scores in, probabilities out, with the soft cap, every mask and the
//! softmax, row by row.
//!
//! For a query row `(b, h, i)` over keys `j < total`, the bias is the sum of
//! - `attn_mask[b, h, i, j]` broadcast from the right (boolean: 0 where true, -inf where false;
//!   otherwise its value), -inf where `j` is past the mask's last dim;
//! - -inf where `is_causal` and `j > i + offset`;
//! - -inf outside the window `p - left <= j <= p + right` (`p = i + offset`, a bound of -1 is none);
//! - -inf where `j >= nonpad_kv_seqlen[b]`;
//!
//! with `offset` the past length, or `nonpad_kv_seqlen[b] - q_seq`, or 0. The row's logits are the
//! scores (soft-capped: `c * tanh(s / c)`) plus the bias, rounded to the softmax precision; the
//! softmax of a row whose bias is -inf everywhere is a row of zeros (whatever the scores: NaN from an
//! infinite score does not leak), and a row holding NaN is NaN. Arithmetic is in f64, each result
//! rounded once to the precision and then to the output type, except in two cases: float32 without
//! a soft cap runs on our float32 kernel, and float16 throughout rounds every step to float16 where
//! onnx's reference (numpy) does, so that its bits are the reference's.

use super::QkOutput;
use crate::kernel::{softmax_axis, softmax_row_f16, softmax_row_f32, SoftmaxFn};
use tract_onnx::prelude::*;
use tract_onnx::tract_core::internal::*;

/// Masks, soft cap and softmax over `(batch, heads, q_seq, total)` scores.
///
/// Inputs: the scores, then `attn_mask`, `past_key` (read for its length only) and
/// `nonpad_kv_seqlen` when given. Outputs: the probabilities, then the capped or biased logits when
/// `qk_output` asks for them.
#[derive(Debug, Clone)]
pub(crate) struct AttentionSoftmax {
    /// The Attention node, for errors.
    pub node: String,
    /// The soft cap (0: none).
    pub softcap: f32,
    /// `is_causal`.
    pub causal: bool,
    /// `left_window_size` (-1: unbounded).
    pub left_window: i64,
    /// `right_window_size` (-1: unbounded).
    pub right_window: i64,
    /// An `attn_mask` input follows the scores.
    pub has_mask: bool,
    /// A `past_key` input follows: the causal offset is its length.
    pub has_past: bool,
    /// A `nonpad_kv_seqlen` input comes last.
    pub has_nonpad: bool,
    /// The type the logits are rounded to for the softmax.
    pub precision: DatumType,
    /// The type of the outputs.
    pub output: DatumType,
    /// A second output: the capped (mode 1) or biased (mode 2) logits.
    pub qk_output: Option<QkOutput>,
}

// Equality by the soft cap's bits, so that it is an equivalence whatever the value.
impl PartialEq for AttentionSoftmax {
    fn eq(&self, o: &Self) -> bool {
        fn key(a: &AttentionSoftmax) -> (&str, u32, bool, i64, i64, bool, bool) {
            (&a.node, a.softcap.to_bits(), a.causal, a.left_window, a.right_window, a.has_mask, a.has_past)
        }
        key(self) == key(o)
            && (self.has_nonpad, self.precision, self.output, self.qk_output)
                == (o.has_nonpad, o.precision, o.output, o.qk_output)
    }
}

impl Eq for AttentionSoftmax {}

impl AttentionSoftmax {
    fn err(&self, e: impl std::fmt::Display) -> TractError {
        crate::error::NodeError::invalid(&self.node, "Attention", e)
    }

    fn input_count(&self) -> usize {
        1 + usize::from(self.has_mask) + usize::from(self.has_past) + usize::from(self.has_nonpad)
    }

    /// Checks a mask shape against the scores' `(batch, heads, q_seq, total)`, where each is known.
    fn check_mask(&self, mask: &[TDim], scores: &[TDim]) -> TractResult<()> {
        if mask.is_empty() || mask.len() > 4 {
            return Err(self.err(format!("attn_mask must have rank 1 to 4, got rank {}", mask.len())));
        }
        let shown = |d: &[TDim]| d.iter().map(crate::dims::format_dim).collect::<Vec<_>>().join(", ");
        let off = 4 - mask.len();
        for (k, m) in mask.iter().enumerate() {
            let target = &scores[off + k];
            let (Ok(mv), Ok(tv)) = (m.to_i64(), target.to_i64()) else { continue };
            let ok = if k + 1 == mask.len() { mv <= tv } else { mv == 1 || mv == tv };
            if !ok {
                return Err(self.err(format!(
                    "attn_mask has shape [{}], which does not broadcast to the scores' [{}] (its last dim may be shorter)",
                    shown(mask),
                    shown(scores)
                )));
            }
        }
        Ok(())
    }
}

impl Op for AttentionSoftmax {
    fn name(&self) -> StaticName {
        "AttentionSoftmax".into()
    }

    fn info(&self) -> TractResult<Vec<String>> {
        Ok(vec![format!(
            "causal: {}, window: ({}, {}), softcap: {}, precision: {:?}",
            self.causal, self.left_window, self.right_window, self.softcap, self.precision
        )])
    }

    op_as_typed_op!();
}

impl TypedOp for AttentionSoftmax {
    as_op!();

    fn output_facts(&self, inputs: &[&TypedFact]) -> TractResult<TVec<TypedFact>> {
        ensure!(inputs.len() == self.input_count(), self.err("wrong number of inputs"));
        let scores = inputs[0].shape.to_tvec();
        ensure!(scores.len() == 4, self.err(format!("the scores have rank {}", scores.len())));
        let mut next = 1;
        if self.has_mask {
            let m = inputs[next];
            let dt = m.datum_type;
            if !(dt == DatumType::Bool || dt.is_float() || dt.is_integer()) {
                return Err(self.err(format!("attn_mask must be boolean or numeric, got {dt:?}")));
            }
            self.check_mask(&m.shape.to_tvec(), &scores)?;
            next += 1;
        }
        if self.has_past {
            next += 1;
        }
        if self.has_nonpad {
            let n = inputs[next];
            if n.datum_type != DatumType::I64 || n.rank() != 1 {
                return Err(self.err(format!(
                    "nonpad_kv_seqlen must be a 1-D int64 tensor, got {:?} of rank {}",
                    n.datum_type,
                    n.rank()
                )));
            }
            if let (Ok(len), Ok(batch)) = (n.shape[0].to_i64(), scores[0].to_i64()) {
                if len != batch {
                    return Err(self.err(format!("nonpad_kv_seqlen has {len} entries for a batch of {batch}")));
                }
            }
        }
        let fact = self.output.fact(&*scores);
        Ok(if self.qk_output.is_some() { tvec![fact.clone(), fact] } else { tvec![fact] })
    }
}

impl EvalOp for AttentionSoftmax {
    op_out_of_plan!();

    fn eval(&self, _ctx: &EvalContext, inputs: TVec<TValue>) -> TractResult<TVec<TValue>> {
        ensure!(inputs.len() == self.input_count(), self.err("wrong number of inputs"));
        let shape: TVec<usize> = inputs[0].shape().into();
        let [batch, heads, q_seq, total] = shape[..] else {
            return Err(self.err(format!("the scores have shape {shape:?}")));
        };
        let mut next = 1;
        let mask = if self.has_mask {
            next += 1;
            let m = &inputs[next - 1];
            let dims: TVec<TDim> = m.shape().iter().map(|&d| d.to_dim()).collect();
            let target: TVec<TDim> = shape.iter().map(|&d| d.to_dim()).collect();
            self.check_mask(&dims, &target)?;
            Some(Mask::new(m, &shape)?)
        } else {
            None
        };
        let past = if self.has_past {
            next += 1;
            let p = &inputs[next - 1];
            ensure!(p.rank() == 4, self.err(format!("past_key has rank {}", p.rank())));
            Some(p.shape()[2])
        } else {
            None
        };
        let nonpad: Option<Vec<i64>> = if self.has_nonpad {
            let n = &inputs[next];
            let v = n.try_as_plain_ram()?.as_slice::<i64>()?.to_vec();
            if v.len() != batch {
                return Err(self.err(format!("nonpad_kv_seqlen has {} entries for a batch of {batch}", v.len())));
            }
            Some(v)
        } else {
            None
        };
        let rows = Rows { mask: mask.as_ref(), past, nonpad: nonpad.as_deref(), heads, q_seq, total };
        let mask_dt = if self.has_mask { Some(inputs[1].datum_type()) } else { None };
        if self.is_plain_f32(inputs[0].datum_type()) {
            self.finish_f32(&inputs[0], &shape, &rows)
        } else if self.is_plain_f16(inputs[0].datum_type(), mask_dt) {
            self.finish_f16(&inputs[0], &shape, &rows)
        } else {
            self.finish_f64(&inputs[0], &shape, &rows)
        }
    }
}

/// What the bias of every row is made of, and the scores' shape.
struct Rows<'a> {
    mask: Option<&'a Mask>,
    past: Option<usize>,
    nonpad: Option<&'a [i64]>,
    heads: usize,
    q_seq: usize,
    total: usize,
}

impl AttentionSoftmax {
    /// Whether the op is the float32 softmax without a soft cap, which runs on our float32 kernel.
    fn is_plain_f32(&self, scores: DatumType) -> bool {
        scores == DatumType::F32
            && self.precision == DatumType::F32
            && self.output == DatumType::F32
            && self.softcap == 0.0
    }

    /// Whether the op is float16 (scores, outputs, a float16 or boolean mask; the softmax in float16
    /// or float32): then it rounds where onnx's reference rounds ([`Self::finish_f16`]).
    fn is_plain_f16(&self, scores: DatumType, mask: Option<DatumType>) -> bool {
        scores == DatumType::F16
            && matches!(self.precision, DatumType::F16 | DatumType::F32)
            && self.output == DatumType::F16
            && mask.is_none_or(|m| m == DatumType::F16 || m == DatumType::Bool)
    }

    /// Calls `row(index of the row's first score, bias)` for every row, with the bias of its masks.
    fn for_each_row(&self, rows: &Rows, batch: usize, mut row: impl FnMut(usize, &[f64])) {
        let mut bias = vec![0f64; rows.total];
        // Whether a key can be shut by its position (causal, windows, padding), beside the mask.
        let bounded = self.causal || self.left_window >= 0 || self.right_window >= 0 || rows.nonpad.is_some();
        for b in 0..batch {
            // The count of valid keys before the query block.
            let offset: i128 = match (rows.past, rows.nonpad) {
                (Some(p), _) => p as i128,
                (None, Some(n)) => i128::from(n[b]) - rows.q_seq as i128,
                (None, None) => 0,
            };
            let valid = rows.nonpad.map(|n| i128::from(n[b]));
            for h in 0..rows.heads {
                for i in 0..rows.q_seq {
                    let start = ((b * rows.heads + h) * rows.q_seq + i) * rows.total;
                    let p = i as i128 + offset;
                    match rows.mask {
                        Some(m) => m.row_into(b, h, i, &mut bias),
                        None => bias.fill(0.0),
                    }
                    if bounded {
                        for (j, slot) in bias.iter_mut().enumerate() {
                            let j128 = j as i128;
                            let shut = (self.causal && j128 > p)
                                || (self.left_window >= 0 && p - j128 > i128::from(self.left_window))
                                || (self.right_window >= 0 && j128 - p > i128::from(self.right_window))
                                || valid.is_some_and(|n| j128 >= n);
                            if shut {
                                *slot += f64::NEG_INFINITY;
                            }
                        }
                    }
                    row(start, &bias);
                }
            }
        }
    }

    /// The probabilities (and the second output if asked for) in f64, rounded to the precision, then
    /// to the output type.
    fn finish_f64(&self, scores: &Tensor, shape: &[usize], rows: &Rows) -> TractResult<TVec<TValue>> {
        let scores = scores.cast_to::<f64>()?;
        let scores = scores.try_as_plain_ram()?.as_slice::<f64>()?;
        let len = scores.len();
        let total = rows.total;
        let mut probs = vec![0f64; len];
        let mut extra = if self.qk_output.is_some() { vec![0f64; len] } else { vec![] };
        let mut logits = vec![0f64; total];
        self.for_each_row(rows, shape[0], |row, bias| {
            let row_scores = &scores[row..row + total];
            for j in 0..total {
                let s = row_scores[j];
                let capped = if self.softcap > 0.0 {
                    let c = f64::from(self.softcap);
                    c * (s / c).tanh()
                } else {
                    s
                };
                logits[j] = round_to(self.precision, capped + bias[j]);
                match self.qk_output {
                    Some(QkOutput::Capped) => extra[row + j] = capped,
                    Some(_) => extra[row + j] = capped + bias[j],
                    None => {}
                }
            }
            if bias.iter().all(|&v| v == f64::NEG_INFINITY) {
                // Nothing to attend: zeros (already there).
                return;
            }
            let out = &mut probs[row..row + total];
            softmax(&logits, out);
            for v in out.iter_mut() {
                *v = round_to(self.precision, *v);
            }
        });
        let as_tensor = |v: Vec<f64>| -> TractResult<TValue> {
            let t = tract_ndarray::ArrayD::from_shape_vec(shape, v)?.into_tensor();
            Ok(t.cast_to_dt(self.output)?.into_owned().into_tvalue())
        };
        let mut outputs = tvec![as_tensor(probs)?];
        if self.qk_output.is_some() {
            outputs.push(as_tensor(extra)?);
        }
        Ok(outputs)
    }

    /// The float32 case without a soft cap: logits `score + bias` rounded to float32 (as the f64 path
    /// rounds them), then the softmax of every row on our float32 kernel ([`softmax_axis`]: `exp`
    /// within 2 ulp, one division per value, all rows in one call), where the f64 path rounds an f64
    /// softmax once. The same rows are zeros (all masked, or every logit -inf) or NaN (a NaN logit).
    fn finish_f32(&self, scores: &Tensor, shape: &[usize], rows: &Rows) -> TractResult<TVec<TValue>> {
        let scores = scores.try_as_plain_ram()?;
        let scores = scores.as_slice::<f32>()?;
        let total = rows.total;
        let mut probs = vec![0f32; scores.len()];
        let mut extra = if self.qk_output.is_some() { vec![0f32; scores.len()] } else { vec![] };
        let mut nothing_attended = vec![];
        self.for_each_row(rows, shape[0], |row, bias| {
            let out = &mut probs[row..row + total];
            for ((o, &s), &b) in out.iter_mut().zip(&scores[row..row + total]).zip(bias) {
                *o = (f64::from(s) + b) as f32;
            }
            match self.qk_output {
                Some(QkOutput::Capped) => extra[row..row + total].copy_from_slice(&scores[row..row + total]),
                Some(_) => extra[row..row + total].copy_from_slice(out),
                None => {}
            }
            if bias.iter().all(|&v| v == f64::NEG_INFINITY) || out.iter().all(|&v| v == f32::NEG_INFINITY) {
                nothing_attended.push(row);
            }
        });
        // A NaN logit makes its row NaN in the kernel, as in the f64 path.
        softmax_axis(&mut probs, total, 1, SoftmaxFn::Softmax).map_err(|e| self.err(e))?;
        for row in nothing_attended {
            probs[row..row + total].fill(0.0);
        }
        let as_tensor = |v: Vec<f32>| -> TractResult<TValue> {
            Ok(tract_ndarray::ArrayD::from_shape_vec(shape, v)?.into_tensor().into_tvalue())
        };
        let mut outputs = tvec![as_tensor(probs)?];
        if self.qk_output.is_some() {
            outputs.push(as_tensor(extra)?);
        }
        Ok(outputs)
    }
}

impl AttentionSoftmax {
    /// The float16 case, each step a numpy operation as in onnx's reference. Without a soft cap, the
    /// logits `score + bias` are a float16 operation (computed in float32, rounded once; the bias,
    /// mask values and -inf, is exact in float16); with one, the reference's cap is a float32 number,
    /// so `c * tanh(s / c)` and the logits are float32. Then the softmax in the precision: numpy's
    /// float16 softmax ([`softmax_row_f16`]) of the logits rounded to float16, or numpy's float32
    /// softmax ([`softmax_row_f32`]) rounded to float16 at the end (the default with a soft cap, see
    /// [`super::wire`]). A row with nothing to attend, or whose logits are all -inf, is zeros; a row
    /// holding NaN is NaN.
    fn finish_f16(&self, scores: &Tensor, shape: &[usize], rows: &Rows) -> TractResult<TVec<TValue>> {
        let scores = scores.try_as_plain_ram()?;
        let scores = scores.as_slice::<f16>()?;
        let total = rows.total;
        let mut probs = vec![f16::ZERO; scores.len()];
        let mut extra = if self.qk_output.is_some() { vec![f16::ZERO; scores.len()] } else { vec![] };
        // The softmax in float32 (softmax_precision float32, or by default with a soft cap), else in
        // float16.
        let in_f32 = self.precision == DatumType::F32;
        let mut wide = vec![0f32; total];
        self.for_each_row(rows, shape[0], |row, bias| {
            let out = &mut probs[row..row + total];
            let row_scores = &scores[row..row + total];
            for (j, (&s, &b)) in row_scores.iter().zip(bias).enumerate() {
                // The bias is a float16 mask value, or -inf: exact in float32.
                let (capped, logit) = if self.softcap > 0.0 {
                    let capped = (s.to_f32() / self.softcap).tanh() * self.softcap;
                    (capped, capped + b as f32)
                } else {
                    (s.to_f32(), f16::from_f32(s.to_f32() + b as f32).to_f32())
                };
                wide[j] = logit;
                match self.qk_output {
                    Some(QkOutput::Capped) => extra[row + j] = f16::from_f32(capped),
                    Some(_) => extra[row + j] = f16::from_f32(logit),
                    None => {}
                }
            }
            if bias.iter().all(|&v| v == f64::NEG_INFINITY) || wide.iter().all(|&v| v == f32::NEG_INFINITY) {
                // Nothing to attend: zeros (already there).
                return;
            }
            if in_f32 {
                softmax_row_f32(&mut wide);
                for (o, &w) in out.iter_mut().zip(&wide) {
                    *o = f16::from_f32(w);
                }
            } else {
                for (o, &w) in out.iter_mut().zip(&wide) {
                    *o = f16::from_f32(w);
                }
                softmax_row_f16(out);
            }
        });
        let as_tensor = |v: Vec<f16>| -> TractResult<TValue> {
            Ok(tract_ndarray::ArrayD::from_shape_vec(shape, v)?.into_tensor().into_tvalue())
        };
        let mut outputs = tvec![as_tensor(probs)?];
        if self.qk_output.is_some() {
            outputs.push(as_tensor(extra)?);
        }
        Ok(outputs)
    }
}

/// `v` rounded to the nearest value of `dt` (float16, float or double).
fn round_to(dt: DatumType, v: f64) -> f64 {
    match dt {
        DatumType::F16 => half::f16::from_f64(v).to_f64(),
        DatumType::F32 => v as f32 as f64,
        _ => v,
    }
}

/// A softmax over one row whose logits are not all -inf: `exp(x - max) / sum`; a NaN anywhere makes
/// the whole row NaN, as it does in exact arithmetic over the row.
fn softmax(logits: &[f64], out: &mut [f64]) {
    if logits.iter().any(|v| v.is_nan()) {
        out.fill(f64::NAN);
        return;
    }
    let max = logits.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    if max == f64::NEG_INFINITY {
        // Every logit -inf (the scores, not the masks, sent them there): nothing is attended.
        out.fill(0.0);
        return;
    }
    let mut sum = 0.0;
    for (o, &x) in out.iter_mut().zip(logits) {
        *o = (x - max).exp();
        sum += *o;
    }
    for o in out.iter_mut() {
        *o /= sum;
    }
}

/// An `attn_mask` as additive values over its own shape, read through broadcast strides.
struct Mask {
    values: Vec<f64>,
    /// Strides over `(batch, heads, q_seq)` (0 where broadcast).
    strides: [usize; 3],
    /// The mask's last dim: keys at or beyond it are masked.
    keys: usize,
}

impl Mask {
    fn new(m: &Tensor, scores: &[usize]) -> TractResult<Mask> {
        let values: Vec<f64> = if m.datum_type() == DatumType::Bool {
            let b = m.try_as_plain_ram()?;
            b.as_slice::<bool>()?.iter().map(|&ok| if ok { 0.0 } else { f64::NEG_INFINITY }).collect()
        } else {
            let f = m.cast_to::<f64>()?;
            f.try_as_plain_ram()?.as_slice::<f64>()?.to_vec()
        };
        let rank = m.rank();
        let mut dims = [1usize; 4];
        dims[4 - rank..].copy_from_slice(m.shape());
        let keys = dims[3];
        let mut strides = [0usize; 3];
        let mut stride = keys;
        for k in (0..3).rev() {
            strides[k] = if dims[k] == 1 && scores[k] != 1 { 0 } else { stride };
            stride = stride.checked_mul(dims[k]).context("attn_mask is too large")?;
        }
        Ok(Mask { values, strides, keys })
    }

    /// The bias of query row `(b, h, i)` over every key, into `out`: the mask's row, then -inf for
    /// the keys past its last dim.
    fn row_into(&self, b: usize, h: usize, i: usize, out: &mut [f64]) {
        let start = b * self.strides[0] + h * self.strides[1] + i * self.strides[2];
        let n = self.keys.min(out.len());
        out[..n].copy_from_slice(&self.values[start..start + n]);
        out[n..].fill(f64::NEG_INFINITY);
    }
}
