//! ONNX `DeformConv` (opset 19): a grouped convolution whose kernel taps are moved by learned
//! offsets and optionally scaled by a mask.
//!
//! For output position `o` and kernel tap `t` (per spatial axis `a`), the input is read at
//! `o[a] * stride[a] - pad_begin[a] + t[a] * dilation[a] + offset[n, g, t, a, o]`, with `g` the
//! offset group of the input channel (`offset` is `[N, offset_group * prod(kernel) * rank, out...]`,
//! `mask` `[N, offset_group * prod(kernel), out...]`). A fractional position is interpolated
//! linearly along each axis from its `2^rank` integer neighbours, those outside the input reading
//! 0 (the reference's bilinear `GridSample` with `align_corners`, for any spatial rank). The taps,
//! times the mask, go through the weights `W` `[M, C / group, kernel...]` of their group, plus `B`.
//! The output is `[N, M, out...]`, `out` the usual convolution sizes, which `offset` must have too.
//! Computed in f64, rounded once to the input's type (float16, float or double).

use crate::node::attrs;
use crate::node::expanded::{as_is, Expanded, Io};
use crate::node::Label;
use crate::ops::array::elements::check_output;
use tract_onnx::model::ParsingContext;
use tract_onnx::pb::NodeProto;
use tract_onnx::prelude::*;
use tract_onnx::tract_core::internal::*;
use tract_onnx::tract_hir::internal::*;

/// The DeformConv builder.
pub(crate) fn deform_conv(_ctx: &ParsingContext, node: &NodeProto) -> TractResult<(Box<dyn InferenceOp>, Vec<String>)> {
    let label = crate::node::node_label(node);
    let given = |i: usize| node.input.get(i).is_some_and(|n| !n.is_empty());
    if !given(0) || !given(1) || !given(2) || node.input.len() > 5 {
        return Err(label.err("DeformConv takes X, W, offset, an optional B and an optional mask"));
    }
    let count = |name: &str| -> TractResult<usize> {
        let v = attrs::int(&label, node, name)?.unwrap_or(1);
        usize::try_from(v)
            .ok()
            .filter(|v| *v >= 1)
            .ok_or_else(|| label.err(format!("attribute {name} is {v}: it must be at least 1")))
    };
    let op = DeformConv {
        group: count("group")?,
        offset_group: count("offset_group")?,
        kernel: attrs::sizes(&label, node, "kernel_shape", 1)?,
        dilations: attrs::sizes(&label, node, "dilations", 1)?,
        pads: attrs::sizes(&label, node, "pads", 0)?,
        strides: attrs::sizes(&label, node, "strides", 1)?,
        has_bias: given(3),
        has_mask: given(4),
        label,
    };
    let inputs = 3 + usize::from(op.has_bias) + usize::from(op.has_mask);
    Expanded::new("DeformConv", op, inputs, rules, as_is).built()
}

fn rules<'r>(_: &'r DeformConv, s: &mut Solver<'r>, Io { inputs, outputs }: Io<'r>) -> InferenceResult {
    s.equals(&outputs[0].datum_type, &inputs[0].datum_type)?;
    s.equals(&outputs[0].rank, &inputs[0].rank)?;
    s.equals(&outputs[0].shape[0], &inputs[0].shape[0])?;
    s.equals(&outputs[0].shape[1], &inputs[1].shape[0])
}

/// `DeformConv` with its attributes (spatial ones checked against the input's rank when typed).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct DeformConv {
    /// The node, for errors.
    pub label: Label,
    /// Channel groups of the convolution.
    pub group: usize,
    /// Channel groups sharing one set of offsets (and mask).
    pub offset_group: usize,
    /// The kernel's spatial sizes, when given (else `W`'s).
    pub kernel: Option<Vec<usize>>,
    /// Spacing of the kernel taps.
    pub dilations: Option<Vec<usize>>,
    /// Padding, all begins then all ends.
    pub pads: Option<Vec<usize>>,
    /// Steps between output positions.
    pub strides: Option<Vec<usize>>,
    /// Whether `B` is given.
    pub has_bias: bool,
    /// Whether `mask` is given.
    pub has_mask: bool,
}

/// Dims as `[a, b, ...]`.
fn show(dims: &[TDim]) -> String {
    format!("[{}]", dims.iter().map(crate::dims::format_dim).collect::<Vec<_>>().join(", "))
}

/// The spatial parameters for one input's rank, checked.
struct Geometry {
    kernel: Vec<usize>,
    dilations: Vec<usize>,
    pads: Vec<usize>,
    strides: Vec<usize>,
}

impl DeformConv {
    fn geometry(&self, w: &[TDim], nd: usize) -> TractResult<Geometry> {
        let l = &self.label;
        attrs::check_len(l, "kernel_shape", self.kernel.as_ref(), nd)?;
        attrs::check_len(l, "dilations", self.dilations.as_ref(), nd)?;
        attrs::check_len(l, "strides", self.strides.as_ref(), nd)?;
        attrs::check_len(l, "pads", self.pads.as_ref(), 2 * nd)?;
        let from_w: Vec<Option<usize>> = w[2..].iter().map(|d| d.to_usize().ok()).collect();
        let kernel = match &self.kernel {
            Some(k) => {
                if let Some((a, (k, w))) =
                    k.iter().zip(&from_w).enumerate().find(|(_, (k, w))| w.is_some_and(|w| w != **k))
                {
                    return Err(l.err(format!("kernel_shape[{a}] is {k} but W's kernel has {}", w.unwrap_or(0))));
                }
                k.clone()
            }
            None => from_w
                .iter()
                .map(|k| k.filter(|k| *k >= 1))
                .collect::<Option<Vec<usize>>>()
                .ok_or_else(|| l.err(format!("W's kernel dims {} must be known and positive", show(&w[2..]))))?,
        };
        Ok(Geometry {
            kernel,
            dilations: self.dilations.clone().unwrap_or_else(|| vec![1; nd]),
            pads: self.pads.clone().unwrap_or_else(|| vec![0; 2 * nd]),
            strides: self.strides.clone().unwrap_or_else(|| vec![1; nd]),
        })
    }

    /// The output shape from the inputs' shapes, every relation between known dims checked.
    fn output_shape(&self, shapes: &[&[TDim]]) -> TractResult<(Geometry, TVec<TDim>)> {
        let l = &self.label;
        let (x, w, offset) = (shapes[0], shapes[1], shapes[2]);
        if x.len() < 3 || w.len() != x.len() || offset.len() != x.len() {
            return Err(l.err(format!(
                "X, W and offset must have one rank, at least 3; they have {}, {} and {}",
                x.len(),
                w.len(),
                offset.len()
            )));
        }
        let nd = x.len() - 2;
        let geo = self.geometry(w, nd)?;
        let known = |d: &TDim| d.to_usize().ok();
        let taps: usize = geo
            .kernel
            .iter()
            .try_fold(1usize, |a, &k| a.checked_mul(k))
            .filter(|&t| t <= u32::MAX as usize)
            .ok_or_else(|| l.err(format!("kernel {:?} is too large", geo.kernel)))?;
        let (g, og) = (self.group, self.offset_group);
        if let Some(c) = known(&x[1]) {
            if c % g != 0 || c % og != 0 {
                return Err(l.err(format!("X has {c} channels: group {g} and offset_group {og} must divide them")));
            }
            if let Some(wc) = known(&w[1]) {
                if wc * g != c {
                    return Err(l.err(format!("W has {wc} channels per group: times group {g} is not X's {c}")));
                }
            }
        }
        if let Some(m) = known(&w[0]) {
            if m % g != 0 {
                return Err(l.err(format!("W has {m} output channels: group {g} does not divide them")));
            }
        }
        let want = (og as u64).checked_mul(taps as u64 * nd as u64);
        if let Some(got) = known(&offset[1]) {
            if Some(got as u64) != want {
                return Err(l.err(format!(
                    "offset has {got} channels: offset_group {og} x {taps} kernel taps x {nd} axes are needed"
                )));
            }
        }
        let mut out: TVec<TDim> = tvec![x[0].clone(), w[0].clone()];
        for a in 0..nd {
            let span = geo.dilations[a] as i128 * (geo.kernel[a] as i128 - 1) + 1;
            let extra = geo.pads[a] as i128 + geo.pads[nd + a] as i128 - span;
            let s = geo.strides[a];
            let d = match known(&x[a + 2]) {
                Some(v) => {
                    let room = v as i128 + extra;
                    if room < 0 || room > i64::MAX as i128 {
                        return Err(l.err(format!(
                            "the kernel spans {span} positions on spatial axis {a}: the padded input has {}",
                            room + span
                        )));
                    }
                    ((room / s as i128) as usize + 1).to_dim()
                }
                None => {
                    let extra = i64::try_from(extra).map_err(|_| l.err("pads or dilations are too large"))?;
                    ((x[a + 2].clone() + extra) / s as u64 + 1).simplify()
                }
            };
            if let (Ok(want), Ok(got)) = (d.to_usize(), offset[a + 2].to_usize()) {
                if want != got {
                    return Err(
                        l.err(format!("offset has {got} positions on spatial axis {a}: the convolution gives {want}"))
                    );
                }
            }
            out.push(d);
        }
        let mut next = 3;
        if self.has_bias {
            let b = shapes[next];
            next += 1;
            if b.len() != 1 || matches!((known(&b[0]), known(&w[0])), (Some(b), Some(m)) if b != m) {
                return Err(l.err(format!("B has shape {}: [{}] is needed", show(b), w[0])));
            }
        }
        if self.has_mask {
            let mask = shapes[next];
            let want_c = (og as u64).checked_mul(taps as u64);
            let bad = mask.len() != x.len()
                || known(&mask[1]).is_some_and(|c| Some(c as u64) != want_c)
                || (0..mask.len()).filter(|&k| k != 1).any(|k| {
                    let want = if k == 0 { &x[0] } else { &out[k] };
                    matches!((known(&mask[k]), known(want)), (Some(m), Some(w)) if m != w)
                });
            if bad {
                return Err(l.err(format!(
                    "mask has shape {}: [N, offset_group {og} x {taps} kernel taps, output positions] is needed",
                    show(mask)
                )));
            }
        }
        Ok((geo, out))
    }
}

impl Op for DeformConv {
    fn name(&self) -> StaticName {
        "DeformConv".into()
    }

    op_as_typed_op!();
}

impl TypedOp for DeformConv {
    as_op!();

    fn output_facts(&self, inputs: &[&TypedFact]) -> TractResult<TVec<TypedFact>> {
        let dt = inputs[0].datum_type;
        if !matches!(dt, DatumType::F16 | DatumType::F32 | DatumType::F64) {
            return Err(self.label.err(format!("X must be float16, float or double, got {dt:?}")));
        }
        if let Some(f) = inputs.iter().find(|f| f.datum_type != dt) {
            return Err(self.label.err(format!("every input must have X's type {dt:?}, one is {:?}", f.datum_type)));
        }
        let shapes: Vec<&[TDim]> = inputs.iter().map(|f| &*f.shape).collect();
        let (_, out) = self.output_shape(&shapes)?;
        Ok(tvec![dt.fact(&*out)])
    }
}

impl EvalOp for DeformConv {
    op_out_of_plan!();

    fn eval(&self, _ctx: &EvalContext, inputs: TVec<TValue>) -> TractResult<TVec<TValue>> {
        let dt = inputs[0].datum_type();
        let dims: Vec<TVec<TDim>> = inputs.iter().map(|t| t.shape().iter().map(|d| d.to_dim()).collect()).collect();
        let shapes: Vec<&[TDim]> = dims.iter().map(|d| &**d).collect();
        let (geo, out) = self.output_shape(&shapes)?;
        let out: Vec<usize> = out.iter().map(|d| Ok(d.to_usize()?)).collect::<TractResult<_>>()?;
        check_output(&self.label, &out, 8)?;
        let xs = inputs[0].shape();
        let nd = xs.len() - 2;
        let (n, c, m) = (xs[0], xs[1], out[1]);
        let in_sp = &xs[2..];
        let out_sp = &out[2..];
        let positions: usize = out_sp.iter().product();
        let pixels: usize = in_sp.iter().product();
        let taps: usize = geo.kernel.iter().product();
        let (cg, mg) = (c / self.group, m / self.group);
        let cog = c / self.offset_group;
        // The taps read for one image: C x taps x positions values.
        let cols_len = [c, taps, positions].iter().try_fold(1u64, |a, &d| a.checked_mul(d as u64)).unwrap_or(u64::MAX);
        crate::kernel::check_allocation(cols_len, 8).map_err(|e| self.label.err(e))?;
        let f64s = |t: &Tensor| -> TractResult<Vec<f64>> {
            Ok(t.cast_to::<f64>()?.try_as_plain_ram()?.as_slice::<f64>()?.to_vec())
        };
        let (x, w, offset) = (f64s(&inputs[0])?, f64s(&inputs[1])?, f64s(&inputs[2])?);
        let mut next = 3;
        let bias = if self.has_bias {
            next += 1;
            Some(f64s(&inputs[next - 1])?)
        } else {
            None
        };
        let mask = if self.has_mask { Some(f64s(&inputs[next])?) } else { None };
        let unravel = |mut i: usize, sizes: &[usize]| -> Vec<usize> {
            let mut v = vec![0; sizes.len()];
            for a in (0..sizes.len()).rev() {
                v[a] = i % sizes[a];
                i /= sizes[a];
            }
            v
        };
        let tap_at: Vec<Vec<usize>> = (0..taps).map(|t| unravel(t, &geo.kernel)).collect();
        let pos_at: Vec<Vec<usize>> = (0..positions).map(|p| unravel(p, out_sp)).collect();
        let mut in_strides = vec![1usize; nd];
        for a in (0..nd.saturating_sub(1)).rev() {
            in_strides[a] = in_strides[a + 1] * in_sp[a + 1];
        }
        let mut y = vec![0f64; n * m * positions];
        let mut cols = vec![0f64; c * taps * positions];
        let mut corners: Vec<(usize, f64)> = Vec::with_capacity(1 << nd.min(16));
        for b in 0..n {
            for g in 0..self.offset_group {
                for (t, tap) in tap_at.iter().enumerate() {
                    for (p, pos) in pos_at.iter().enumerate() {
                        let off =
                            |a: usize| offset[((b * self.offset_group + g) * taps * nd + t * nd + a) * positions + p];
                        let scale = mask
                            .as_ref()
                            .map_or(1.0, |mk| mk[((b * self.offset_group + g) * taps + t) * positions + p]);
                        // The interpolation's neighbours: flat input index and weight.
                        corners.clear();
                        corners.push((0, 1.0));
                        for a in 0..nd {
                            let at = (pos[a] * geo.strides[a]) as f64 - geo.pads[a] as f64
                                + (tap[a] * geo.dilations[a]) as f64
                                + off(a);
                            let lo = at.floor();
                            let frac = at - lo;
                            let mut kept = Vec::with_capacity(corners.len() * 2);
                            for (i, wgt) in corners.iter().copied() {
                                for (k, kw) in [(lo, 1.0 - frac), (lo + 1.0, frac)] {
                                    if kw != 0.0 && k >= 0.0 && k < in_sp[a] as f64 {
                                        kept.push((i + k as usize * in_strides[a], wgt * kw));
                                    }
                                }
                            }
                            corners = kept;
                        }
                        for ch in g * cog..(g + 1) * cog {
                            let plane = &x[(b * c + ch) * pixels..][..pixels];
                            let v: f64 = corners.iter().map(|&(i, wgt)| wgt * plane[i]).sum();
                            cols[(ch * taps + t) * positions + p] = scale * v;
                        }
                    }
                }
            }
            for oc in 0..m {
                let grp = oc / mg.max(1);
                let dst = &mut y[(b * m + oc) * positions..][..positions];
                dst.fill(bias.as_ref().map_or(0.0, |bs| bs[oc]));
                for ci in 0..cg {
                    for t in 0..taps {
                        let wv = w[(oc * cg + ci) * taps + t];
                        let src = &cols[((grp * cg + ci) * taps + t) * positions..][..positions];
                        for (d, s) in dst.iter_mut().zip(src) {
                            *d += wv * s;
                        }
                    }
                }
            }
        }
        let y = tract_ndarray::ArrayD::from_shape_vec(&*out, y)?.into_tensor();
        Ok(tvec![y.cast_to_dt(dt)?.into_owned().into_tvalue()])
    }
}
