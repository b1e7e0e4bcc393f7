//! Contractions: one multiply-add per product summed.

use super::{plus, product, scaled, times, Ctx, RuleResult, DIV, EXP};
use crate::cost::poly::Poly;
use std::collections::BTreeMap;
use tract_onnx::prelude::*;

/// The rule of a contraction, `None` if `op` is not one.
pub(super) fn rule(ctx: &Ctx, op: &str) -> Option<RuleResult> {
    Some(match op {
        // Every output element sums C_in/group * prod(kernel) products: the weight's shape after its
        // first axis; a bias adds one per output element.
        "Conv" => conv(ctx, 1, Some(2)),
        "ConvInteger" => conv(ctx, 1, None),
        "QLinearConv" => conv(ctx, 3, Some(8)),
        // Every input element is multiplied by C_out/group * prod(kernel) weights, scattered into the
        // output (onnx-tool counts per output element, which over-counts by the stride's area).
        "ConvTranspose" => conv_transpose(ctx),
        // Y = alpha*A'*B' + beta*C: M*N*K, and M*N for C.
        "Gemm" => gemm(ctx),
        // Every output element sums K products, K the last dim of A (its only dim if A is 1-D).
        "MatMul" | "MatMulInteger" | "QLinearMatMul" => matmul(ctx),
        // The loop nest of the equation: the product of the size of every index letter.
        "Einsum" => einsum(ctx),
        "Attention" => attention(ctx),
        _ => return None,
    })
}

fn conv(ctx: &Ctx, weight: usize, bias: Option<usize>) -> RuleResult {
    let out = ctx.output_volume(0)?;
    let w = ctx.input(weight)?;
    if w.is_empty() {
        return Err(ctx.bad("the weight has rank 0"));
    }
    let mut macs = times(&out, &product(&w[1..])?)?;
    if bias.is_some_and(|b| ctx.has_input(b)) {
        macs = plus(&macs, &out)?;
    }
    Ok(macs)
}

fn conv_transpose(ctx: &Ctx) -> RuleResult {
    let w = ctx.input(1)?;
    if w.is_empty() {
        return Err(ctx.bad("the weight has rank 0"));
    }
    let mut macs = times(&ctx.input_volume(0)?, &product(&w[1..])?)?;
    if ctx.has_input(2) {
        macs = plus(&macs, &ctx.output_volume(0)?)?;
    }
    Ok(macs)
}

fn gemm(ctx: &Ctx) -> RuleResult {
    let a = ctx.input(0)?;
    if a.len() != 2 {
        return Err(ctx.bad(format!("A has rank {}, Gemm needs 2", a.len())));
    }
    let k = if ctx.int("transA")?.unwrap_or(0) != 0 { &a[0] } else { &a[1] };
    let out = ctx.output_volume(0)?;
    let mut macs = times(&out, &Poly::from_dim(k)?)?;
    if ctx.has_input(2) {
        macs = plus(&macs, &out)?;
    }
    Ok(macs)
}

fn matmul(ctx: &Ctx) -> RuleResult {
    let a = ctx.input(0)?;
    let Some(k) = a.last() else {
        return Err(ctx.bad("A has rank 0"));
    };
    times(&ctx.output_volume(0)?, &Poly::from_dim(k)?)
}

fn einsum(ctx: &Ctx) -> RuleResult {
    let equation = ctx.string("equation")?.ok_or_else(|| ctx.bad("attribute equation is missing"))?;
    let lhs = equation.split("->").next().unwrap_or("");
    let operands: Vec<&str> = lhs.split(',').map(str::trim).collect();
    if operands.len() != ctx.node.input.len() {
        return Err(ctx.bad(format!(
            "the equation names {} operands, the node has {}",
            operands.len(),
            ctx.node.input.len()
        )));
    }
    // Each index (a letter, or the k-th dim of the ellipsis counted from the right) and its size; a
    // broadcast 1 gives way to the other operand's size.
    let mut sizes: BTreeMap<String, TDim> = BTreeMap::new();
    for (i, spec) in operands.iter().enumerate() {
        let shape = ctx.input(i)?;
        let letters: Vec<char> = spec.replace("...", "").chars().filter(|c| !c.is_whitespace()).collect();
        let ellipsis = spec.contains("...");
        let rank_ellipsis = if ellipsis {
            shape
                .len()
                .checked_sub(letters.len())
                .ok_or_else(|| ctx.bad(format!("operand {i} has fewer dims than its indices")))?
        } else if letters.len() != shape.len() {
            return Err(ctx.bad(format!(
                "operand {i} has {} dims, its indices '{spec}' {}",
                shape.len(),
                letters.len()
            )));
        } else {
            0
        };
        let before =
            spec.find("...").map_or(letters.len(), |p| spec[..p].chars().filter(|c| !c.is_whitespace()).count());
        let mut keys: Vec<String> = letters[..before].iter().map(char::to_string).collect();
        keys.extend((0..rank_ellipsis).rev().map(|k| format!("...{k}")));
        keys.extend(letters[before..].iter().map(char::to_string));
        for (key, dim) in keys.into_iter().zip(shape) {
            let keep = match sizes.get(&key) {
                None => true,
                Some(old) => old.is_one() && !dim.is_one(),
            };
            if keep {
                sizes.insert(key, dim.clone());
            }
        }
    }
    let dims: Vec<TDim> = sizes.into_values().collect();
    product(&dims)
}

/// ONNX's Attention (opset 23): Q.K' over the whole key length, a softmax, then .V. Q and the output
/// are `[B, H, S, D]`, or `[B, S, H*D]` with `q_num_heads`; the key length is K's plus past_key's.
fn attention(ctx: &Ctx) -> RuleResult {
    let q = ctx.input(0)?;
    let k = ctx.input(1)?;
    let rows = match q.len() {
        4 => product(&q[..3])?,
        3 => {
            let heads = ctx.int("q_num_heads")?.ok_or_else(|| ctx.bad("3-D inputs need q_num_heads"))?;
            scaled(&product(&q[..2])?, heads as i128)?
        }
        r => return Err(ctx.bad(format!("Q has rank {r}, Attention needs 3 or 4"))),
    };
    let seq_axis = if k.len() == 4 { 2 } else { 1 };
    let mut keys = Poly::from_dim(k.get(seq_axis).ok_or_else(|| ctx.bad("K has rank below 3"))?)?;
    if ctx.has_input(4) {
        let past = ctx.input(4)?;
        keys = plus(&keys, &Poly::from_dim(past.get(2).ok_or_else(|| ctx.bad("past_key has rank below 3"))?)?)?;
    }
    let qk = times(&ctx.input_volume(0)?, &keys)?;
    let softmax = scaled(&times(&rows, &keys)?, EXP + DIV)?;
    let pv = times(&ctx.output_volume(0)?, &keys)?;
    plus(&plus(&qk, &softmax)?, &pv)
}
