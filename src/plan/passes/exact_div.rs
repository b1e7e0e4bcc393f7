//! The exact-division pass: every float `Div` that tract decomposed and no fusion took back as one
//! [`ExactDiv`].
//!
//! tract's declutter rewrites `Div(a, b)` (node `N`) into `Mul(a, r)` named `N`, with `r` the node
//! `N-recip`: `Recip(b)`, folded into a constant `N-recip` when `b` is one, or turned into `Rsqrt(v)`
//! when `b` is `Sqrt(v)`. The fusions of decomposed normalizations (tract's, and our layer-norm pass)
//! look for that form, so it stays through declutter and our rewrites; after them, before code
//! generation, [`restore`] finds each such pair still standing and puts back the division:
//!
//! - `r = Recip(b)`: `ExactDiv(a, b)`;
//! - `r = Rsqrt(v)`: `ExactDiv(a, Sqrt(v))` (both correctly rounded, as ONNX's `Div(a, Sqrt(v))`);
//! - `r` a constant: `ExactDiv(a, b)` with `b` the divisor the `Div` had before declutter (recorded
//!   by [`divisions`]), when `r` is tract's reciprocal of it; left as tract made it when every
//!   divisor is a power of two whose reciprocal is exact (`a * (1/b)` is then `a / b`, every bit).
//!
//! The `Mul` must have kept the name `N`, and `r` must be read by it alone (a constant excepted):
//! anything else was changed by another rewrite, and stays as it is.

use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;

use tract_onnx::prelude::*;
use tract_onnx::tract_core::ops::element_wise::ElementWiseOp;
use tract_onnx::tract_core::ops::konst::Const;
use tract_onnx::tract_core::ops::math::sqrt;
use tract_onnx::tract_core::optim::{OptimizerSession, TypedPass};

use super::node_match::binary;
use crate::plan::ExactDiv;

/// The float `Div` nodes of a model before declutter: name, and the divisor when it is a constant.
pub(crate) type Divisions = HashMap<String, Option<Arc<Tensor>>>;

/// The float divisions of `model` (not decluttered yet).
pub(crate) fn divisions(model: &TypedModel) -> Divisions {
    let mut found = Divisions::new();
    for node in &model.nodes {
        let Some(("Div", [_, b])) = binary(node) else { continue };
        let Ok(fact) = model.outlet_fact(OutletId::new(node.id, 0)) else { continue };
        if fact.datum_type.is_float() {
            let divisor = model.outlet_fact(b).ok().and_then(|f| f.konst.clone());
            found.insert(node.name.clone(), divisor);
        }
    }
    found
}

/// The pass putting [`ExactDiv`] back (see the module docs), node by node like `Sweep`.
#[derive(Clone)]
pub(crate) struct Restore {
    divisions: Arc<Divisions>,
    next: usize,
}

impl Restore {
    /// The pass for the divisions a model had before declutter.
    pub(crate) fn new(divisions: Divisions) -> Restore {
        Restore { divisions: Arc::new(divisions), next: 0 }
    }
}

impl fmt::Debug for Restore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("exact division")
    }
}

impl TypedPass for Restore {
    fn reset(&mut self) -> TractResult<()> {
        self.next = 0;
        Ok(())
    }

    fn next(&mut self, _session: &mut OptimizerSession, model: &TypedModel) -> TractResult<Option<TypedModelPatch>> {
        if self.divisions.is_empty() {
            return Ok(None);
        }
        for node in model.nodes.iter().skip(self.next) {
            self.next = node.id + 1;
            if let Some(patch) = restore(model, node, &self.divisions)? {
                return Ok(Some(patch));
            }
        }
        Ok(None)
    }
}

/// What stands for the divisor of a decomposed division.
enum Divisor {
    /// The value itself (the input of a `Recip`, or the constant before declutter).
    Value(OutletId),
    /// A constant divisor, recorded before declutter.
    Constant(Arc<Tensor>),
    /// The input of an `Rsqrt`: the divisor is its square root.
    SqrtOf(OutletId),
}

/// The patch for `node` if it is the `Mul` of a decomposed division (see the module docs).
pub(crate) fn restore(
    model: &TypedModel,
    node: &TypedNode,
    divisions: &Divisions,
) -> TractResult<Option<TypedModelPatch>> {
    let Some(recorded) = divisions.get(&node.name) else { return Ok(None) };
    let Some(("Mul", [x, y])) = binary(node) else { return Ok(None) };
    let recip_name = format!("{}-recip", node.name);
    let (a, r) = if model.node(y.node).name == recip_name {
        (x, y)
    } else if model.node(x.node).name == recip_name {
        (y, x)
    } else {
        return Ok(None);
    };
    let Some(divisor) = divisor(model, r, recorded.as_ref())? else { return Ok(None) };
    let mut patch = TypedModelPatch::new(format!("exact division {}", node.name));
    let a = patch.tap_model(model, a)?;
    let b = match divisor {
        Divisor::Value(b) => patch.tap_model(model, b)?,
        Divisor::Constant(k) => {
            let shape = model.outlet_fact(r)?.shape.as_concrete().map(<[usize]>::to_vec);
            let k = match shape {
                Some(shape) if shape != k.shape() => k.clone().into_tensor().into_shape(&shape)?.into_arc_tensor(),
                _ => k,
            };
            patch.add_const(format!("{}.divisor", node.name), k)?
        }
        Divisor::SqrtOf(v) => {
            let v = patch.tap_model(model, v)?;
            patch.wire_node(format!("{}.sqrt", node.name), sqrt(), &[v])?[0]
        }
    };
    let out = patch.wire_node(&node.name, ExactDiv::new(), &[a, b])?[0];
    patch.shunt_outside(model, OutletId::new(node.id, 0), out)?;
    Ok(Some(patch))
}

/// The divisor behind `r`, the reciprocal operand of a decomposed division, if the division should
/// be put back.
fn divisor(model: &TypedModel, r: OutletId, recorded: Option<&Arc<Tensor>>) -> TractResult<Option<Divisor>> {
    let producer = model.node(r.node);
    if let Some(k) = producer.op_as::<Const>() {
        let Some(b) = recorded else { return Ok(None) };
        return Ok(constant_divisor(k.val(), b)?.then(|| Divisor::Constant(b.clone())));
    }
    let alone = producer.outputs.len() == 1 && producer.outputs[0].successors.len() == 1 && !model.outputs.contains(&r);
    let (Some(ew), [input], true) = (producer.op_as::<ElementWiseOp>(), &*producer.inputs, alone) else {
        return Ok(None);
    };
    Ok(match ew.0.name().as_ref() {
        "Recip" => Some(Divisor::Value(*input)),
        "Rsqrt" => Some(Divisor::SqrtOf(*input)),
        _ => None,
    })
}

/// Whether `reciprocal` is tract's `1 / b` of the constant divisor `b` and the product by
/// it differs from the division somewhere (some divisor is not a power of two with an exact
/// reciprocal).
fn constant_divisor(reciprocal: &Tensor, b: &Tensor) -> TractResult<bool> {
    if reciprocal.datum_type() != b.datum_type() || reciprocal.len() != b.len() || !b.datum_type().is_float() {
        return Ok(false);
    }
    let (r, b) = (reciprocal.cast_to::<f64>()?, b.cast_to::<f64>()?);
    let (r, b) = (r.try_as_plain_ram()?, b.try_as_plain_ram()?);
    let (r, b) = (r.as_slice::<f64>()?, b.as_slice::<f64>()?);
    // The reciprocal of each divisor, rounded to the type (tract's fold of `Recip(b)`).
    let expected = |v: f64| -> Tensor {
        let t = tensor0(1.0 / v);
        t.cast_to_dt(reciprocal.datum_type()).map(|t| t.into_owned()).unwrap_or(t)
    };
    let mut differs = false;
    for (&rv, &bv) in r.iter().zip(b) {
        let e = expected(bv).cast_to_scalar::<f64>()?;
        if e.to_bits() != rv.to_bits() && !(e.is_nan() && rv.is_nan()) {
            return Ok(false);
        }
        // A power of two (no mantissa bits) times its reciprocal exactly 1: `x * r` is `x / b`.
        let exact = bv.is_finite() && bv != 0.0 && bv.abs().to_bits() & ((1u64 << 52) - 1) == 0 && rv * bv == 1.0;
        differs |= !exact;
    }
    Ok(differs)
}
