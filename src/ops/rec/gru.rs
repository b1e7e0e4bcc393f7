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
use super::recurrent::{self, Dims};
use crate::node::Label;
use tract_onnx::pb::NodeProto;
use tract_onnx::prelude::*;
use tract_onnx::tract_core::internal::*;

/// A `GRU` in its plain form, forward, reverse or bidirectional, either layout.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct GruOp {
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
    pub(crate) fn plain(node: &NodeProto, label: Label) -> Option<GruOp> {
        if node.op_type != "GRU" {
            return None;
        }
        let given = |i: usize| node.input.get(i).is_some_and(|n| !n.is_empty());
        // X, W and R; no sequence_lens (4).
        if !(given(0) && given(1) && given(2)) || given(4) || node.input.len() > 6 {
            return None;
        }
        let mut linear_before_reset = false;
        let (reverse, batch_first) = recurrent::plain_attributes(node, &[b"Sigmoid", b"Tanh"], |a| {
            let taken = a.name == "linear_before_reset" && (a.i == 0 || a.i == 1);
            linear_before_reset |= taken && a.i == 1;
            taken
        })?;
        let outputs = recurrent::asked_outputs(node, 2)?;
        Some(GruOp { label, batch_first, reverse, linear_before_reset, has_bias: given(3), has_h0: given(5), outputs })
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
        recurrent::output_facts(&self.label, "GRU", self.batch_first, inputs, &self.outputs)
    }
}

fn sigmoid(v: f32) -> f32 {
    1.0 / (1.0 + (-v).exp())
}

impl EvalOp for GruOp {
    op_out_of_plan!();

    fn eval(&self, _ctx: &EvalContext, inputs: TVec<TValue>) -> TractResult<TVec<TValue>> {
        let bias = self.has_bias.then_some(3);
        let states = [("initial_h", self.h0_slot())];
        let d = Dims::of(&self.label, &inputs, self.batch_first, self.reverse, 3, bias, &states)?;
        let f32s = |i: usize| -> TractResult<&[f32]> { inputs[i].try_as_plain_ram()?.as_slice::<f32>() };
        let (x, w, r) = (f32s(0)?, f32s(1)?, f32s(2)?);
        let h = d.hidden;
        let (g3, g2) = (3 * h, 2 * h);
        let mut y = d.new_y(&self.label)?;
        let mut h_out = vec![0f32; d.dirs * d.batch * h];
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
                let s = d.state_at(dir, b);
                let mut hs: Vec<f32> = match self.h0_slot() {
                    Some(i) => f32s(i)?[s..s + h].to_vec(),
                    None => vec![0.0; h],
                };
                for step in 0..d.seq {
                    let t = if backward { d.seq - 1 - step } else { step };
                    xw.fill(0.0);
                    w_all.add_product(&mut xw, &x[d.x_at(t, b)..][..d.input]);
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
                    y[d.y_at(t, dir, b)..][..h].copy_from_slice(&hs);
                }
                h_out[s..s + h].copy_from_slice(&hs);
            }
        }
        d.outputs(&self.label, &self.outputs, vec![y, h_out])
    }
}
