//! ONNX `DFT` (opsets 17 and 20): discrete Fourier transforms along one axis, forward ones computed
//! in `f64`.
//!
//! tract-onnx's builder transformed a float32 signal in float32 (near-zero bins of a forward
//! transform came out around 2e-6 where onnx's reference gives 0 or 1e-14), typed the output of an
//! opset-17 node as if `axis` were 1, and left `dft_length` out of the forward transforms. Here a
//! forward transform casts the signal to `f64` (float16 and float32 alike), runs tract's FFT kernel
//! (`rustfft`: O(n log n) for every length) and rounds the result once to the input's type. An
//! inverse transform runs in the input's own type, as numpy 2 (the reference) does: the
//! reference's inverse results carry its float32 rounding (2e-7 where the exact value is 0, more
//! than the backend tests' 1e-7 tolerance), which rustfft's float32 transform reproduces and a
//! float64 one does not. What the transform does:
//!
//! - a real signal (last axis 1) gets a zero imaginary part;
//! - forward and inverse: the signal is cut or zero-padded along `axis` to `dft_length` (default:
//!   its length), the inverse divided by that length; `onesided` forward keeps the first
//!   `n/2 + 1` bins;
//! - `inverse` and `onesided` (numpy's `irfft`): the first `n/2 + 1` bins (cut or zero-padded) are
//!   completed by Hermitian symmetry, transformed back, and the real part kept (last axis 1); `n`
//!   defaults to `2·(bins - 1)`.
//!
//! The axis is an attribute before opset 20 (default 1) and a constant input from opset 20 on
//! (default -2); `dft_length` must be a constant when the model is built.

use crate::node::expanded::{Expanded, Io};
use crate::node::Label;
use tract_onnx::model::ParsingContext;
use tract_onnx::pb::NodeProto;
use tract_onnx::prelude::*;
use tract_onnx::tract_core::ops::array::{Gather, Pad, PadMode, Slice};
use tract_onnx::tract_core::ops::cast::cast;
use tract_onnx::tract_core::ops::fft::Fft;
use tract_onnx::tract_core::ops::math::{div, mul};
use tract_onnx::tract_hir::internal::*;

/// The longest transform built (its length is read from the model file).
pub(crate) const MAX_DFT_LENGTH: usize = 1 << 28;

/// The DFT builder.
pub(crate) fn dft(ctx: &ParsingContext, node: &NodeProto) -> TractResult<(Box<dyn InferenceOp>, Vec<String>)> {
    let label = crate::node::node_label(node);
    let inverse = crate::node::attrs::flag(&label, node, "inverse")?;
    let onesided = crate::node::attrs::flag(&label, node, "onesided")?;
    let given = |i: usize| node.input.get(i).is_some_and(|n| !n.is_empty());
    if !given(0) {
        return Err(label.err("DFT needs its input"));
    }
    let mut slots = 1;
    let length = given(1).then(|| {
        slots += 1;
        slots - 1
    });
    let axis = if ctx.onnx_operator_set_version < 20 {
        if node.input.len() > 2 {
            return Err(label.err("DFT before opset 20 takes at most two inputs (input, dft_length)"));
        }
        Axis::Fixed(crate::node::attrs::int(&label, node, "axis")?.unwrap_or(1))
    } else if node.input.len() > 3 {
        return Err(label.err("DFT takes at most three inputs (input, dft_length, axis)"));
    } else if given(2) {
        slots += 1;
        Axis::Input(slots - 1)
    } else {
        Axis::Fixed(-2)
    };
    let op = Dft { label, inverse, onesided, length, axis };
    Expanded::new("DFT", op, slots, rules, wire).built()
}

/// Where the transformed axis comes from.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) enum Axis {
    /// The attribute's value (or the default).
    Fixed(i64),
    /// A constant input, at this position among the op's inputs.
    Input(usize),
}

/// `DFT` with its attributes.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct Dft {
    /// The node, for errors.
    pub label: Label,
    /// The inverse transform.
    pub inverse: bool,
    /// Half the spectrum (forward: out; inverse: in).
    pub onesided: bool,
    /// The position of `dft_length` among the op's inputs, if given.
    pub length: Option<usize>,
    /// The axis.
    pub axis: Axis,
}

impl Dft {
    /// `axis` resolved against `rank`: not the last axis (the complex one).
    fn resolve(&self, axis: i64, rank: usize) -> TractResult<usize> {
        let signal = rank as i64 - 1;
        let a = if axis < 0 { axis.checked_add(rank as i64) } else { Some(axis) };
        match a {
            Some(a) if (0..signal).contains(&a) => Ok(a as usize),
            _ => Err(self.label.err(format!("axis {axis} is out of range for an input of rank {rank}"))),
        }
    }

    /// `dft_length` read from its tensor.
    fn length_of(&self, t: &Tensor) -> TractResult<usize> {
        if t.len() != 1 || !matches!(t.datum_type(), DatumType::I32 | DatumType::I64) {
            return Err(self.label.err(format!("dft_length must be one int32 or int64, got {t:?}")));
        }
        let n = t.cast_to_scalar::<i64>()?;
        if n < 1 || n as u64 > MAX_DFT_LENGTH as u64 {
            return Err(self.label.err(format!("dft_length is {n}: it must be from 1 to {MAX_DFT_LENGTH}")));
        }
        Ok(n as usize)
    }

    fn irfft(&self) -> bool {
        self.inverse && self.onesided
    }
}

fn rules<'r>(op: &'r Dft, s: &mut Solver<'r>, Io { inputs, outputs }: Io<'r>) -> InferenceResult {
    s.equals(&outputs[0].datum_type, &inputs[0].datum_type)?;
    s.equals(&outputs[0].rank, &inputs[0].rank)?;
    if let Some(l) = op.length {
        s.given(&inputs[l].value, move |s, n| {
            let n = op.length_of(&n)?;
            shape_rules(op, s, inputs, outputs, Some(n))
        })?;
    } else {
        shape_rules(op, s, inputs, outputs, None)?;
    }
    Ok(())
}

fn shape_rules<'r>(
    op: &'r Dft,
    s: &mut Solver<'r>,
    inputs: &'r [TensorProxy],
    outputs: &'r [TensorProxy],
    n: Option<usize>,
) -> InferenceResult {
    match op.axis {
        Axis::Fixed(axis) => s.given(&inputs[0].rank, move |s, rank| {
            let axis = op.resolve(axis, rank as usize)?;
            axis_rules(op, s, inputs, outputs, n, axis, rank as usize)
        }),
        Axis::Input(i) => s.given_2(&inputs[0].rank, &inputs[i].value, move |s, rank, axis| {
            if axis.len() != 1 || !matches!(axis.datum_type(), DatumType::I32 | DatumType::I64) {
                return Err(op.label.err(format!("axis must be one int32 or int64, got {axis:?}")));
            }
            let axis = op.resolve(axis.cast_to_scalar::<i64>()?, rank as usize)?;
            axis_rules(op, s, inputs, outputs, n, axis, rank as usize)
        }),
    }
}

fn axis_rules<'r>(
    op: &'r Dft,
    s: &mut Solver<'r>,
    inputs: &'r [TensorProxy],
    outputs: &'r [TensorProxy],
    n: Option<usize>,
    axis: usize,
    rank: usize,
) -> InferenceResult {
    for ax in (0..rank - 1).filter(|&ax| ax != axis) {
        s.equals(&inputs[0].shape[ax], &outputs[0].shape[ax])?;
    }
    s.equals(&outputs[0].shape[rank - 1], if op.irfft() { 1 } else { 2 }.to_dim())?;
    let onesided_forward = op.onesided && !op.inverse;
    match n {
        Some(n) => s.equals(&outputs[0].shape[axis], if onesided_forward { n / 2 + 1 } else { n }.to_dim()),
        None => s.given(&inputs[0].shape[axis], move |s, len| {
            let out = if op.irfft() {
                (len - 1) * 2
            } else if onesided_forward {
                len / 2 + 1
            } else {
                len
            };
            s.equals(&outputs[0].shape[axis], out)
        }),
    }
}

/// The constant value of `outlet`, or an error naming `what`.
fn konst(op: &Dft, model: &TypedModel, outlet: OutletId, what: &str) -> TractResult<Arc<Tensor>> {
    model
        .outlet_fact(outlet)?
        .konst
        .clone()
        .ok_or_else(|| op.label.not_static(format!("{what} is known only at run time")))
}

/// `wire` cut or zero-padded along `axis` from `have` to `want` entries.
fn fit(
    prefix: &str,
    model: &mut TypedModel,
    wire: OutletId,
    axis: usize,
    have: &TDim,
    want: usize,
) -> TractResult<OutletId> {
    if *have == want.to_dim() {
        return Ok(wire);
    }
    if let Ok(have) = have.to_usize() {
        if have < want {
            let mut pads = vec![(0, 0); model.outlet_fact(wire)?.rank()];
            pads[axis] = (0, want - have);
            let pad = Pad { pads, mode: PadMode::Constant(rctensor0(0f64)) };
            return Ok(model.wire_node(format!("{prefix}.pad"), pad, &[wire])?[0]);
        }
    }
    // Longer, or of a symbolic length the model asks to cut (a shorter one fails when it runs).
    Ok(model.wire_node(format!("{prefix}.cut"), Slice::new(axis, 0, want), &[wire])?[0])
}

/// `wire` divided by `n`.
fn scale_down(prefix: &str, model: &mut TypedModel, wire: OutletId, n: TDim) -> TractResult<OutletId> {
    let fact = model.outlet_fact(wire)?;
    let (rank, dt) = (fact.rank(), fact.datum_type);
    let len = model.add_const(format!("{prefix}.len"), tensor0(n).broadcast_into_rank(rank)?)?;
    let len = model.wire_node(format!("{prefix}.len_float"), cast(dt), &[len])?[0];
    Ok(model.wire_node(format!("{prefix}.normalized"), div(), &[wire, len])?[0])
}

fn wire(op: &Dft, prefix: &str, model: &mut TypedModel, inputs: &[OutletId]) -> TractResult<TVec<OutletId>> {
    let fact = model.outlet_fact(inputs[0])?.clone();
    let dt = fact.datum_type;
    if !matches!(dt, DatumType::F16 | DatumType::F32 | DatumType::F64) {
        return Err(op.label.err(format!("input must be a float tensor, got {dt:?}")));
    }
    let rank = fact.rank();
    if rank < 2 {
        return Err(op.label.err(format!("input must have rank 2 or more, got {rank}")));
    }
    let axis = match op.axis {
        Axis::Fixed(a) => op.resolve(a, rank)?,
        Axis::Input(i) => {
            let t = konst(op, model, inputs[i], "axis")?;
            if t.len() != 1 || !matches!(t.datum_type(), DatumType::I32 | DatumType::I64) {
                return Err(op.label.err(format!("axis must be one int32 or int64, got {t:?}")));
            }
            op.resolve(t.cast_to_scalar::<i64>()?, rank)?
        }
    };
    let n = match op.length {
        Some(l) => Some(op.length_of(&*konst(op, model, inputs[l], "dft_length")?)?),
        None => None,
    };
    let complex = fact.shape[rank - 1].clone();
    if complex != 1.to_dim() && complex != 2.to_dim() {
        return Err(op.label.err(format!("the last axis must be 1 (real) or 2 (complex), got {complex}")));
    }
    let mut w = inputs[0];
    // Forward transforms in f64; inverse ones in the input's type (see the module docs).
    let work = if op.inverse { dt } else { DatumType::F64 };
    if dt != work {
        w = model.wire_node(format!("{prefix}.to_f64"), cast(work), &[w])?[0];
    }
    if complex == 1.to_dim() {
        let mut pads = vec![(0, 0); rank];
        pads[rank - 1] = (0, 1);
        w = model.wire_node(
            format!("{prefix}.imaginary"),
            Pad { pads, mode: PadMode::Constant(rctensor0(0f64)) },
            &[w],
        )?[0];
    }
    let len = fact.shape[axis].clone();
    w = if op.irfft() {
        let n = match n {
            Some(n) => n,
            None => {
                let bins = len.to_usize().map_err(|_| {
                    op.label.not_static("the bins of an inverse onesided DFT are known only at run time")
                })?;
                if bins < 2 {
                    return Err(op.label.err("an inverse onesided DFT needs at least two bins"));
                }
                2 * (bins - 1)
            }
        };
        irfft(prefix, model, w, axis, &len, n)?
    } else {
        let n_dim = n.map(|n| n.to_dim()).unwrap_or_else(|| len.clone());
        if let Some(n) = n {
            w = fit(prefix, model, w, axis, &len, n)?;
        }
        w = model.wire_node(format!("{prefix}.fft"), Fft { axis, inverse: op.inverse }, &[w])?[0];
        if op.inverse {
            w = scale_down(prefix, model, w, n_dim.clone())?;
        }
        if op.onesided {
            w = model.wire_node(format!("{prefix}.onesided"), Slice::new(axis, 0, n_dim / 2 + 1), &[w])?[0];
        }
        w
    };
    if dt != work {
        w = model.wire_node(format!("{prefix}.to_{dt:?}"), cast(dt), &[w])?[0];
    }
    Ok(tvec![w])
}

/// numpy's `irfft` of the bins along `axis` (complex, `f64`) to a real signal of `n` entries.
fn irfft(
    prefix: &str,
    model: &mut TypedModel,
    w: OutletId,
    axis: usize,
    len: &TDim,
    n: usize,
) -> TractResult<OutletId> {
    let rank = model.outlet_fact(w)?.rank();
    let bins = n / 2 + 1;
    let w = fit(prefix, model, w, axis, len, bins)?;
    // Bin k >= bins is the conjugate of bin n - k.
    let mirror: Vec<i64> = (0..n).map(|k| if k < bins { k as i64 } else { (n - k) as i64 }).collect();
    let mirror = model.add_const(format!("{prefix}.mirror"), tensor1(&mirror))?;
    let full = model.wire_node(format!("{prefix}.hermitian"), Gather { axis, output_type: None }, &[w, mirror])?[0];
    let mut sign_shape = vec![1; rank];
    sign_shape[axis] = n;
    sign_shape[rank - 1] = 2;
    let signs: Vec<f64> = (0..n).flat_map(|k| [1.0, if k < bins { 1.0 } else { -1.0 }]).collect();
    let signs = Tensor::from_shape(&sign_shape, &signs)?.cast_to_dt(model.outlet_fact(w)?.datum_type)?.into_owned();
    let signs = model.add_const(format!("{prefix}.conjugate"), signs)?;
    let full = model.wire_node(format!("{prefix}.conjugated"), mul(), &[full, signs])?[0];
    let back = model.wire_node(format!("{prefix}.fft"), Fft { axis, inverse: true }, &[full])?[0];
    let back = scale_down(prefix, model, back, n.to_dim())?;
    Ok(model.wire_node(format!("{prefix}.real"), Slice::new(rank - 1, 0, 1), &[back])?[0])
}
