//! ONNX `RoiAlign` (opsets 10, 16): each region of interest of a feature map pooled to a fixed grid.
//!
//! `Y[r, c, ph, pw]` pools bin `(ph, pw)` of region `r` (corners `x1, y1, x2, y2` in `rois`, scaled
//! by `spatial_scale`) over channel `c` of image `batch_indices[r]` of `X`. A bin holds
//! `grid_h x grid_w` sample points (`sampling_ratio` each way, or `ceil(bin size)` when it is 0); a
//! sample reads `X` by bilinear interpolation from its four neighbours, a sample more than one pixel
//! outside the map reading 0. `avg` averages the samples; `max` takes, over the samples, the largest
//! of the four weighted neighbours (the specification's reference does so; onnxruntime differs).
//! `half_pixel` coordinates (opset 16's default) shift the corners by half a pixel; with
//! `output_half_pixel` (opset 10's only mode) a region is at least one pixel wide and high.
//! Computed in f64, rounded once to the input's type.

use crate::node::attrs;
use crate::node::expanded::{as_is, Expanded, Io};
use crate::node::Label;
use tract_onnx::model::ParsingContext;
use tract_onnx::pb::NodeProto;
use tract_onnx::prelude::*;
use tract_onnx::tract_core::internal::*;
use tract_onnx::tract_hir::internal::*;

/// The most sample points one region may take (grid cells times output bins): a region a million
/// pixels across is refused, not walked for minutes.
const MAX_SAMPLES: u64 = 1 << 26;

/// The RoiAlign builder.
pub(crate) fn roi_align(ctx: &ParsingContext, node: &NodeProto) -> TractResult<(Box<dyn InferenceOp>, Vec<String>)> {
    let label = crate::node::node_label(node);
    if node.input.len() != 3 || node.input.iter().any(|i| i.is_empty()) {
        return Err(label.err("RoiAlign takes three inputs: X, rois and batch_indices"));
    }
    let default_mode = if ctx.onnx_operator_set_version >= 16 { "half_pixel" } else { "output_half_pixel" };
    let half_pixel = match attrs::string(&label, node, "coordinate_transformation_mode")?.as_deref() {
        None => default_mode == "half_pixel",
        Some("half_pixel") => true,
        Some("output_half_pixel") => false,
        Some(other) => {
            return Err(label
                .err(format!("coordinate_transformation_mode {other:?} is not one of half_pixel, output_half_pixel")))
        }
    };
    let max = match attrs::string(&label, node, "mode")?.as_deref() {
        None | Some("avg") => false,
        Some("max") => true,
        Some(other) => return Err(label.err(format!("mode {other:?} is not one of avg, max"))),
    };
    let size = |name: &str| -> TractResult<usize> {
        let v = attrs::int(&label, node, name)?.unwrap_or(1);
        usize::try_from(v)
            .ok()
            .filter(|v| *v >= 1)
            .ok_or_else(|| label.err(format!("{name} is {v}: it must be at least 1")))
    };
    let (height, width) = (size("output_height")?, size("output_width")?);
    let sampling_ratio = attrs::int(&label, node, "sampling_ratio")?.unwrap_or(0);
    if sampling_ratio < 0 {
        return Err(label.err(format!("sampling_ratio is {sampling_ratio}: it cannot be negative")));
    }
    let spatial_scale = attrs::float(&label, node, "spatial_scale")?.unwrap_or(1.0);
    if !spatial_scale.is_finite() {
        return Err(label.err(format!("spatial_scale is {spatial_scale}")));
    }
    let op = RoiAlign {
        label,
        half_pixel,
        max,
        height,
        width,
        sampling_ratio: sampling_ratio as u64,
        spatial_scale_bits: spatial_scale.to_bits(),
    };
    Expanded::new("RoiAlign", op, 3, rules, as_is).built()
}

fn rules<'r>(_: &'r RoiAlign, s: &mut Solver<'r>, Io { inputs, outputs }: Io<'r>) -> InferenceResult {
    s.equals(&outputs[0].datum_type, &inputs[0].datum_type)?;
    s.equals(&outputs[0].rank, 4)?;
    s.equals(&inputs[0].rank, 4)?;
    s.equals(&inputs[1].rank, 2)?;
    s.equals(&inputs[2].rank, 1)?;
    s.equals(&outputs[0].shape[0], &inputs[1].shape[0])?;
    s.equals(&outputs[0].shape[1], &inputs[0].shape[1])
}

/// `RoiAlign` with its attributes.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct RoiAlign {
    /// The node, for errors.
    pub label: Label,
    /// `half_pixel` coordinates (else `output_half_pixel`).
    pub half_pixel: bool,
    /// `max` pooling (else `avg`).
    pub max: bool,
    /// Output bins down.
    pub height: usize,
    /// Output bins across.
    pub width: usize,
    /// Sample points per bin each way, 0 for adaptive.
    pub sampling_ratio: u64,
    /// The factor from region coordinates to the map's (an f32's bits: ops are hashed).
    pub spatial_scale_bits: u32,
}

impl Op for RoiAlign {
    fn name(&self) -> StaticName {
        "RoiAlign".into()
    }

    op_as_typed_op!();
}

impl TypedOp for RoiAlign {
    as_op!();

    fn output_facts(&self, inputs: &[&TypedFact]) -> TractResult<TVec<TypedFact>> {
        let (x, rois, indices) = (inputs[0], inputs[1], inputs[2]);
        if x.rank() != 4 || rois.rank() != 2 || indices.rank() != 1 {
            return Err(self.label.err(format!(
                "X, rois and batch_indices must have ranks 4, 2 and 1, they have {}, {} and {}",
                x.rank(),
                rois.rank(),
                indices.rank()
            )));
        }
        if !x.datum_type.is_float() {
            return Err(self.label.err(format!("X must be a float tensor, it is {:?}", x.datum_type)));
        }
        let shape = [rois.shape[0].clone(), x.shape[1].clone(), self.height.to_dim(), self.width.to_dim()];
        Ok(tvec![x.datum_type.fact(shape)])
    }
}

/// One sample point: the four neighbours' offsets in a channel plane and their weights (all zero
/// outside the map).
#[derive(Debug, Clone, Copy, Default)]
struct Sample {
    at: [usize; 4],
    w: [f64; 4],
}

impl RoiAlign {
    /// The sample points of one region, bin by bin (`height * width` runs of `grid` samples).
    fn samples(&self, corners: [f64; 4], map: (usize, usize)) -> TractResult<(Vec<Sample>, usize)> {
        let (h, w) = (map.0 as f64, map.1 as f64);
        let offset = if self.half_pixel { 0.5 } else { 0.0 };
        let scale = f64::from(f32::from_bits(self.spatial_scale_bits));
        let [x1, y1, x2, y2] = corners.map(|v| v * scale - offset);
        let (mut roi_w, mut roi_h) = (x2 - x1, y2 - y1);
        if !self.half_pixel {
            roi_w = roi_w.max(1.0);
            roi_h = roi_h.max(1.0);
        }
        let (bin_h, bin_w) = (roi_h / self.height as f64, roi_w / self.width as f64);
        let grid = |bin: f64| -> TractResult<u64> {
            if self.sampling_ratio > 0 {
                return Ok(self.sampling_ratio);
            }
            let g = bin.ceil();
            if !g.is_finite() {
                return Err(self.label.err(format!("a region with corners {corners:?} is not finite")));
            }
            Ok(g.clamp(0.0, MAX_SAMPLES as f64) as u64)
        };
        let (grid_h, grid_w) = (grid(bin_h)?, grid(bin_w)?);
        let total =
            [grid_h, grid_w, self.height as u64, self.width as u64].iter().try_fold(1u64, |a, &b| a.checked_mul(b));
        if total.is_none_or(|t| t > MAX_SAMPLES) {
            return Err(self.label.err(format!(
                "a region with corners {corners:?} takes {grid_h} x {grid_w} samples per bin: too many"
            )));
        }
        let (grid_h, grid_w) = (grid_h as usize, grid_w as usize);
        let mut samples = Vec::with_capacity(grid_h * grid_w * self.height * self.width);
        for ph in 0..self.height {
            for pw in 0..self.width {
                for iy in 0..grid_h {
                    let y = y1 + ph as f64 * bin_h + (iy as f64 + 0.5) * bin_h / grid_h as f64;
                    for ix in 0..grid_w {
                        let x = x1 + pw as f64 * bin_w + (ix as f64 + 0.5) * bin_w / grid_w as f64;
                        samples.push(Self::sample(y, x, map, (h, w)));
                    }
                }
            }
        }
        Ok((samples, grid_h * grid_w))
    }

    /// The bilinear neighbours of `(y, x)` in a map of `map` pixels (`size` as floats).
    fn sample(y: f64, x: f64, map: (usize, usize), size: (f64, f64)) -> Sample {
        if !(-1.0..=size.0).contains(&y) || !(-1.0..=size.1).contains(&x) {
            return Sample::default();
        }
        let axis = |v: f64, len: usize| -> (usize, usize, f64) {
            let v = v.max(0.0);
            let low = v as usize;
            if low + 1 >= len {
                (len - 1, len - 1, 0.0)
            } else {
                (low, low + 1, v - low as f64)
            }
        };
        let (y_low, y_high, ly) = axis(y, map.0);
        let (x_low, x_high, lx) = axis(x, map.1);
        let (hy, hx) = (1.0 - ly, 1.0 - lx);
        let width = map.1;
        Sample {
            at: [y_low * width + x_low, y_low * width + x_high, y_high * width + x_low, y_high * width + x_high],
            w: [hy * hx, hy * lx, ly * hx, ly * lx],
        }
    }
}

impl EvalOp for RoiAlign {
    op_out_of_plan!();

    fn eval(&self, _ctx: &EvalContext, inputs: TVec<TValue>) -> TractResult<TVec<TValue>> {
        let (x, rois, indices) = args_3!(inputs);
        let dt = x.datum_type();
        let shape = x.shape();
        let (n, c, h, w) = (shape[0], shape[1], shape[2], shape[3]);
        if rois.shape().len() != 2 || rois.shape()[1] != 4 {
            return Err(self.label.err(format!("rois must have shape [num_rois, 4], it has {:?}", rois.shape())));
        }
        let r = rois.shape()[0];
        if indices.shape() != [r] {
            return Err(self.label.err(format!("batch_indices has shape {:?} for {r} regions", indices.shape())));
        }
        let out_shape = [r, c, self.height, self.width];
        let numel = out_shape.iter().try_fold(1u64, |a, &d| a.checked_mul(d as u64));
        crate::kernel::check_allocation(numel.unwrap_or(u64::MAX), dt.size_of()).map_err(|e| self.label.err(e))?;
        let x = x.cast_to::<f64>()?;
        let x = x.try_as_plain_ram()?.as_slice::<f64>()?;
        let rois = rois.cast_to::<f64>()?;
        let rois = rois.try_as_plain_ram()?.as_slice::<f64>()?;
        let indices = indices.cast_to::<i64>()?;
        let indices = indices.try_as_plain_ram()?.as_slice::<i64>()?;
        let plane = h * w;
        let bins = self.height * self.width;
        let mut out = vec![0f64; r * c * bins];
        if plane > 0 {
            for (k, region) in rois.chunks_exact(4).enumerate() {
                let b = usize::try_from(indices[k]).ok().filter(|b| *b < n).ok_or_else(|| {
                    self.label.err(format!("batch_indices[{k}] is {}: the batch has {n} images", indices[k]))
                })?;
                let (samples, count) = self.samples([region[0], region[1], region[2], region[3]], (h, w))?;
                for ch in 0..c {
                    let map = &x[(b * c + ch) * plane..][..plane];
                    let dst = &mut out[(k * c + ch) * bins..][..bins];
                    for (bin, y) in dst.iter_mut().enumerate() {
                        let points = &samples[bin * count..][..count];
                        *y = if self.max {
                            let weighted =
                                |s: &Sample| (0..4).map(|i| s.w[i] * map[s.at[i]]).fold(f64::NEG_INFINITY, f64::max);
                            points.iter().map(weighted).reduce(f64::max).unwrap_or(0.0)
                        } else {
                            let sum: f64 =
                                points.iter().map(|s| (0..4).map(|i| s.w[i] * map[s.at[i]]).sum::<f64>()).sum();
                            sum / count.max(1) as f64
                        };
                    }
                }
            }
        } else if r > 0 && c > 0 {
            return Err(self.label.err("X has an empty feature map"));
        }
        let out = tract_ndarray::ArrayD::from_shape_vec(&out_shape[..], out)?.into_tensor();
        Ok(tvec![out.cast_to_dt(dt)?.into_owned().into_tvalue()])
    }
}
