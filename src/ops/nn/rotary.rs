//! ONNX `RotaryEmbedding` (opset 23) as one op.
//!
//! tract-onnx wires the op as its definition reads: slices of the head, the caches gathered and
//! unsqueezed, four broadcasting multiplications, a subtraction, an addition and concatenations;
//! sixteen nodes a call, which were a third of a Llama export's time (each broadcasting op runs
//! tract's generic path). Here one pass over the input does the same arithmetic in the same order,
//! per element pair `(x1, x2)` with the cache values `(c, s)` of its position:
//! `real = c·x1 - s·x2`, `imag = s·x1 + c·x2`; the pairs are the two halves of the rotated part of
//! each head, or its even and odd elements when `interleaved`, and the rest of the head is copied.
//!
//! The input is `[batch, heads, seq, head]`, or `[batch, seq, heads·head]` with `num_heads`; the caches
//! are `[batch, seq, rot/2]`, or `[positions, rot/2]` read at `position_ids` (`[batch, seq]`, each
//! checked to be a row of the caches). `com.microsoft`'s op of the same name stays tract's.

use crate::node::expanded::{as_is, Expanded, Io};
use crate::node::Label;
use tract_onnx::model::ParsingContext;
use tract_onnx::pb::NodeProto;
use tract_onnx::prelude::*;
use tract_onnx::tract_core::internal::*;
use tract_onnx::tract_hir::internal::*;

/// The RotaryEmbedding builder.
pub(crate) fn rotary_embedding(
    ctx: &ParsingContext,
    node: &NodeProto,
) -> TractResult<(Box<dyn InferenceOp>, Vec<String>)> {
    if node.domain == "com.microsoft" {
        return crate::ops::stock("RotaryEmbedding")(ctx, node);
    }
    let label = crate::node::node_label(node);
    let given = |i: usize| node.input.get(i).is_some_and(|n| !n.is_empty());
    if !(given(0) && given(1) && given(2)) || node.input.len() > 4 {
        return Err(label.err("RotaryEmbedding takes X, cos_cache, sin_cache and optional position_ids"));
    }
    let attr = |name: &str| crate::node::attrs::int(&label, node, name);
    let interleaved = crate::node::attrs::flag(&label, node, "interleaved")?;
    let num_heads = attr("num_heads")?.unwrap_or(0);
    let rotary_dim = attr("rotary_embedding_dim")?.unwrap_or(0);
    let (Ok(num_heads), Ok(rotary_dim)) = (usize::try_from(num_heads), usize::try_from(rotary_dim)) else {
        return Err(
            label.err(format!("num_heads ({num_heads}) and rotary_embedding_dim ({rotary_dim}) must not be negative"))
        );
    };
    let op = Rotary { label, interleaved, num_heads, rotary_dim, positions: given(3) };
    Expanded::new("RotaryEmbedding", op, 3 + usize::from(given(3)), rules, as_is).built()
}

/// `RotaryEmbedding` with its attributes.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct Rotary {
    /// The node, for errors.
    pub label: Label,
    /// Pairs are even and odd elements (else the two halves of the rotated part).
    pub interleaved: bool,
    /// Heads of a rank-3 input (0 when not given).
    pub num_heads: usize,
    /// Elements of each head rotated (0: all).
    pub rotary_dim: usize,
    /// Whether `position_ids` is given.
    pub positions: bool,
}

fn rules<'r>(_: &'r Rotary, s: &mut Solver<'r>, Io { inputs, outputs }: Io<'r>) -> InferenceResult {
    s.equals(&outputs[0].datum_type, &inputs[0].datum_type)?;
    s.equals(&outputs[0].shape, &inputs[0].shape)
}

/// The sizes of one evaluation.
struct Geometry {
    batch: usize,
    seq: usize,
    heads: usize,
    head: usize,
    half: usize,
    /// Whether the input is `[batch, heads, seq, head]` (else `[batch, seq, heads·head]`).
    heads_first: bool,
}

impl Rotary {
    fn geometry(&self, x: &[usize], cos: &[usize], sin: &[usize], ids: Option<&[usize]>) -> TractResult<Geometry> {
        let g = match *x {
            [batch, heads, seq, head] => Geometry { batch, seq, heads, head, half: 0, heads_first: true },
            [batch, seq, hidden] => {
                if self.num_heads == 0 || hidden % self.num_heads != 0 {
                    let msg = format!(
                        "a rank-3 input of {hidden} per position needs num_heads dividing it, got {}",
                        self.num_heads
                    );
                    return Err(self.label.err(msg));
                }
                let heads = self.num_heads;
                Geometry { batch, seq, heads, head: hidden / heads, half: 0, heads_first: false }
            }
            _ => return Err(self.label.err(format!("X must have rank 3 or 4, got shape {x:?}"))),
        };
        let rot = if self.rotary_dim == 0 { g.head } else { self.rotary_dim };
        if rot > g.head || rot % 2 != 0 {
            return Err(self
                .label
                .err(format!("rotary_embedding_dim {rot} must be even and at most the head size {}", g.head)));
        }
        let half = rot / 2;
        let want: Vec<usize> = match ids {
            Some(ids) => {
                if ids != [g.batch, g.seq] {
                    return Err(self.label.err(format!("position_ids is {ids:?}, expected [{}, {}]", g.batch, g.seq)));
                }
                vec![cos.first().copied().unwrap_or(0), half]
            }
            None => vec![g.batch, g.seq, half],
        };
        for (name, cache) in [("cos_cache", cos), ("sin_cache", sin)] {
            if cache != want.as_slice() {
                return Err(self.label.err(format!("{name} is {cache:?}, expected {want:?}")));
            }
        }
        Ok(Geometry { half, ..g })
    }
}

impl Op for Rotary {
    fn name(&self) -> StaticName {
        "RotaryEmbedding".into()
    }

    op_as_typed_op!();
}

impl TypedOp for Rotary {
    as_op!();

    fn output_facts(&self, inputs: &[&TypedFact]) -> TractResult<TVec<TypedFact>> {
        let (x, cos, sin) = (inputs[0], inputs[1], inputs[2]);
        if !matches!(x.rank(), 3 | 4) {
            return Err(self.label.err(format!("X must have rank 3 or 4, got {}", x.rank())));
        }
        if cos.datum_type != x.datum_type || sin.datum_type != x.datum_type {
            let msg = format!(
                "X, cos_cache and sin_cache must have one type, got {:?}, {:?}, {:?}",
                x.datum_type, cos.datum_type, sin.datum_type
            );
            return Err(self.label.err(msg));
        }
        if !matches!(x.datum_type, DatumType::F16 | DatumType::F32 | DatumType::F64) {
            return Err(self.label.err(format!("X must be a float tensor, got {:?}", x.datum_type)));
        }
        Ok(tvec![x.without_value()])
    }
}

impl EvalOp for Rotary {
    op_out_of_plan!();

    fn eval(&self, _ctx: &EvalContext, inputs: TVec<TValue>) -> TractResult<TVec<TValue>> {
        let ids: Option<Vec<i64>> = match inputs.get(3) {
            Some(t) => Some(t.cast_to::<i64>()?.try_as_plain_ram()?.as_slice::<i64>()?.to_vec()),
            None => None,
        };
        let g =
            self.geometry(inputs[0].shape(), inputs[1].shape(), inputs[2].shape(), inputs.get(3).map(|t| t.shape()))?;
        // The cache row of each (batch, position).
        let rows: Vec<usize> = match &ids {
            Some(ids) => {
                let positions = inputs[1].shape()[0];
                ids.iter()
                    .map(|&p| {
                        usize::try_from(p).ok().filter(|&p| p < positions).ok_or_else(|| {
                            self.label.err(format!("position_ids holds {p}, outside the caches' {positions} rows"))
                        })
                    })
                    .collect::<TractResult<_>>()?
            }
            None => (0..g.batch * g.seq).collect(),
        };
        let out = match inputs[0].datum_type() {
            DatumType::F16 => self.rotate::<half::f16>(&inputs, &g, &rows)?,
            DatumType::F32 => self.rotate::<f32>(&inputs, &g, &rows)?,
            DatumType::F64 => self.rotate::<f64>(&inputs, &g, &rows)?,
            dt => return Err(self.label.err(format!("X must be a float tensor, got {dt:?}"))),
        };
        Ok(tvec![out.into_tvalue()])
    }
}

impl Rotary {
    fn rotate<T>(&self, inputs: &[TValue], g: &Geometry, rows: &[usize]) -> TractResult<Tensor>
    where
        T: Datum + Copy + std::ops::Mul<Output = T> + std::ops::Add<Output = T> + std::ops::Sub<Output = T>,
    {
        let mut out = inputs[0].clone().into_tensor();
        let x = inputs[0].try_as_plain_ram()?;
        let x = x.as_slice::<T>()?;
        let (cos, sin) = (inputs[1].try_as_plain_ram()?, inputs[2].try_as_plain_ram()?);
        let (cos, sin) = (cos.as_slice::<T>()?, sin.as_slice::<T>()?);
        let mut plain = out.try_as_plain_ram_mut()?;
        let y = plain.as_slice_mut::<T>()?;
        let half = g.half;
        for b in 0..g.batch {
            for h in 0..g.heads {
                for s in 0..g.seq {
                    // Where this head's elements start, in the input's layout.
                    let start = if g.heads_first {
                        ((b * g.heads + h) * g.seq + s) * g.head
                    } else {
                        ((b * g.seq + s) * g.heads + h) * g.head
                    };
                    let row = rows[b * g.seq + s] * half;
                    let (c, sn) = (&cos[row..row + half], &sin[row..row + half]);
                    let xin = &x[start..start + g.head];
                    let yout = &mut y[start..start + g.head];
                    for k in 0..half {
                        let (i1, i2) = if self.interleaved { (2 * k, 2 * k + 1) } else { (k, k + half) };
                        let (x1, x2) = (xin[i1], xin[i2]);
                        yout[i1] = c[k] * x1 - sn[k] * x2;
                        yout[i2] = sn[k] * x1 + c[k] * x2;
                    }
                }
            }
        }
        Ok(out)
    }
}
