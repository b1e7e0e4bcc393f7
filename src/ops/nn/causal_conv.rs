//! ONNX `CausalConvWithState` (opset 27): a depthwise 1-D convolution over `[B, C, L]` with kernel
//! `[C, 1, k]`, left-padded by the `k - 1` positions of `past_state` (zeros without it), an optional
//! bias and an optional SiLU (`activation` `silu` or its alias `swish`). The second output,
//! `present_state`, is the last `k - 1` positions of the padded input.
//!
//! `out[b, c, l] = bias[c] + Σ_j weight[c, 0, j] * padded[b, c, l + j]`, summed in f64 and rounded
//! to the input's type; the SiLU is computed in f32 from that rounded value, as the reference does.

use crate::node::expanded::{as_is, Expanded, Io};
use crate::node::Label;
use tract_onnx::model::ParsingContext;
use tract_onnx::pb::NodeProto;
use tract_onnx::prelude::*;
use tract_onnx::tract_core::internal::*;
use tract_onnx::tract_hir::internal::*;

/// `CausalConvWithState`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct CausalConv {
    /// Whether the SiLU follows the convolution.
    pub silu: bool,
    /// Whether `bias` is given.
    pub has_bias: bool,
    /// Whether `past_state` is given.
    pub has_past: bool,
    /// Whether `present_state` is asked for.
    pub present: bool,
    /// The node, for errors.
    pub label: Label,
}

/// The CausalConvWithState builder.
pub(crate) fn causal_conv(_ctx: &ParsingContext, node: &NodeProto) -> TractResult<(Box<dyn InferenceOp>, Vec<String>)> {
    let label = crate::node::node_label(node);
    let given = |i: usize| node.input.get(i).is_some_and(|n| !n.is_empty());
    if !given(0) || !given(1) || node.input.len() > 4 {
        return Err(label.err("the inputs are input, weight, an optional bias and an optional past_state"));
    }
    let silu = match crate::node::attrs::string(&label, node, "activation")?.as_deref() {
        None | Some("none") => false,
        Some("silu") | Some("swish") => true,
        Some(other) => return Err(label.err(format!("activation is {other:?}: it must be none, silu or swish"))),
    };
    let outputs = node.output.iter().rposition(|o| !o.is_empty()).map_or(1, |i| i + 1);
    if outputs > 2 {
        return Err(label.err(format!("{outputs} outputs asked for: output and present_state are the two")));
    }
    let op = CausalConv { silu, has_bias: given(2), has_past: given(3), present: outputs == 2, label };
    let inputs = 2 + usize::from(op.has_bias) + usize::from(op.has_past);
    Expanded::new("CausalConvWithState", op, inputs, rules, as_is).with_outputs(outputs).built()
}

fn rules<'r>(op: &'r CausalConv, s: &mut Solver<'r>, Io { inputs, outputs }: Io<'r>) -> InferenceResult {
    s.equals(&outputs[0].datum_type, &inputs[0].datum_type)?;
    s.equals(&outputs[0].shape, &inputs[0].shape)?;
    if op.present {
        s.equals(&outputs[1].datum_type, &inputs[0].datum_type)?;
        s.equals(&outputs[1].rank, 3)?;
        s.equals(&outputs[1].shape[0], &inputs[0].shape[0])?;
        s.equals(&outputs[1].shape[1], &inputs[0].shape[1])?;
        s.given(&inputs[1].shape[2], move |s, k| s.equals(&outputs[1].shape[2], (k - 1).simplify()))?;
    }
    Ok(())
}

impl Op for CausalConv {
    fn name(&self) -> StaticName {
        "CausalConvWithState".into()
    }

    op_as_typed_op!();
}

impl TypedOp for CausalConv {
    as_op!();

    fn output_facts(&self, inputs: &[&TypedFact]) -> TractResult<TVec<TypedFact>> {
        let (x, w) = (inputs[0], inputs[1]);
        if !matches!(x.datum_type, DatumType::F16 | DatumType::F32 | DatumType::F64) {
            return Err(self.label.err(format!("the input must be floats, got {:?}", x.datum_type)));
        }
        if x.rank() != 3 || w.rank() != 3 {
            let msg = format!("input and weight must have rank 3, got {} and {}", x.rank(), w.rank());
            return Err(self.label.err(msg));
        }
        if inputs.iter().any(|f| f.datum_type != x.datum_type) {
            return Err(self.label.err("every input must have the input's type"));
        }
        let mut out = tvec![x.datum_type.fact(x.shape.clone())];
        if self.present {
            let k = w.shape[2].clone() - 1;
            out.push(x.datum_type.fact(&[x.shape[0].clone(), x.shape[1].clone(), k.simplify()]));
        }
        Ok(out)
    }
}

impl EvalOp for CausalConv {
    op_out_of_plan!();

    fn eval(&self, _ctx: &EvalContext, inputs: TVec<TValue>) -> TractResult<TVec<TValue>> {
        let (x, w) = (&inputs[0], &inputs[1]);
        let dt = x.datum_type();
        let &[b, c, l] = x.shape() else { return Err(self.label.err("the input must have rank 3")) };
        let k = match w.shape() {
            &[wc, 1, k] if wc == c && k >= 1 => k,
            other => return Err(self.label.err(format!("the weight has shape {other:?}, [{c}, 1, k] is needed"))),
        };
        // The padded rows and the states are sized from the inputs' products: checked before allocating.
        for dims in [[b, c, l + k - 1], [b, c, k - 1]] {
            let numel = dims.iter().try_fold(1u64, |a, &d| a.checked_mul(d as u64)).unwrap_or(u64::MAX);
            crate::kernel::check_allocation(numel, 8).map_err(|e| self.label.err(e))?;
        }
        let f64s = |t: &Tensor| -> TractResult<Vec<f64>> {
            Ok(t.cast_to::<f64>()?.try_as_plain_ram()?.as_slice::<f64>()?.to_vec())
        };
        let (xs, ws) = (f64s(x)?, f64s(w)?);
        let mut next = 2;
        let bias = if self.has_bias {
            let t = &inputs[next];
            next += 1;
            if t.shape() != [c] {
                return Err(self.label.err(format!("the bias has shape {:?}, [{c}] is needed", t.shape())));
            }
            f64s(t)?
        } else {
            vec![0.0; c]
        };
        let past = if self.has_past {
            let t = &inputs[next];
            if t.shape() != [b, c, k - 1] {
                let msg = format!("past_state has shape {:?}, [{b}, {c}, {}] is needed", t.shape(), k - 1);
                return Err(self.label.err(msg));
            }
            f64s(t)?
        } else {
            vec![0.0; b * c * (k - 1)]
        };
        // The padded row of (batch, channel): past_state then input.
        let width = l + k - 1;
        let mut out = Vec::with_capacity(b * c * l);
        let mut present = Vec::with_capacity(b * c * (k - 1));
        let mut padded = vec![0f64; width];
        for bi in 0..b {
            for ci in 0..c {
                let row = bi * c + ci;
                padded[..k - 1].copy_from_slice(&past[row * (k - 1)..(row + 1) * (k - 1)]);
                padded[k - 1..].copy_from_slice(&xs[row * l..(row + 1) * l]);
                let kernel = &ws[ci * k..(ci + 1) * k];
                for li in 0..l {
                    let sum: f64 = kernel.iter().zip(&padded[li..li + k]).map(|(a, v)| a * v).sum();
                    out.push(bias[ci] + sum);
                }
                present.extend_from_slice(&padded[width - (k - 1)..]);
            }
        }
        let mut y =
            tract_ndarray::ArrayD::from_shape_vec(&[b, c, l][..], out)?.into_tensor().cast_to_dt(dt)?.into_owned();
        if self.silu {
            let conv = y.cast_to::<f32>()?;
            let act: Vec<f32> =
                conv.try_as_plain_ram()?.as_slice::<f32>()?.iter().map(|&v| v * (1.0 / (1.0 + (-v).exp()))).collect();
            y = tract_ndarray::ArrayD::from_shape_vec(&[b, c, l][..], act)?.into_tensor().cast_to_dt(dt)?.into_owned();
        }
        let mut outs = tvec![y.into_tvalue()];
        if self.present {
            let p = tract_ndarray::ArrayD::from_shape_vec(&[b, c, k - 1][..], present)?.into_tensor();
            outs.push(p.cast_to_dt(dt)?.into_owned().into_tvalue());
        }
        Ok(outs)
    }
}
