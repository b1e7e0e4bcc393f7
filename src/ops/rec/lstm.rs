//! [`LstmOp`]: an ONNX `LSTM` with the default activations, run step by step in one op.
//!
//! tract-onnx runs an `LSTM` as a `Scan` whose body (gates, activations, state update) is a plan of
//! its own, run once per time step: for the small recurrent heads of exported models (an OCR
//! recognizer's bidirectional LSTM of 16 units over a dozen steps) the per-step overhead is most of
//! the time, 4 µs a step where the arithmetic takes well under one. Here the whole recurrence runs in
//! one op: per step and batch entry, the gates are `W·x + R·h + Wb + Rb` (each element of `x` and
//! `h` adding its scaled row of `Wᵀ`, `Rᵀ` to all the gates: a loop that vectorizes), then, with the
//! specification's gate order `i, o, f, c` (tract's vectorized sigmoid and tanh kernels):
//!
//! `i = σ(gi)`, `o = σ(go)`, `f = σ(gf)`, `c' = tanh(gc)`, `C = f·C + i·c'`, `H = o·tanh(C)`.
//!
//! It takes over only small steps ([`LstmOp::small`]) of the plain form (float32, activations `Sigmoid, Tanh, Tanh` as by default, no
//! `clip`, `input_forget` 0, no `sequence_lens`, no peepholes); [`LstmOp::plain`] says when. Every
//! other form stays tract's.

use super::recurrent::{self, Dims};
use crate::node::Label;
use tract_onnx::pb::NodeProto;
use tract_onnx::prelude::*;
use tract_onnx::tract_core::internal::*;
use tract_onnx::tract_core::tract_linalg::Func;

/// The most multiply-adds per step [`LstmOp`] takes (16 units over 48 inputs and states is 3,072;
/// silero-vad's 128 over 256 is 131,072 and stays tract's).
pub(crate) const SMALL_STEP: usize = 16_384;

/// An `LSTM` in its plain form, forward, reverse or bidirectional, either layout.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct LstmOp {
    /// The node, for errors.
    pub label: Label,
    /// `layout=1`: `X` is `[batch, seq, input]`, and the outputs batch first too.
    pub batch_first: bool,
    /// `direction="reverse"`.
    pub reverse: bool,
    /// Whether `B` is given (the op's fourth input).
    pub has_bias: bool,
    /// Whether `initial_h` is given.
    pub has_h0: bool,
    /// Whether `initial_c` is given.
    pub has_c0: bool,
    /// Which of `Y`, `Y_h` and `Y_c` the node asks for (by position), in order: tract numbers only
    /// those.
    pub outputs: Vec<usize>,
}

impl LstmOp {
    /// The op for `node` if it is an `LSTM` of the plain form (see the module docs), `None` otherwise.
    pub(crate) fn plain(node: &NodeProto, label: Label) -> Option<LstmOp> {
        if node.op_type != "LSTM" {
            return None;
        }
        let given = |i: usize| node.input.get(i).is_some_and(|n| !n.is_empty());
        // X, W and R; no sequence_lens (4) and no peepholes (7).
        if !(given(0) && given(1) && given(2)) || given(4) || given(7) || node.input.len() > 8 {
            return None;
        }
        let (reverse, batch_first) = recurrent::plain_attributes(node, &[b"Sigmoid", b"Tanh", b"Tanh"], |a| {
            a.name == "input_forget" && a.i == 0
        })?;
        let outputs = recurrent::asked_outputs(node, 3)?;
        Some(LstmOp { label, batch_first, reverse, has_bias: given(3), has_h0: given(5), has_c0: given(6), outputs })
    }

    /// Whether a step's products (`4h × (input + h)` multiply-adds) are small enough for our loops:
    /// above [`SMALL_STEP`], tract's matrix kernels (vectorized for the CPU it runs on, where ours are
    /// compiled for any x86-64) win over the per-step overhead they carry.
    pub(crate) fn small(w: &TypedFact, r: &TypedFact) -> bool {
        let dims = [&w.shape[1], &w.shape[2], &r.shape[2]].map(|d| d.to_usize().ok());
        let [Some(gates), Some(input), Some(hidden)] = dims else { return false };
        input.checked_add(hidden).and_then(|n| n.checked_mul(gates)).is_some_and(|n| n <= SMALL_STEP)
    }

    /// Where each optional input is among the op's inputs.
    fn slots(&self) -> (Option<usize>, Option<usize>, Option<usize>) {
        let bias = self.has_bias.then_some(3);
        let h0 = self.has_h0.then_some(3 + usize::from(self.has_bias));
        let c0 = self.has_c0.then_some(3 + usize::from(self.has_bias) + usize::from(self.has_h0));
        (bias, h0, c0)
    }
}

impl Op for LstmOp {
    fn name(&self) -> StaticName {
        "LSTM".into()
    }

    op_as_typed_op!();
}

impl TypedOp for LstmOp {
    as_op!();

    fn output_facts(&self, inputs: &[&TypedFact]) -> TractResult<TVec<TypedFact>> {
        recurrent::output_facts(&self.label, "LSTM", self.batch_first, inputs, &self.outputs)
    }
}

impl EvalOp for LstmOp {
    op_out_of_plan!();

    fn eval(&self, _ctx: &EvalContext, inputs: TVec<TValue>) -> TractResult<TVec<TValue>> {
        let (bias, h0, c0) = self.slots();
        let states = [("initial_h", h0), ("initial_c", c0)];
        let d = Dims::of(&self.label, &inputs, self.batch_first, self.reverse, 4, bias, &states)?;
        let f32s = |i: usize| -> TractResult<&[f32]> { inputs[i].try_as_plain_ram()?.as_slice::<f32>() };
        let (x, w, r) = (f32s(0)?, f32s(1)?, f32s(2)?);
        let (h, g4) = (d.hidden, 4 * d.hidden);
        let mut y = d.new_y(&self.label)?;
        let state_len = d.dirs * d.batch * h;
        let mut h_out = vec![0f32; state_len];
        let mut c_out = vec![0f32; state_len];
        let sigmoid = Func::Sigmoid.ew_f32()?;
        let tanh = Func::Tanh.ew_f32()?;
        let mut gates = vec![0f32; g4];
        let mut tanh_c = vec![0f32; h];
        for dir in 0..d.dirs {
            let wt = Weights::of(&w[dir * g4 * d.input..][..g4 * d.input], g4, d.seq * d.batch);
            let rt = Weights::of(&r[dir * g4 * h..][..g4 * h], g4, d.seq * d.batch);
            let bias_sum: Vec<f32> = match bias {
                Some(i) => {
                    let bd = &f32s(i)?[dir * 2 * g4..][..2 * g4];
                    (0..g4).map(|g| bd[g] + bd[g4 + g]).collect()
                }
                None => vec![0.0; g4],
            };
            let backward = self.reverse || dir == 1;
            for b in 0..d.batch {
                let s = d.state_at(dir, b);
                let mut hs: Vec<f32> = match h0 {
                    Some(i) => f32s(i)?[s..s + h].to_vec(),
                    None => vec![0.0; h],
                };
                let mut cs: Vec<f32> = match c0 {
                    Some(i) => f32s(i)?[s..s + h].to_vec(),
                    None => vec![0.0; h],
                };
                for step in 0..d.seq {
                    let t = if backward { d.seq - 1 - step } else { step };
                    gates.copy_from_slice(&bias_sum);
                    wt.add_product(&mut gates, &x[d.x_at(t, b)..][..d.input]);
                    rt.add_product(&mut gates, &hs);
                    // i, o and f are the first 3h gates: one sigmoid; c' the last h: one tanh.
                    sigmoid.run(&mut gates[..3 * h])?;
                    tanh.run(&mut gates[3 * h..])?;
                    for k in 0..h {
                        cs[k] = gates[2 * h + k] * cs[k] + gates[k] * gates[3 * h + k];
                    }
                    tanh_c.copy_from_slice(&cs);
                    tanh.run(&mut tanh_c)?;
                    for k in 0..h {
                        hs[k] = gates[h + k] * tanh_c[k];
                    }
                    y[d.y_at(t, dir, b)..][..h].copy_from_slice(&hs);
                }
                h_out[s..s + h].copy_from_slice(&hs);
                c_out[s..s + h].copy_from_slice(&cs);
            }
        }
        d.outputs(&self.label, &self.outputs, vec![y, h_out, c_out])
    }
}

/// A weight matrix (`W` or `R` of one direction: a row per gate) as the gate loop reads it.
pub(crate) enum Weights<'a> {
    /// As given: each gate is a dot product with its row.
    Rows(&'a [f32]),
    /// Transposed (a row per input element): each input element adds its scaled row to all the
    /// gates at once, a loop that vectorizes better; worth the transposition over several steps.
    Columns(Vec<f32>),
}

impl<'a> Weights<'a> {
    /// `m`, `gates` rows, to be applied `uses` times.
    pub(crate) fn of(m: &'a [f32], gates: usize, uses: usize) -> Weights<'a> {
        if uses < 4 {
            return Weights::Rows(m);
        }
        let cols = m.len() / gates.max(1);
        let mut t = vec![0f32; m.len()];
        for (r, row) in m.chunks_exact(cols.max(1)).enumerate() {
            for (c, &v) in row.iter().enumerate() {
                t[c * gates + r] = v;
            }
        }
        Weights::Columns(t)
    }

    /// `acc += m · v`.
    pub(crate) fn add_product(&self, acc: &mut [f32], v: &[f32]) {
        #[cfg(target_arch = "x86_64")]
        if std::arch::is_x86_feature_detected!("avx2") {
            // Safety: the CPU has AVX2, checked just above: the one requirement of calling a
            // function compiled with `target_feature(enable = "avx2")`.
            return unsafe { self.add_product_avx2(acc, v) };
        }
        self.add_product_any(acc, v)
    }

    /// [`Self::add_product_any`] compiled for AVX2 (the same operations in the same order).
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2")]
    fn add_product_avx2(&self, acc: &mut [f32], v: &[f32]) {
        self.add_product_any(acc, v)
    }

    /// `acc += m · v`, for any CPU; inlined into each build.
    #[inline(always)]
    fn add_product_any(&self, acc: &mut [f32], v: &[f32]) {
        match self {
            Weights::Rows(m) => {
                for (a, row) in acc.iter_mut().zip(m.chunks_exact(v.len().max(1))) {
                    *a += dot(row, v);
                }
            }
            Weights::Columns(t) => {
                for (&vk, row) in v.iter().zip(t.chunks_exact(acc.len())) {
                    for (a, &x) in acc.iter_mut().zip(row) {
                        *a += vk * x;
                    }
                }
            }
        }
    }
}

/// `a · b` with eight partial sums (so the loop vectorizes).
#[inline(always)]
fn dot(a: &[f32], b: &[f32]) -> f32 {
    let mut acc = [0f32; 8];
    let (ca, cb) = (a.chunks_exact(8), b.chunks_exact(8));
    let (ra, rb) = (ca.remainder(), cb.remainder());
    for (x, y) in ca.zip(cb) {
        for k in 0..8 {
            acc[k] += x[k] * y[k];
        }
    }
    let mut tail = 0f32;
    for (x, y) in ra.iter().zip(rb) {
        tail += x * y;
    }
    let mut sum = 0f32;
    for a in acc {
        sum += a;
    }
    sum + tail
}
