//! Windows, normalizations and reductions.

use super::{plus, product, scaled, times, Ctx, RuleResult, ADD, CMP, DIV, EXP, LOG, MUL, SQRT};
use crate::cost::poly::Poly;

/// A power: its cost is an exponential's.
const POW: i128 = EXP;

/// The rule of a window, normalization or reduction op, `None` if `op` is not one.
pub(super) fn rule(ctx: &Ctx, op: &str) -> Option<RuleResult> {
    Some(match op {
        // One compare (max) or add (average) per kernel tap per output element.
        "MaxPool" | "AveragePool" => pool(ctx, CMP),
        "LpPool" => pool(ctx, POW + ADD),
        // A sum over the input, a division per output element.
        "GlobalAveragePool" => input_and_output(ctx, ADD, DIV),
        "GlobalMaxPool" => input_and_output(ctx, CMP, 0),
        "GlobalLpPool" => input_and_output(ctx, POW + ADD, POW),
        // Per output element: nearest 0, linear 4, cubic 8 (onnx-tool's count).
        "Resize" | "Upsample" => resize(ctx),
        // (x - mean) / sqrt(var + eps) * scale + bias with the statistics given: per element.
        "BatchNormalization" => per_output(ctx, ADD + SQRT + DIV + ADD + MUL),
        // Statistics over the normalized axes, then the affine per element: 7 per element (two sums,
        // a square, the centring, a scale and the affine pair), 29 per row (the mean, a square root and
        // a reciprocal). Rows: the dims before `axis`.
        "LayerNormalization" => layer_norm(ctx),
        // The same with one row per (batch, channel).
        "InstanceNormalization" => rows_norm(ctx, 2),
        // The same with one row per (batch, group).
        "GroupNormalization" => group_norm(ctx),
        // Per element: a square and a sum, a scale and the weight; per row: mean, sqrt, reciprocal.
        "RMSNormalization" => rms_norm(ctx),
        // Per output element: a window of `size` squares, a power and a division.
        "LRN" => lrn(ctx),
        "LpNormalization" => per_output(ctx, EXP + ADD),
        // One operation per input element.
        "ReduceSum" | "ReduceMean" => per_input(ctx, ADD),
        "ReduceMax" | "ReduceMin" | "ArgMax" | "ArgMin" => per_input(ctx, CMP),
        "ReduceProd" => per_input(ctx, MUL),
        "ReduceL1" => per_input(ctx, CMP + ADD),
        "ReduceSumSquare" => per_input(ctx, MUL + ADD),
        // The sum of squares, then a square root (a logarithm) per output element.
        "ReduceL2" => input_and_output(ctx, MUL + ADD, SQRT),
        "ReduceLogSum" => input_and_output(ctx, ADD, LOG),
        "ReduceLogSumExp" => input_and_output(ctx, EXP + ADD, LOG),
        _ => return None,
    })
}

fn per_output(ctx: &Ctx, w: i128) -> RuleResult {
    scaled(&ctx.output_volume(0)?, w)
}

fn per_input(ctx: &Ctx, w: i128) -> RuleResult {
    scaled(&ctx.input_volume(0)?, w)
}

fn input_and_output(ctx: &Ctx, per_in: i128, per_out: i128) -> RuleResult {
    plus(&scaled(&ctx.input_volume(0)?, per_in)?, &scaled(&ctx.output_volume(0)?, per_out)?)
}

fn pool(ctx: &Ctx, w: i128) -> RuleResult {
    let kernel = ctx.ints("kernel_shape")?.ok_or_else(|| ctx.bad("attribute kernel_shape is missing"))?;
    let mut taps: i128 = 1;
    for k in kernel {
        if k < 1 {
            return Err(ctx.bad(format!("kernel_shape has {k}")));
        }
        taps = taps.checked_mul(k as i128).ok_or_else(|| ctx.bad("kernel_shape's product overflows"))?;
    }
    scaled(&ctx.output_volume(0)?, taps.checked_mul(w).ok_or_else(|| ctx.bad("kernel_shape's product overflows"))?)
}

fn resize(ctx: &Ctx) -> RuleResult {
    let mode = ctx.string("mode")?.unwrap_or_else(|| "nearest".into());
    let w = match mode.as_str() {
        "nearest" => 0,
        "linear" | "bilinear" | "trilinear" => 4,
        "cubic" | "bicubic" => 8,
        other => return Err(ctx.bad(format!("unknown mode '{other}'"))),
    };
    per_output(ctx, w)
}

/// 7 per element, 29 per row, rows the product of the dims before `axis`.
fn normalized(ctx: &Ctx, rows: Poly) -> RuleResult {
    plus(&scaled(&ctx.input_volume(0)?, 4 * ADD + 3 * MUL)?, &scaled(&rows, ADD + SQRT + DIV)?)
}

/// The rows of a normalization over the dims from `axis` (default -1) on: the product of the dims
/// before it.
fn rows_before_axis(ctx: &Ctx) -> RuleResult {
    let x = ctx.input(0)?;
    let axis = ctx.int("axis")?.unwrap_or(-1);
    let rank = x.len() as i64;
    let a = if axis < 0 { axis + rank } else { axis };
    if !(0..rank).contains(&a) {
        return Err(ctx.bad(format!("axis {axis} is out of range for rank {rank}")));
    }
    product(&x[..a as usize])
}

fn layer_norm(ctx: &Ctx) -> RuleResult {
    normalized(ctx, rows_before_axis(ctx)?)
}

fn rows_norm(ctx: &Ctx, leading: usize) -> RuleResult {
    let x = ctx.input(0)?;
    if x.len() < leading {
        return Err(ctx.bad(format!("the input has rank {}, at least {leading} needed", x.len())));
    }
    normalized(ctx, product(&x[..leading])?)
}

fn group_norm(ctx: &Ctx) -> RuleResult {
    let x = ctx.input(0)?;
    let groups = ctx.int("num_groups")?.ok_or_else(|| ctx.bad("attribute num_groups is missing"))?;
    let Some(n) = x.first() else {
        return Err(ctx.bad("the input has rank 0"));
    };
    normalized(ctx, scaled(&Poly::from_dim(n)?, groups as i128)?)
}

fn rms_norm(ctx: &Ctx) -> RuleResult {
    let rows = rows_before_axis(ctx)?;
    plus(&scaled(&ctx.input_volume(0)?, 2 * MUL + ADD + MUL)?, &scaled(&rows, ADD + SQRT + DIV)?)
}

fn lrn(ctx: &Ctx) -> RuleResult {
    let size = ctx.int("size")?.ok_or_else(|| ctx.bad("attribute size is missing"))?;
    if size < 1 {
        return Err(ctx.bad(format!("size is {size}")));
    }
    let per = (size as i128)
        .checked_mul(MUL)
        .and_then(|s| s.checked_add(DIV + EXP + ADD))
        .ok_or_else(|| ctx.bad("size overflows"))?;
    times(&ctx.output_volume(0)?, &Poly::constant(per))
}
