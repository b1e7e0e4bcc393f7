//! `Pad`'s `pads` and `axes` (opset 11+, inputs 1 and 3) as parameters ([`crate::ops::params`]).
//!
//! Constant pads go to tract's Pad (or [`crate::ops::array::pad::symbolic`]'s when they are dim expressions) after the
//! checks; pads known only at run time give fresh dims (the rank is the input's; an axis no pad
//! touches keeps its dim when `axes` is known) and are checked before tract's Pad runs: one pair per
//! padded axis, axes in range and distinct, no negative pad (tract cannot crop), `reflect` pads
//! below the dim and `edge` pads only on a non-empty axis (tract reads outside the data otherwise),
//! output dims without overflow.

use crate::ops::params::{distinct_axes, Inlet, OutShape, ParamRule, Refusal};
use tract_onnx::prelude::*;

/// The output shape of a Pad from its pads and axes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct PadRule {
    /// The mode: `constant`, `reflect`, `edge` or `wrap`.
    pub mode: String,
    /// The inlet of `axes`, when the node has it (inlets skip absent optional inputs).
    pub axes: Option<usize>,
}

impl PadRule {
    /// The checked output dim of an axis of dim `d` padded by `before` and `after`.
    fn padded(&self, axis: usize, d: &TDim, before: &TDim, after: &TDim) -> Result<TDim, String> {
        let (Some(b), Some(a)) = (before.as_i64(), after.as_i64()) else {
            return Ok((d.clone() + before.clone() + after.clone()).simplify());
        };
        if b < 0 || a < 0 {
            return Err(format!("pads [{b}, {a}] on axis {axis} are negative: cropping is not supported"));
        }
        let Some(n) = d.as_i64() else { return Ok((d.clone() + b + a).simplify()) };
        match self.mode.as_str() {
            "reflect" if b.max(a) > 0 && b.max(a) >= n => {
                return Err(format!("reflect pads [{b}, {a}] on axis {axis} must be below its dim {n}"));
            }
            "edge" | "wrap" if b.max(a) > 0 && n == 0 => {
                return Err(format!("{} pads [{b}, {a}] on axis {axis}, which is empty", self.mode));
            }
            _ => {}
        }
        n.checked_add(b)
            .and_then(|v| v.checked_add(a))
            .map(TDim::Val)
            .ok_or_else(|| format!("axis {axis}: {n} + {b} + {a} overflows"))
    }
}

impl ParamRule for PadRule {
    fn is_param(&self, ix: usize) -> bool {
        ix == 1 || Some(ix) == self.axes
    }

    fn outputs(&self, inputs: &[Inlet]) -> Result<Vec<OutShape>, Refusal> {
        let data = inputs.first().ok_or("the data input is missing")?;
        let pads = inputs.get(1).ok_or("the pads input is missing")?;
        if !pads.datum_type.is_integer() && !pads.datum_type.is_tdim() {
            return Err(format!("pads must be integers, got {:?}", pads.datum_type).into());
        }
        if pads.rank() != 1 {
            return Err(format!("pads must be a 1-D tensor, got rank {}", pads.rank()).into());
        }
        let rank = data.rank();
        let axes: Option<Vec<usize>> = match self.axes {
            None => Some((0..rank).collect()),
            Some(ix) => {
                let axes = inputs.get(ix).ok_or("the axes input is missing")?;
                match axes.ints()? {
                    Some(values) => Some(distinct_axes(&values, rank)?),
                    None => None,
                }
            }
        };
        if let (Some(axes), Some(n)) = (&axes, pads.len()) {
            if n != 2 * axes.len() {
                return Err(format!("{n} pads for {} padded axes: 2 per axis are needed", axes.len()).into());
            }
        }
        let Some(axes) = axes else { return Ok(vec![vec![None; rank]]) };
        let mut out: OutShape = data.shape.iter().cloned().map(Some).collect();
        let Some(values) = pads.dims()? else {
            // Unknown pads: the axes they do not pad keep their dims.
            for &axis in &axes {
                out[axis] = None;
            }
            return Ok(vec![out]);
        };
        let n = axes.len();
        for (i, &axis) in axes.iter().enumerate() {
            out[axis] = Some(self.padded(axis, &data.shape[axis], &values[i], &values[i + n])?);
        }
        Ok(vec![out])
    }
}
