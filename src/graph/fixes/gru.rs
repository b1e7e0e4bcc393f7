//! [`GruOp`]: an ONNX `GRU` with the default activations, run step by step in one op with exact
//! activations.
//!
//! tract-onnx runs a `GRU` as a `Scan` over its vectorized sigmoid and tanh, which are
//! approximations: near saturation its sigmoid is off by about 1e-6 (`1 - z` for `z = σ(16)` came
//! out 1e-6 where it is 1.1e-7), and a state `H = (1-z)·h + z·H` that is nearly zero carries that
//! error whole (the backend tests `test_gru_bidirectional` and `test_gru_seq_length` differ by 5e-7
//! where their tolerance is 1e-7). Here, as onnx's reference computes them in float32, per step and
//! batch entry with the specification's gate order `z, r, h`:
//!
//! `z = σ(x·Wzᵀ + H·Rzᵀ + Wbz + Rbz)`, `r = σ(x·Wrᵀ + H·Rrᵀ + Wbr + Rbr)`,
//! `h = tanh(x·Whᵀ + (r⊙H)·Rhᵀ + Wbh + Rbh)` (or, with `linear_before_reset`,
//! `h = tanh(x·Whᵀ + r⊙(H·Rhᵀ + Rbh) + Wbh)`), `H' = (1-z)⊙h + z⊙H`,
//!
//! with `σ(v) = 1/(1 + e^(-v))` and `tanh` from the standard library (correctly rounded or within
//! an ulp). It takes over only small steps (as [`super::lstm::LstmOp::small`] says) of the plain
//! form (float32, activations `Sigmoid, Tanh`, no `clip`, no `sequence_lens`); every other form stays
//! tract's.

use super::lstm::Weights;
use crate::graph::Label;
use tract_onnx::pb::NodeProto;
use tract_onnx::prelude::*;
use tract_onnx::tract_core::internal::*;

/// A `GRU` in its plain form, forward, reverse or bidirectional, either layout.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct GruOp {
    /// The node, for errors.
    pub label: Label,
    /// `layout=1`: `X` is `[batch, seq, input]`, and the outputs batch first too.
    pub batch_first: bool,
    /// `direction="reverse"`.
    pub reverse: bool,
    /// `linear_before_reset=1`.
    pub linear_before_reset: bool,
    /// Whether `B` is given (the op's fourth input).
    pub has_bias: bool,
    /// Whether `initial_h` is given.
    pub has_h0: bool,
    /// Which of `Y` and `Y_h` the node asks for (by position), in order.
    pub outputs: Vec<usize>,
}

impl GruOp {
    /// The op for `node` if it is a `GRU` of the plain form (see the module docs), `None` otherwise.
    pub fn plain(node: &NodeProto, label: Label) -> Option<GruOp> {
        if node.op_type != "GRU" {
            return None;
        }
        let given = |i: usize| node.input.get(i).is_some_and(|n| !n.is_empty());
        // X, W and R; no sequence_lens (4).
        if !(given(0) && given(1) && given(2)) || given(4) || node.input.len() > 6 {
            return None;
        }
        let (mut reverse, mut batch_first, mut linear_before_reset) = (false, false, false);
        for a in &node.attribute {
            match a.name.as_str() {
                "hidden_size" => {}
                "direction" => match a.s.as_slice() {
                    b"forward" | b"bidirectional" => {}
                    b"reverse" => reverse = true,
                    _ => return None,
                },
                "layout" if a.i == 0 || a.i == 1 => batch_first = a.i == 1,
                "linear_before_reset" if a.i == 0 || a.i == 1 => linear_before_reset = a.i == 1,
                "activations" => {
                    let default = [b"Sigmoid".as_slice(), b"Tanh"];
                    if a.strings.is_empty() || a.strings.chunks(2).any(|c| c.iter().map(Vec::as_slice).ne(default)) {
                        return None;
                    }
                }
                _ => return None,
            }
        }
        if node.output.len() > 2 {
            return None;
        }
        let outputs: Vec<usize> = (0..2).filter(|&i| node.output.get(i).is_some_and(|n| !n.is_empty())).collect();
        Some(GruOp { label, batch_first, reverse, linear_before_reset, has_bias: given(3), has_h0: given(5), outputs })
    }

    fn err(&self, msg: impl Into<String>) -> TractError {
        self.label.err(msg.into())
    }

    fn seq_batch(&self) -> (usize, usize) {
        if self.batch_first {
            (1, 0)
        } else {
            (0, 1)
        }
    }

    fn h0_slot(&self) -> Option<usize> {
        self.has_h0.then_some(3 + usize::from(self.has_bias))
    }
}

impl Op for GruOp {
    fn name(&self) -> StaticName {
        "GRU".into()
    }

    op_as_typed_op!();
}

impl TypedOp for GruOp {
    as_op!();

    fn output_facts(&self, inputs: &[&TypedFact]) -> TractResult<TVec<TypedFact>> {
        let (x, w, r) = (inputs[0], inputs[1], inputs[2]);
        if x.rank() != 3 || w.rank() != 3 || r.rank() != 3 {
            let msg = format!("X, W and R must have rank 3, got {}, {} and {}", x.rank(), w.rank(), r.rank());
            return Err(self.err(msg));
        }
        if inputs.iter().any(|f| f.datum_type != DatumType::F32) {
            return Err(self.err("the plain GRU kernel runs float32 only"));
        }
        let (s, b) = self.seq_batch();
        let (seq, batch, dirs, hidden) = (&x.shape[s], &x.shape[b], &w.shape[0], &r.shape[2]);
        let (y, state): (TVec<TDim>, TVec<TDim>) = if self.batch_first {
            (
                tvec![batch.clone(), seq.clone(), dirs.clone(), hidden.clone()],
                tvec![batch.clone(), dirs.clone(), hidden.clone()],
            )
        } else {
            (
                tvec![seq.clone(), dirs.clone(), batch.clone(), hidden.clone()],
                tvec![dirs.clone(), batch.clone(), hidden.clone()],
            )
        };
        let all = [f32::fact(&*y), f32::fact(&*state)];
        Ok(self.outputs.iter().map(|&i| all[i].clone()).collect())
    }
}

/// The sizes of one evaluation, checked against every input.
struct Dims {
    seq: usize,
    batch: usize,
    input: usize,
    dirs: usize,
    hidden: usize,
}

impl GruOp {
    fn dims(&self, inputs: &[TValue]) -> TractResult<Dims> {
        let (x, w, r) = (inputs[0].shape(), inputs[1].shape(), inputs[2].shape());
        if x.len() != 3 || w.len() != 3 || r.len() != 3 {
            return Err(self.err(format!("X, W and R must have rank 3, got {}, {} and {}", x.len(), w.len(), r.len())));
        }
        let (s, b) = self.seq_batch();
        let d = Dims { seq: x[s], batch: x[b], input: x[2], dirs: w[0], hidden: r[2] };
        let want_dirs = if self.reverse { 1 } else { d.dirs };
        if d.dirs == 0 || d.dirs > 2 || want_dirs != d.dirs {
            return Err(self.err(format!("W has {} directions", d.dirs)));
        }
        let gates = d.hidden.checked_mul(3).ok_or_else(|| self.err("hidden_size overflows"))?;
        if w != [d.dirs, gates, d.input] {
            return Err(self.err(format!("W is {w:?}, expected [{}, {gates}, {}]", d.dirs, d.input)));
        }
        if r != [d.dirs, gates, d.hidden] {
            return Err(self.err(format!("R is {r:?}, expected [{}, {gates}, {}]", d.dirs, d.hidden)));
        }
        if self.has_bias && inputs[3].shape() != [d.dirs, gates * 2] {
            return Err(self.err(format!("B is {:?}, expected [{}, {}]", inputs[3].shape(), d.dirs, gates * 2)));
        }
        if let Some(i) = self.h0_slot() {
            let state = if self.batch_first { [d.batch, d.dirs, d.hidden] } else { [d.dirs, d.batch, d.hidden] };
            if inputs[i].shape() != state {
                return Err(self.err(format!("initial_h is {:?}, expected {state:?}", inputs[i].shape())));
            }
        }
        Ok(d)
    }
}

fn sigmoid(v: f32) -> f32 {
    1.0 / (1.0 + (-v).exp())
}

impl EvalOp for GruOp {
    op_out_of_plan!();

    fn eval(&self, _ctx: &EvalContext, inputs: TVec<TValue>) -> TractResult<TVec<TValue>> {
        let d = self.dims(&inputs)?;
        let f32s = |i: usize| -> TractResult<&[f32]> { inputs[i].try_as_plain_ram()?.as_slice::<f32>() };
        let (x, w, r) = (f32s(0)?, f32s(1)?, f32s(2)?);
        let h = d.hidden;
        let (g3, g2) = (3 * h, 2 * h);
        let y_len = [d.seq, d.dirs, d.batch, h].iter().try_fold(1usize, |a, &n| a.checked_mul(n));
        let y_len = y_len.ok_or_else(|| self.err("Y's size overflows"))?;
        crate::kernel::check_allocation(y_len as u64, 4).map_err(|e| self.label.err(e))?;
        let mut y = vec![0f32; y_len];
        let mut h_out = vec![0f32; d.dirs * d.batch * h];
        let y_at = |t: usize, dir: usize, b: usize| {
            if self.batch_first {
                ((b * d.seq + t) * d.dirs + dir) * h
            } else {
                ((t * d.dirs + dir) * d.batch + b) * h
            }
        };
        let state_at =
            |dir: usize, b: usize| if self.batch_first { (b * d.dirs + dir) * h } else { (dir * d.batch + b) * h };
        let x_at =
            |t: usize, b: usize| if self.batch_first { (b * d.seq + t) * d.input } else { (t * d.batch + b) * d.input };
        let uses = d.seq * d.batch;
        // Per step: x·Wᵀ (all gates), H·R_zrᵀ, and the candidate's recurrent product.
        let (mut xw, mut hr, mut hh, mut rh) = (vec![0f32; g3], vec![0f32; g2], vec![0f32; h], vec![0f32; h]);
        for dir in 0..d.dirs {
            let wd = &w[dir * g3 * d.input..][..g3 * d.input];
            let rd = &r[dir * g3 * h..][..g3 * h];
            let w_all = Weights::of(wd, g3, uses);
            let r_zr = Weights::of(&rd[..g2 * h], g2, uses);
            let r_h = Weights::of(&rd[g2 * h..], h, uses);
            let bias: Vec<f32> =
                if self.has_bias { f32s(3)?[dir * 2 * g3..][..2 * g3].to_vec() } else { vec![0.0; 2 * g3] };
            let (wb, rb) = bias.split_at(g3);
            let backward = self.reverse || dir == 1;
            for b in 0..d.batch {
                let s = state_at(dir, b);
                let mut hs: Vec<f32> = match self.h0_slot() {
                    Some(i) => f32s(i)?[s..s + h].to_vec(),
                    None => vec![0.0; h],
                };
                for step in 0..d.seq {
                    let t = if backward { d.seq - 1 - step } else { step };
                    xw.fill(0.0);
                    w_all.add_product(&mut xw, &x[x_at(t, b)..][..d.input]);
                    hr.fill(0.0);
                    r_zr.add_product(&mut hr, &hs);
                    if self.linear_before_reset {
                        hh.fill(0.0);
                        r_h.add_product(&mut hh, &hs);
                    } else {
                        // (r ⊙ H)·Rhᵀ needs r first.
                        for k in 0..h {
                            rh[k] = sigmoid(xw[h + k] + hr[h + k] + (wb[h + k] + rb[h + k])) * hs[k];
                        }
                        hh.fill(0.0);
                        r_h.add_product(&mut hh, &rh);
                    }
                    for k in 0..h {
                        let z = sigmoid(xw[k] + hr[k] + (wb[k] + rb[k]));
                        let pre = if self.linear_before_reset {
                            let rk = sigmoid(xw[h + k] + hr[h + k] + (wb[h + k] + rb[h + k]));
                            xw[g2 + k] + rk * (hh[k] + rb[g2 + k]) + wb[g2 + k]
                        } else {
                            xw[g2 + k] + hh[k] + wb[g2 + k] + rb[g2 + k]
                        };
                        let cand = pre.tanh();
                        hs[k] = (1.0 - z) * cand + z * hs[k];
                    }
                    y[y_at(t, dir, b)..][..h].copy_from_slice(&hs);
                }
                h_out[s..s + h].copy_from_slice(&hs);
            }
        }
        let (sq, bt) = (d.seq, d.batch);
        let y_shape = if self.batch_first { [bt, sq, d.dirs, h] } else { [sq, d.dirs, bt, h] };
        let state_shape = if self.batch_first { [bt, d.dirs, h] } else { [d.dirs, bt, h] };
        let mut all = [Some(y), Some(h_out)];
        self.outputs
            .iter()
            .map(|&i| {
                let data = all[i].take().ok_or_else(|| self.err("an output asked for twice"))?;
                let shape: &[usize] = if i == 0 { &y_shape } else { &state_shape };
                Ok(tract_ndarray::ArrayD::from_shape_vec(shape, data)?.into_tensor().into_tvalue())
            })
            .collect()
    }
}
