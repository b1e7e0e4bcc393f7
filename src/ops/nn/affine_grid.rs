//! ONNX `AffineGrid` (opset 20): the sampling grid of an affine transform. For `size` `[N, C, H, W]`
//! the output is `[N, H, W, 2]`, `grid[n, h, w] = theta[n] · (x_w, y_h, 1)`; for `[N, C, D, H, W]`
//! it is `[N, D, H, W, 3]` with `(x_w, y_h, z_d, 1)`. Coordinates span `[-1, 1]`: pixel centres
//! `-1 + (2i + 1) / s` without `align_corners`, corners `-1 + 2i / (s - 1)` with it (`-1` when
//! `s = 1`). Computed in f64, rounded once to theta's type.
//!
//! `size` is a shape parameter (`src/ops/params.rs`): known (constant or from shapes),
//! the output dims are exact; known only at run time, `N` and the last dim still are, the others
//! are fresh, and the values are checked before the grid is built.

use crate::node::expanded::{as_is, Expanded, Io};
use crate::node::Label;
use crate::ops::params::{Inlet, OutShape, ParamNode, ParamRule, Refusal};
use tract_onnx::model::ParsingContext;
use tract_onnx::pb::NodeProto;
use tract_onnx::prelude::*;
use tract_onnx::tract_core::internal::*;
use tract_onnx::tract_hir::internal::*;

/// `AffineGrid`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct AffineGrid {
    /// `align_corners`.
    pub align_corners: bool,
    /// The node, for errors.
    pub label: Label,
}

/// The AffineGrid builder: our op, with `size` as a shape parameter.
pub(crate) fn affine_grid(_ctx: &ParsingContext, node: &NodeProto) -> TractResult<(Box<dyn InferenceOp>, Vec<String>)> {
    let label = crate::node::node_label(node);
    if node.input.len() != 2 || node.input.iter().any(|i| i.is_empty()) {
        return Err(label.err("the inputs are theta and size"));
    }
    let align_corners = crate::node::attrs::flag(&label, node, "align_corners")?;
    let op = AffineGrid { align_corners, label };
    let built = Expanded::new("AffineGrid", op, 2, rules, as_is).built()?;
    Ok(ParamNode::boxed(built, SizeRule, node))
}

fn rules<'r>(_: &'r AffineGrid, s: &mut Solver<'r>, Io { inputs, outputs }: Io<'r>) -> InferenceResult {
    s.equals(&outputs[0].datum_type, &inputs[0].datum_type)?;
    s.given(&inputs[1].shape, move |s, shape| {
        if let Some(n) = shape.first().and_then(TDim::as_i64) {
            s.equals(&outputs[0].rank, n)?;
        }
        Ok(())
    })
}

/// The grid's shape from theta's and size's values (`[N, C, H, W]` or `[N, C, D, H, W]`), checked.
fn grid_shape(theta: &[TDim], size: &[TDim]) -> Result<Vec<TDim>, String> {
    let spatial = match size.len() {
        4 => 2,
        5 => 3,
        n => return Err(format!("size has {n} values: [N, C, H, W] or [N, C, D, H, W] is needed")),
    };
    let wants: [TDim; 2] = [TDim::Val(spatial), TDim::Val(spatial as i64 + 1)];
    if theta.len() != 3 || theta[1..] != wants[..] {
        return Err(format!("theta has shape {theta:?}: [N, {}, {}] is needed for size {size:?}", wants[0], wants[1]));
    }
    if let (Some(a), Some(b)) = (theta[0].as_i64(), size[0].as_i64()) {
        if a != b {
            return Err(format!("size says N = {b}, theta has {a}"));
        }
    }
    if let Some(d) = size.iter().find(|d| d.as_i64().is_some_and(|v| v < 0)) {
        return Err(format!("size holds {d}"));
    }
    let mut out = vec![theta[0].clone()];
    out.extend(size[2..].iter().cloned());
    out.push(TDim::Val(spatial as i64));
    Ok(out)
}

/// The output shape of AffineGrid from `size`.
#[derive(Debug, Clone, PartialEq, Eq)]
struct SizeRule;

impl ParamRule for SizeRule {
    fn is_param(&self, ix: usize) -> bool {
        ix == 1
    }

    fn outputs(&self, inputs: &[Inlet]) -> Result<Vec<OutShape>, Refusal> {
        let (theta, size) = (inputs[0], inputs[1]);
        if size.rank() != 1 {
            return Err(format!("size must be 1-D, got rank {}", size.rank()).into());
        }
        match size.dims()? {
            Some(values) => Ok(vec![grid_shape(theta.shape, &values)?.into_iter().map(Some).collect()]),
            None => match size.len() {
                Some(n @ (4 | 5)) => {
                    let mut out: OutShape = vec![Some(theta.shape[0].clone())];
                    out.extend(std::iter::repeat_n(None, n - 2));
                    out.push(Some(TDim::Val(n as i64 - 2)));
                    Ok(vec![out])
                }
                Some(n) => Err(format!("size has {n} values: [N, C, H, W] or [N, C, D, H, W] is needed").into()),
                None => Err(Refusal::Unknown("the length of size must be known to know the output rank".into())),
            },
        }
    }
}

impl AffineGrid {
    /// The coordinates along an axis of `s` positions.
    fn coords(&self, s: usize) -> Vec<f64> {
        (0..s)
            .map(|i| match (self.align_corners, s) {
                (true, 1) => -1.0,
                (true, _) => -1.0 + i as f64 * (2.0 / (s - 1) as f64),
                (false, _) => {
                    let step = 2.0 / s as f64;
                    (-1.0 + step / 2.0) + i as f64 * step
                }
            })
            .collect()
    }
}

impl Op for AffineGrid {
    fn name(&self) -> StaticName {
        "AffineGrid".into()
    }

    op_as_typed_op!();
}

impl TypedOp for AffineGrid {
    as_op!();

    fn output_facts(&self, inputs: &[&TypedFact]) -> TractResult<TVec<TypedFact>> {
        let (theta, size) = (inputs[0], inputs[1]);
        if !matches!(theta.datum_type, DatumType::F16 | DatumType::F32 | DatumType::F64) {
            return Err(self.label.err(format!("theta must be floats, got {:?}", theta.datum_type)));
        }
        let Some(size) = &size.konst else { return Err(self.label.not_static("size is known only at run time")) };
        let shape = grid_shape(theta.shape.dims(), &crate::dims::dims_of(size)?).map_err(|m| self.label.err(m))?;
        Ok(tvec![theta.datum_type.fact(&*shape)])
    }
}

impl EvalOp for AffineGrid {
    op_out_of_plan!();

    fn eval(&self, _ctx: &EvalContext, inputs: TVec<TValue>) -> TractResult<TVec<TValue>> {
        let (theta, size) = (&inputs[0], &inputs[1]);
        let dims: Vec<TDim> = theta.shape().iter().map(|d| d.to_dim()).collect();
        let shape = grid_shape(&dims, &crate::dims::dims_of(size)?).map_err(|m| self.label.err(m))?;
        let shape: Vec<usize> = shape
            .iter()
            .map(|d| d.as_i64().and_then(|v| usize::try_from(v).ok()))
            .collect::<Option<_>>()
            .ok_or_else(|| self.label.err("size is not known"))?;
        let numel = shape.iter().try_fold(1u64, |a, &d| a.checked_mul(d as u64)).unwrap_or(u64::MAX);
        crate::kernel::check_allocation(numel, 8).map_err(|e| self.label.err(e))?;
        let spatial = shape.len() - 2;
        let axes: Vec<Vec<f64>> = shape[1..=spatial].iter().map(|&s| self.coords(s)).collect();
        let th = theta.cast_to::<f64>()?;
        let th = th.try_as_plain_ram()?.as_slice::<f64>()?;
        let cells: usize = shape[1..=spatial].iter().product();
        let mut out = Vec::with_capacity(shape[0] * cells * spatial);
        let mut homo = vec![1f64; spatial + 1];
        for n in 0..shape[0] {
            let t = &th[n * spatial * (spatial + 1)..(n + 1) * spatial * (spatial + 1)];
            for cell in 0..cells {
                // The cell's coordinates, innermost (x, along the last axis) first.
                let mut rest = cell;
                for (k, axis) in axes.iter().enumerate().rev() {
                    homo[spatial - 1 - k] = axis[rest % axis.len()];
                    rest /= axis.len();
                }
                for row in t.chunks(spatial + 1) {
                    out.push(row.iter().zip(&homo).map(|(a, b)| a * b).sum::<f64>());
                }
            }
        }
        let grid = tract_ndarray::ArrayD::from_shape_vec(shape, out)?.into_tensor();
        Ok(tvec![grid.cast_to_dt(theta.datum_type())?.into_owned().into_tvalue()])
    }
}
