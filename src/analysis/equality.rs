//! `Equal` over symbolic dims, decided by proof.
//!
//! tract compares dims as expressions: `(L+320)/512 == 1` is false to it because the two are written
//! differently, although it is true for every `L` from 192 to 703. A folded false there takes the
//! wrong branch of silero-vad's `If(shape[-1] == 1)`. Here two dims are equal when their difference
//! simplifies to 0, different when the assumptions in force prove it non-zero, and otherwise
//! undecided: the comparison is then left to run time.

use tract_onnx::prelude::*;
use tract_onnx::tract_core::ops::binary::TypedBinOp;

/// What a comparison of constant inputs gives, when it is an equality over dims: `Some(Some(v))`
/// decided, `Some(None)` undecided (not to be folded), `None` not such a comparison (tract's own
/// evaluation stands).
pub(crate) fn symbolic_equality(op: &dyn TypedOp, inputs: &[TValue]) -> Option<Option<Tensor>> {
    let name = op.downcast_ref::<TypedBinOp>()?.0.name();
    let negate = match name {
        "Eq" => false,
        "NE" => true,
        _ => return None,
    };
    if inputs.len() != 2 || !inputs.iter().any(|t| t.datum_type().is_tdim()) {
        return None;
    }
    let dims = |t: &TValue| -> Option<Tensor> {
        t.clone().into_tensor().cast_to_dt(TDim::datum_type()).ok().map(|c| c.into_owned())
    };
    let (a, b) = (dims(&inputs[0])?, dims(&inputs[1])?);
    let a = a.to_plain_array_view::<TDim>().ok()?;
    let b = b.to_plain_array_view::<TDim>().ok()?;
    let shape = tract_onnx::tract_core::broadcast::multi_broadcast(&[a.shape(), b.shape()]).ok()?;
    let (a, b) = (a.broadcast(&*shape)?, b.broadcast(&*shape)?);
    let mut out = Vec::with_capacity(shape.iter().product());
    for (x, y) in a.iter().zip(b.iter()) {
        let Some(same) = equal(x, y) else { return Some(None) };
        out.push(same != negate);
    }
    Some(tract_ndarray::ArrayD::from_shape_vec(&*shape, out).ok().map(|a| a.into_tensor()))
}

/// Whether two dims are equal for every value of their symbols (`Some(true)`), for none
/// (`Some(false)`), or it depends (`None`).
fn equal(a: &TDim, b: &TDim) -> Option<bool> {
    let diff = (a.clone() - b.clone()).simplify();
    match diff.as_i64() {
        Some(d) => Some(d == 0),
        None if diff.prove_strict_positive() || diff.prove_strict_negative() => Some(false),
        None => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tract_onnx::tract_core::ops::logic::{CompEq, CompNE};

    fn compare(op: TypedBinOp, a: TDim, b: i64) -> Option<Option<bool>> {
        let a = tensor1(&[a]).into_tvalue();
        let b = tensor1(&[b]).into_tvalue();
        symbolic_equality(&op, &[a, b]).map(|t| t.map(|t| t.try_as_plain_ram().unwrap().as_slice::<bool>().unwrap()[0]))
    }

    #[test]
    fn equality_of_dims_is_decided_by_proof_or_left_to_run_time() {
        let scope = SymbolScope::default();
        let l = scope.sym("L");
        scope.add_assertion("L>=0").unwrap();
        let eq = || TypedBinOp(Box::new(CompEq), None);
        let ne = || TypedBinOp(Box::new(CompNE), None);
        // (L+320)/512 is 1 for some L and not for others: undecided (tract says false).
        let t = (TDim::Sym(l.clone()) + 320) / 512;
        assert_eq!(compare(eq(), t.clone(), 1), Some(None));
        assert_eq!(compare(ne(), t, 1), Some(None));
        // L+1 is never 0 when L >= 0; L-L is always 0.
        assert_eq!(compare(eq(), TDim::Sym(l.clone()) + 1, 0), Some(Some(false)));
        assert_eq!(compare(ne(), TDim::Sym(l.clone()) + 1, 0), Some(Some(true)));
        assert_eq!(compare(eq(), TDim::Sym(l.clone()) - TDim::Sym(l), 0), Some(Some(true)));
        // Not a comparison of dims: tract's evaluation stands.
        let ints = [tensor1(&[1i64]).into_tvalue(), tensor1(&[1i64]).into_tvalue()];
        assert!(symbolic_equality(&eq(), &ints).is_none());
    }
}
