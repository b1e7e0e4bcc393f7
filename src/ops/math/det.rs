//! ONNX `Det` (opset 11): the determinant of each square matrix of the last two axes, by Gaussian
//! elimination with partial pivoting in f64, rounded once to the input's type.

use crate::node::expanded::{as_is, Expanded, Io};
use crate::node::Label;
use tract_onnx::model::ParsingContext;
use tract_onnx::pb::NodeProto;
use tract_onnx::prelude::*;
use tract_onnx::tract_core::internal::*;
use tract_onnx::tract_hir::internal::*;

/// The Det builder.
pub(crate) fn det(_ctx: &ParsingContext, node: &NodeProto) -> TractResult<(Box<dyn InferenceOp>, Vec<String>)> {
    let label = crate::node::node_label(node);
    if node.input.len() != 1 || node.input[0].is_empty() {
        return Err(label.err("Det takes one input"));
    }
    Expanded::new("Det", Det { label }, 1, rules, as_is).built()
}

/// `Det`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct Det {
    /// The node, for errors.
    pub label: Label,
}

fn rules<'r>(_: &'r Det, s: &mut Solver<'r>, Io { inputs, outputs }: Io<'r>) -> InferenceResult {
    s.equals(&outputs[0].datum_type, &inputs[0].datum_type)?;
    s.equals(&outputs[0].rank, inputs[0].rank.bex() - 2)
}

impl Op for Det {
    fn name(&self) -> StaticName {
        "Det".into()
    }

    op_as_typed_op!();
}

impl TypedOp for Det {
    as_op!();

    fn output_facts(&self, inputs: &[&TypedFact]) -> TractResult<TVec<TypedFact>> {
        let x = inputs[0];
        if !matches!(x.datum_type, DatumType::F16 | DatumType::F32 | DatumType::F64) {
            return Err(self.label.err(format!("X must be float16, float or double, got {:?}", x.datum_type)));
        }
        let r = x.rank();
        if r < 2 {
            return Err(self.label.err(format!("X must have rank 2 or more, got {r}")));
        }
        if x.shape[r - 1] != x.shape[r - 2] {
            let (a, b) = (crate::dims::format_dim(&x.shape[r - 2]), crate::dims::format_dim(&x.shape[r - 1]));
            // Two different symbols may still be equal when the model runs; numbers cannot.
            if x.shape[r - 1].to_i64().is_ok() && x.shape[r - 2].to_i64().is_ok() {
                return Err(self.label.err(format!("the matrices are {a}x{b}: they must be square")));
            }
        }
        Ok(tvec![x.datum_type.fact(&x.shape[..r - 2])])
    }
}

/// The determinant of the `n`x`n` row-major matrix `m` (destroyed).
fn determinant(m: &mut [f64], n: usize) -> f64 {
    let mut det = 1.0;
    for col in 0..n {
        let pivot = (col..n).max_by(|&a, &b| m[a * n + col].abs().total_cmp(&m[b * n + col].abs())).unwrap_or(col);
        if m[pivot * n + col] == 0.0 {
            return 0.0;
        }
        if pivot != col {
            for k in 0..n {
                m.swap(pivot * n + k, col * n + k);
            }
            det = -det;
        }
        let p = m[col * n + col];
        det *= p;
        for row in col + 1..n {
            let f = m[row * n + col] / p;
            for k in col..n {
                m[row * n + k] -= f * m[col * n + k];
            }
        }
    }
    det
}

impl EvalOp for Det {
    op_out_of_plan!();

    fn eval(&self, _ctx: &EvalContext, inputs: TVec<TValue>) -> TractResult<TVec<TValue>> {
        let x = args_1!(inputs);
        let shape = x.shape();
        let r = shape.len();
        ensure!(r >= 2, self.label.err(format!("X must have rank 2 or more, got {r}")));
        let (rows, n) = (shape[r - 2], shape[r - 1]);
        if rows != n {
            return Err(self.label.err(format!("the matrices are {rows}x{n}: they must be square")));
        }
        let values = x.cast_to::<f64>()?;
        let values = values.try_as_plain_ram()?.as_slice::<f64>()?;
        let size = n * n;
        let count: usize = shape[..r - 2].iter().product();
        let mut out = Vec::with_capacity(count);
        let mut work = vec![0f64; size];
        for i in 0..count {
            work.copy_from_slice(&values[i * size..(i + 1) * size]);
            out.push(determinant(&mut work, n));
        }
        let y = tract_ndarray::ArrayD::from_shape_vec(&shape[..r - 2], out)?.into_tensor();
        Ok(tvec![y.cast_to_dt(x.datum_type())?.into_owned().into_tvalue()])
    }
}
