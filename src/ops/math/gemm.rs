//! ONNX `Gemm` of float16: computed where onnx's reference computes it (tract refused it).
//!
//! tract-onnx wires `beta * C` with `beta` a float32 constant, which a float16 `C` cannot be
//! multiplied by: every float16 Gemm with a `C` failed to load ("Trying to substitute a F32 by F16").
//! onnx's reference computes `np.dot(A, B)` in float16 (numpy sums in float32 and rounds once), then,
//! its `alpha` and `beta` being float32 numbers, `AB * alpha + C * beta` in float32, rounded to float16
//! at the end. Here a float16 Gemm (opset 7 on, where `C` broadcasts) is wired that way: the product
//! as a float32 einsum rounded to float16, the rest in float32 between casts. Other types, and opset 6's
//! `broadcast` attribute, keep tract's op, except for `alpha = 0` ([`zero_alpha`]): `0 * AB` is NaN
//! where the product is infinite or NaN, as the reference computes it, where tract's optimizer made
//! the product by a constant 0 zeros.

use crate::ops::stock_node::{Fix, StockNode};
use std::collections::HashMap;
use tract_onnx::model::ParsingContext;
use tract_onnx::pb::NodeProto;
use tract_onnx::prelude::*;
use tract_onnx::tract_core::ops::cast::cast;
use tract_onnx::tract_core::ops::change_axes::wire_with_rank_broadcast;
use tract_onnx::tract_core::ops::einsum::EinSum;
use tract_onnx::tract_core::ops::math;
use tract_onnx::tract_hir::internal::*;

/// The Gemm builder: tract's, with float16 wired as the reference computes it.
pub(crate) fn gemm(ctx: &ParsingContext, node: &NodeProto) -> TractResult<(Box<dyn InferenceOp>, Vec<String>)> {
    let label = crate::node::node_label(node);
    let float = |name: &str, default: f32| -> TractResult<f32> {
        Ok(crate::node::attrs::float(&label, node, name)?.unwrap_or(default))
    };
    // Any value but 0 transposes, as in onnx's reference.
    let flag = |name: &str| -> TractResult<bool> { Ok(crate::node::attrs::int(&label, node, name)?.unwrap_or(0) != 0) };
    let fix = HalfGemm {
        alpha: float("alpha", 1.0)?,
        beta: float("beta", 1.0)?,
        trans_a: flag("transA")?,
        trans_b: flag("transB")?,
        broadcasts: ctx.onnx_operator_set_version >= 7,
    };
    Ok(StockNode::wrap(crate::ops::stock("Gemm")(ctx, node)?, fix, node))
}

/// What [`gemm`] adds to tract's op: float16 computed as the reference.
#[derive(Debug, Clone)]
pub(crate) struct HalfGemm {
    /// `alpha` (1 by default).
    pub alpha: f32,
    /// `beta` (1 by default).
    pub beta: f32,
    /// `transA`.
    pub trans_a: bool,
    /// `transB`.
    pub trans_b: bool,
    /// Opset 7 or later: `C` broadcasts (no `broadcast` attribute).
    pub broadcasts: bool,
}

impl Fix for HalfGemm {
    fn folds(_this: &StockNode<Self>, inputs: &[TValue]) -> bool {
        crate::ops::replaced::folds_unless_half(inputs)
    }

    fn to_typed(
        this: &StockNode<Self>,
        source: &InferenceModel,
        inode: &InferenceNode,
        target: &mut TypedModel,
        mapping: &HashMap<OutletId, OutletId>,
    ) -> TractResult<TVec<OutletId>> {
        let inputs: TVec<OutletId> = inode.inputs.iter().filter_map(|o| mapping.get(o).copied()).collect();
        let (Some(&a), Some(&b)) = (inputs.first(), inputs.get(1)) else {
            return this.stock.to_typed(source, inode, target, mapping);
        };
        let half = |o: OutletId| -> TractResult<bool> { Ok(target.outlet_fact(o)?.datum_type == DatumType::F16) };
        if !this.fix.broadcasts || !half(a)? || !half(b)? {
            if this.fix.alpha == 0.0 && this.fix.broadcasts {
                return zero_alpha(this, inode, target, &inputs);
            }
            return this.stock.to_typed(source, inode, target, mapping);
        }
        let f = &this.fix;
        let err = |msg: String| crate::NodeError::invalid(&this.node, "Gemm", msg);
        for (name, o) in [("A", a), ("B", b)] {
            let rank = target.outlet_fact(o)?.rank();
            if rank != 2 {
                return Err(err(format!("{name} has rank {rank}: it must be a matrix")));
            }
        }
        let name = &inode.name;
        let f32_of = |target: &mut TypedModel, label: &str, o: OutletId| -> TractResult<OutletId> {
            Ok(target.wire_node(format!("{name}.{label}_f32"), cast(DatumType::F32), &[o])?[0])
        };
        let (a32, b32) = (f32_of(target, "a", a)?, f32_of(target, "b", b)?);
        let axes = AxesMapping::for_numpy_matmul(2, f.trans_a, f.trans_b, false)?;
        let ab = target.wire_node(format!("{name}.ab"), EinSum::new(axes, DatumType::F32), &[a32, b32])?[0];
        // numpy's float16 dot: summed in float32, rounded once.
        let ab = target.wire_node(format!("{name}.ab_f16"), cast(DatumType::F16), &[ab])?[0];
        let mut y = f32_of(target, "ab", ab)?;
        if f.alpha == 0.0 {
            y = target.wire_node(format!("{name}.alpha_ab"), TimesZero, &[y])?[0];
        } else if f.alpha != 1.0 {
            let alpha = target.add_const(format!("{name}.alpha"), tensor0(f.alpha))?;
            y = wire_with_rank_broadcast(format!("{name}.alpha_ab"), target, math::mul(), &[y, alpha])?[0];
        }
        if let (Some(&c), true) = (inputs.get(2), f.beta != 0.0) {
            let c_dt = target.outlet_fact(c)?.datum_type;
            if c_dt != DatumType::F16 {
                return Err(err(format!("C is {c_dt:?} but A and B are F16: they must have one type")));
            }
            // C broadcasts (unidirectionally) to the product's [M, N].
            let (ad, bd) = (target.outlet_fact(a)?.shape.to_tvec(), target.outlet_fact(b)?.shape.to_tvec());
            let out = [ad[usize::from(f.trans_a)].clone(), bd[usize::from(!f.trans_b)].clone()];
            let cd = target.outlet_fact(c)?.shape.to_tvec();
            let fits = cd.len() <= 2
                && cd.iter().rev().zip(out.iter().rev()).all(|(c, o)| match (c.to_i64(), o.to_i64()) {
                    (Ok(c), Ok(o)) => c == 1 || c == o,
                    _ => true,
                });
            if !fits {
                let show = |d: &[TDim]| d.iter().map(crate::dims::format_dim).collect::<Vec<_>>().join(", ");
                return Err(err(format!(
                    "C has shape [{}], which does not broadcast to the product's [{}]",
                    show(&cd),
                    show(&out)
                )));
            }
            let mut c = f32_of(target, "c", c)?;
            if f.beta != 1.0 {
                let beta = target.add_const(format!("{name}.beta"), tensor0(f.beta))?;
                c = wire_with_rank_broadcast(format!("{name}.beta_c"), target, math::mul(), &[c, beta])?[0];
            }
            y = wire_with_rank_broadcast(format!("{name}.plus_c"), target, math::add(), &[y, c])?[0];
        }
        target.wire_node(format!("{name}.f16"), cast(DatumType::F16), &[y])
    }
}

/// A Gemm with `alpha = 0` over float32 or float64 (opset 7 on): `0 * AB + beta * C` as the reference
/// computes it, the product kept (tract's wiring multiplies by a constant 0, which its optimizer
/// replaces by zeros, so an infinity or NaN in `A` or `B` gave `C` instead of NaN).
fn zero_alpha(
    this: &StockNode<HalfGemm>,
    inode: &InferenceNode,
    target: &mut TypedModel,
    inputs: &[OutletId],
) -> TractResult<TVec<OutletId>> {
    let (f, name) = (&this.fix, &inode.name);
    let err = |msg: String| crate::NodeError::invalid(&this.node, "Gemm", msg);
    let (Some(&a), Some(&b)) = (inputs.first(), inputs.get(1)) else {
        return Err(err("Gemm takes A and B".to_string()));
    };
    let dt = target.outlet_fact(a)?.datum_type;
    for (what, o) in [("A", a), ("B", b)] {
        let fact = target.outlet_fact(o)?;
        if fact.rank() != 2 {
            return Err(err(format!("{what} has rank {}: it must be a matrix", fact.rank())));
        }
        if fact.datum_type != dt || !(dt == DatumType::F32 || dt == DatumType::F64) {
            return Err(err(format!(
                "A is {dt:?} and B {:?}: Gemm takes two float matrices of one type",
                fact.datum_type
            )));
        }
    }
    let axes = AxesMapping::for_numpy_matmul(2, f.trans_a, f.trans_b, false)?;
    let ab = target.wire_node(format!("{name}.ab"), EinSum::new(axes, dt), &[a, b])?[0];
    let mut y = target.wire_node(format!("{name}.alpha_ab"), TimesZero, &[ab])?[0];
    if let (Some(&c), true) = (inputs.get(2), f.beta != 0.0) {
        let c_dt = target.outlet_fact(c)?.datum_type;
        if c_dt != dt {
            return Err(err(format!("C is {c_dt:?} but A and B are {dt:?}: they must have one type")));
        }
        let mut c = c;
        if f.beta != 1.0 {
            let beta = tensor0(f.beta).cast_to_dt(dt)?.into_owned();
            let beta = target.add_const(format!("{name}.beta"), beta)?;
            c = wire_with_rank_broadcast(format!("{name}.beta_c"), target, math::mul(), &[c, beta])?[0];
        }
        y = wire_with_rank_broadcast(format!("{name}.plus_c"), target, math::add(), &[y, c])?[0];
    }
    Ok(tvec!(y))
}

/// `x * 0` elementwise, over floats: NaN where `x` is infinite or NaN, a zero of `x`'s sign
/// elsewhere, as IEEE multiplication gives. An op of its own, so that no optimizer replaces it by
/// zeros.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) struct TimesZero;

impl Op for TimesZero {
    fn name(&self) -> StaticName {
        "TimesZero".into()
    }

    op_as_typed_op!();
}

impl EvalOp for TimesZero {
    op_out_of_plan!();

    fn eval(&self, _ctx: &EvalContext, inputs: TVec<TValue>) -> TractResult<TVec<TValue>> {
        let mut x = args_1!(inputs).into_tensor();
        let dt = x.datum_type();
        let mut plain = x.try_as_plain_ram_mut()?;
        match dt {
            DatumType::F16 => plain.as_slice_mut::<f16>()?.iter_mut().for_each(|v| *v *= f16::from_f32(0.0)),
            DatumType::F32 => plain.as_slice_mut::<f32>()?.iter_mut().for_each(|v| *v *= 0.0),
            DatumType::F64 => plain.as_slice_mut::<f64>()?.iter_mut().for_each(|v| *v *= 0.0),
            dt => bail!("TimesZero takes floats, got {dt:?}"),
        }
        Ok(tvec!(x.into_tvalue()))
    }
}

impl TypedOp for TimesZero {
    as_op!();

    fn output_facts(&self, inputs: &[&TypedFact]) -> TractResult<TVec<TypedFact>> {
        let fact = inputs.first().context("TimesZero takes one input")?;
        Ok(tvec!(fact.datum_type.fact(fact.shape.clone())))
    }
}
