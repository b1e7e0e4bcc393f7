//! Recurrent cells: the two gate products per step, the bias, and the gates' element-wise work.
//!
//! With `W: [dirs, G*H, I]`, `R: [dirs, G*H, H]`, `B: [dirs, 2*G*H]` (G gates), over `seq` steps of
//! `batch` rows: `(|W| + |R|) * batch * seq` multiply-adds, `|B| * batch * seq` adds, and per hidden
//! value per step and direction (`dirs * batch * seq * H` of them) the gate arithmetic below, with
//! the default activations (onnx-tool leaves out `dirs` there).

use super::{plus, product, scaled, times, Ctx, RuleResult, ADD, EXP, MUL, TANH};
use crate::cost::poly::Poly;

/// The rule of a recurrent op, `None` if `op` is not one.
pub(super) fn rule(ctx: &Ctx, op: &str) -> Option<RuleResult> {
    Some(match op {
        // 4 gate sums, 3 sigmoids, 2 tanh, c = f*c + i*g and h = o*tanh(c).
        "LSTM" => cell(ctx, 4 * ADD + 3 * EXP + 2 * TANH + ADD + 3 * MUL),
        // 3 gate sums, 2 sigmoids, 1 tanh, h = (1-z)*h' + z*h.
        "GRU" => cell(ctx, 3 * ADD + 2 * EXP + TANH + 2 * ADD + 3 * MUL),
        // one sum and a tanh.
        "RNN" => cell(ctx, ADD + TANH),
        _ => return None,
    })
}

fn cell(ctx: &Ctx, per_hidden: i128) -> RuleResult {
    let x = ctx.input(0)?;
    let w = ctx.input(1)?;
    let r = ctx.input(2)?;
    if x.len() != 3 || w.len() != 3 {
        return Err(ctx.bad("X and W must have rank 3"));
    }
    let batch_first = ctx.int("layout")?.unwrap_or(0) != 0;
    let (seq, batch) = if batch_first { (&x[1], &x[0]) } else { (&x[0], &x[1]) };
    let steps = times(&Poly::from_dim(seq)?, &Poly::from_dim(batch)?)?;
    let hidden = match ctx.int("hidden_size")? {
        Some(h) if h > 0 => Poly::constant(h as i128),
        Some(h) => return Err(ctx.bad(format!("hidden_size is {h}"))),
        None => Poly::from_dim(r.last().ok_or_else(|| ctx.bad("R has rank 0"))?)?,
    };
    let mut macs = times(&plus(&product(w)?, &product(r)?)?, &steps)?;
    if ctx.has_input(3) {
        macs = plus(&macs, &times(&ctx.input_volume(3)?, &steps)?)?;
    }
    let dirs = Poly::from_dim(&w[0])?;
    let values = times(&times(&dirs, &steps)?, &hidden)?;
    plus(&macs, &scaled(&values, per_hidden)?)
}
