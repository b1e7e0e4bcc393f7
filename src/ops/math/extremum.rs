//! `ReduceMax` and `ReduceMin` of floats: minus and plus infinity where the specification says.
//!
//! tract starts a float maximum at the largest negative *finite* value (`-f32::MAX`) and a minimum at
//! `f32::MAX`, so the maximum of a set of `-inf` values, and of an empty set, came out as `-f32::MAX`
//! where the specification (and numpy) give `-inf` (the `-inf` rows a causal or boolean attention
//! mask makes, for one); the same for minima and `+inf`.
//!
//! A maximum tract gives as `-MAX` is right when its set holds `-MAX`; otherwise every element of the
//! set is `-inf` (or the set is empty) and the maximum is `-inf`. [`ExtremumNode`] wraps the node's op
//! (tract's, or our [`crate::ops::params::ParamNode`]) and, in the typed model, puts [`ExtremumFix`] after
//! it: on the output elements equal to the finite extreme (rare), it looks at the reduced input and
//! corrects them; otherwise the output passes on unchanged. Integers keep tract's values (the type's
//! minimum or maximum, as the specification says).
//!
//! Booleans (ReduceMax and ReduceMin from opset 20; tract's reducers take numbers only) are reduced
//! as bytes, 0 and 1, and cast back: a maximum is "any", a minimum "all", and the empty set gives
//! false (maximum, the byte 0) or true (minimum, the byte 255).

use crate::ops::params::distinct_axes;
use crate::ops::stock_node::{Fix, StockNode};
use std::collections::HashMap;
use tract_onnx::prelude::*;
use tract_onnx::tract_core::internal::*;
use tract_onnx::tract_hir::internal::*;

/// A float `ReduceMax` or `ReduceMin` with infinite extremes.
pub(crate) type ExtremumNode = StockNode<Extremum>;

/// Where a reduction reads its axes.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) enum AxesFrom {
    /// The attribute `axes` (`None`: every axis).
    Attribute(Option<Vec<i64>>),
    /// The second input, with `noop_with_empty_axes`.
    Input {
        /// Whether empty axes leave the input as is (else they reduce every axis).
        noop_with_empty_axes: bool,
    },
}

/// What [`ExtremumNode`] does after the node's op.
#[derive(Debug, Clone)]
pub(crate) struct Extremum {
    /// `true` for ReduceMax (minus infinity), `false` for ReduceMin (plus infinity).
    pub max: bool,
    /// The axes.
    pub axes: AxesFrom,
}

/// Wraps a reduction's op (as a builder returns it) for `ReduceMax` and `ReduceMin`; other ops as is.
pub(crate) fn wrap(
    built: (Box<dyn InferenceOp>, Vec<String>),
    node: &tract_onnx::pb::NodeProto,
    axes: AxesFrom,
) -> (Box<dyn InferenceOp>, Vec<String>) {
    match node.op_type.as_str() {
        "ReduceMax" => StockNode::wrap(built, Extremum { max: true, axes }, node),
        "ReduceMin" => StockNode::wrap(built, Extremum { max: false, axes }, node),
        _ => built,
    }
}

impl Fix for Extremum {
    fn folds(_this: &ExtremumNode, inputs: &[TValue]) -> bool {
        // Float and boolean inputs are left to the typed model, where the fix follows the reduction
        // (or surrounds it, booleans).
        inputs.first().is_none_or(|x| !x.datum_type().is_float() && x.datum_type() != DatumType::Bool)
    }

    fn to_typed(
        this: &ExtremumNode,
        source: &InferenceModel,
        node: &InferenceNode,
        target: &mut TypedModel,
        mapping: &HashMap<OutletId, OutletId>,
    ) -> TractResult<TVec<OutletId>> {
        let input = |i: usize| node.inputs.get(i).and_then(|o| mapping.get(o)).copied();
        let data = input(0).context("a reduction's input")?;
        let fact = target.outlet_fact(data)?.clone();
        if fact.datum_type == DatumType::Bool {
            return bool_as_bytes(this, source, node, target, mapping, data);
        }
        let outputs = this.stock.to_typed(source, node, target, mapping)?;
        if !fact.datum_type.is_float() || outputs.len() != 1 {
            return Ok(outputs);
        }
        let rank = fact.rank();
        let invalid = |m: String| crate::NodeError::invalid(&this.node, &this.op, m);
        let (axes, mut inputs) = match &this.fix.axes {
            AxesFrom::Attribute(None) => (Some((0..rank).collect()), tvec![data, outputs[0]]),
            AxesFrom::Attribute(Some(axes)) => {
                (Some(distinct_axes(axes, rank).map_err(invalid)?), tvec![data, outputs[0]])
            }
            AxesFrom::Input { noop_with_empty_axes } => {
                let axes = input(1).context("a reduction's axes")?;
                // Axes held as dim expressions with symbols are read when the node runs.
                let known = target.outlet_fact(axes)?.konst.as_ref().and_then(|v| {
                    let v = v.cast_to::<i64>().ok()?;
                    Some(v.try_as_plain_ram().ok()?.as_slice::<i64>().ok()?.to_vec())
                });
                match known {
                    Some(values) => match (values.is_empty(), noop_with_empty_axes) {
                        (true, true) => return Ok(outputs),
                        (true, false) => (Some((0..rank).collect()), tvec![data, outputs[0]]),
                        _ => (Some(distinct_axes(&values, rank).map_err(invalid)?), tvec![data, outputs[0]]),
                    },
                    None => (None, tvec![data, outputs[0], axes]),
                }
            }
        };
        let noop_with_empty_axes = matches!(this.fix.axes, AxesFrom::Input { noop_with_empty_axes: true });
        let fix = ExtremumFix { max: this.fix.max, axes, noop_with_empty_axes, node: this.node.clone() };
        inputs.truncate(if fix.axes.is_some() { 2 } else { 3 });
        target.wire_node(format!("{}.infinite_extremes", node.name), fix, &inputs)
    }
}

/// The reduction of boolean `data` (the node's first input in `target`) as one of bytes between two
/// casts.
fn bool_as_bytes(
    this: &ExtremumNode,
    source: &InferenceModel,
    node: &InferenceNode,
    target: &mut TypedModel,
    mapping: &HashMap<OutletId, OutletId>,
    data: OutletId,
) -> TractResult<TVec<OutletId>> {
    use tract_onnx::tract_core::ops::cast::cast;
    let bytes = target.wire_node(format!("{}.as_bytes", node.name), cast(DatumType::U8), &[data])?[0];
    let mut mapping = mapping.clone();
    mapping.insert(node.inputs[0], bytes);
    let reduced = this.stock.to_typed(source, node, target, &mapping)?;
    if reduced.len() != 1 {
        let msg = format!("the reduction has {} outputs, 1 expected", reduced.len());
        return Err(crate::NodeError::invalid(&this.node, &this.op, msg));
    }
    target.wire_node(format!("{}.as_bool", node.name), cast(DatumType::Bool), &reduced)
}

/// The reduction's output (input 1) with its finite extremes corrected from the reduced input
/// (input 0): `-MAX` becomes `-inf` (ReduceMax; `MAX` becomes `+inf` for ReduceMin) where the
/// reduced set does not hold it. The axes are known, or read from input 2.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct ExtremumFix {
    /// `true`: a maximum; `false`: a minimum.
    pub max: bool,
    /// The reduced axes, normalized; `None`: read from input 2 when the node runs.
    pub axes: Option<Vec<usize>>,
    /// With axes read when the node runs: whether empty axes leave the input as is.
    pub noop_with_empty_axes: bool,
    /// Node name, for errors.
    pub node: String,
}

/// The finite and infinite extremes of a float type.
trait Extremes: Datum + Copy + PartialEq {
    /// The largest negative and largest positive finite values, minus and plus infinity.
    const LIMITS: [Self; 4];
}

impl Extremes for f16 {
    const LIMITS: [f16; 4] = [f16::MIN, f16::MAX, f16::NEG_INFINITY, f16::INFINITY];
}

impl Extremes for f32 {
    const LIMITS: [f32; 4] = [f32::MIN, f32::MAX, f32::NEG_INFINITY, f32::INFINITY];
}

impl Extremes for f64 {
    const LIMITS: [f64; 4] = [f64::MIN, f64::MAX, f64::NEG_INFINITY, f64::INFINITY];
}

impl ExtremumFix {
    fn invalid(&self, m: impl std::fmt::Display) -> TractError {
        let op = if self.max { "ReduceMax" } else { "ReduceMin" };
        crate::NodeError::invalid(&self.node, op, m)
    }

    /// The reduced axes (`None`: nothing is reduced).
    fn axes_of(&self, rank: usize, input: Option<&TValue>) -> TractResult<Option<Vec<usize>>> {
        if let Some(axes) = &self.axes {
            return Ok(Some(axes.clone()));
        }
        let values = input.context("a reduction's axes")?.cast_to::<i64>()?;
        let values = values.try_as_plain_ram()?.as_slice::<i64>()?.to_vec();
        if values.is_empty() {
            return Ok((!self.noop_with_empty_axes).then(|| (0..rank).collect()));
        }
        distinct_axes(&values, rank).map(Some).map_err(|m| self.invalid(m))
    }

    fn fix_t<T: Extremes>(&self, data: &Tensor, reduced: &Tensor, axes: &[usize]) -> TractResult<Option<Tensor>> {
        let [low, high, neg_inf, inf] = T::LIMITS;
        let (extreme, infinite) = if self.max { (low, neg_inf) } else { (high, inf) };
        let out = reduced.try_as_plain_ram()?.as_slice::<T>()?;
        if !out.contains(&extreme) {
            return Ok(None);
        }
        // The output element each input element is reduced into: its coordinates on the kept axes.
        let shape = data.shape();
        let kept: usize = (0..shape.len()).filter(|a| !axes.contains(a)).map(|a| shape[a]).product();
        if kept != out.len() {
            return Err(self.invalid(format!("the reduction has {} elements, the kept axes {kept}", out.len())));
        }
        let mut holds = vec![false; out.len()];
        for (i, v) in data.try_as_plain_ram()?.as_slice::<T>()?.iter().enumerate() {
            if *v != extreme {
                continue;
            }
            let (mut rest, mut o, mut stride) = (i, 0usize, 1usize);
            for a in (0..shape.len()).rev() {
                let coord = rest % shape[a];
                rest /= shape[a];
                if !axes.contains(&a) {
                    o += coord * stride;
                    stride *= shape[a];
                }
            }
            holds[o] = true;
        }
        let fixed: Vec<T> =
            out.iter().zip(&holds).map(|(&v, &h)| if v == extreme && !h { infinite } else { v }).collect();
        Ok(Some(tract_ndarray::ArrayD::from_shape_vec(reduced.shape(), fixed)?.into_tensor()))
    }
}

impl Op for ExtremumFix {
    fn name(&self) -> StaticName {
        "ExtremumFix".into()
    }

    op_as_typed_op!();
}

impl EvalOp for ExtremumFix {
    op_out_of_plan!();

    fn eval(&self, _ctx: &EvalContext, inputs: TVec<TValue>) -> TractResult<TVec<TValue>> {
        let (data, reduced) = (&inputs[0], &inputs[1]);
        let Some(axes) = self.axes_of(data.rank(), inputs.get(2))? else { return Ok(tvec!(reduced.clone())) };
        let fixed = match data.datum_type() {
            DatumType::F16 => self.fix_t::<f16>(data, reduced, &axes)?,
            DatumType::F32 => self.fix_t::<f32>(data, reduced, &axes)?,
            DatumType::F64 => self.fix_t::<f64>(data, reduced, &axes)?,
            _ => None,
        };
        Ok(tvec!(fixed.map_or_else(|| reduced.clone(), Tensor::into_tvalue)))
    }
}

impl TypedOp for ExtremumFix {
    as_op!();

    fn output_facts(&self, inputs: &[&TypedFact]) -> TractResult<TVec<TypedFact>> {
        ensure!(inputs.len() >= 2, "ExtremumFix takes the reduced input and the reduction");
        Ok(tvec!(inputs[1].datum_type.fact(inputs[1].shape.clone())))
    }
}
