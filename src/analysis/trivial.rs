//! Requirements that hold whatever the inputs: not reported.
//!
//! A requirement `x == max(0,x)` says that `x` is not negative. Where `x` is already the dim of a value
//! the model computes (a value some tensor has as a dim is never negative), or provably not negative,
//! it asks nothing of the inputs: `(samples+240)/320-1 == max(0,(samples+240)/320-1)` once the first
//! side is the length of a frame axis.

use super::require::Requirement;
use crate::dims::DimSet;
use tract_onnx::prelude::*;

/// Whether `r` holds for every value of the inputs, `dims` being the dims of the values typed.
pub(crate) fn holds_always(r: &Requirement, dims: &DimSet) -> bool {
    let (a, b) = (without_max_zero(&r.kept, dims), without_max_zero(&r.other, dims));
    a == b || (a.clone() - b.clone()).simplify().as_i64() == Some(0) || crate::dims::poly::equal(&a, &b)
}

/// `d` with every `max(0,x)` whose `x` cannot be negative written `x`; `d` itself (not rewritten, so
/// in the form it has) when it has no such `max`.
pub(crate) fn without_nonnegative_max(d: &TDim, dims: &DimSet) -> TDim {
    if has_nonnegative_max(d, dims) {
        without_max_zero(d, dims)
    } else {
        d.clone()
    }
}

/// Whether `d` holds a `max(0,x)` whose `x` cannot be negative.
fn has_nonnegative_max(d: &TDim, dims: &DimSet) -> bool {
    match d {
        TDim::Max(terms) => {
            matches!(terms.as_slice(), [TDim::Val(0), x] | [x, TDim::Val(0)] if dims.contains(x) || x.prove_positive_or_zero())
                || terms.iter().any(|t| has_nonnegative_max(t, dims))
        }
        TDim::Min(terms) | TDim::Add(terms) | TDim::Mul(terms) => terms.iter().any(|t| has_nonnegative_max(t, dims)),
        TDim::MulInt(_, x) | TDim::Div(x, _) => has_nonnegative_max(x, dims),
        _ => false,
    }
}

/// `d` with every `max(0,x)` whose `x` cannot be negative written `x`.
fn without_max_zero(d: &TDim, dims: &DimSet) -> TDim {
    let each = |terms: &[TDim]| terms.iter().map(|t| without_max_zero(t, dims)).collect::<Vec<_>>();
    match d {
        TDim::Max(terms) => match terms.as_slice() {
            [TDim::Val(0), x] | [x, TDim::Val(0)] if dims.contains(x) || x.prove_positive_or_zero() => {
                without_max_zero(x, dims)
            }
            _ => TDim::Max(each(terms)),
        },
        TDim::Min(terms) => TDim::Min(each(terms)),
        TDim::Add(terms) => TDim::Add(each(terms)),
        TDim::Mul(terms) => TDim::Mul(each(terms)),
        TDim::MulInt(k, x) => TDim::MulInt(*k, Box::new(without_max_zero(x, dims))),
        TDim::Div(x, k) => TDim::Div(Box::new(without_max_zero(x, dims)), *k),
        other => other.clone(),
    }
    .simplify()
}
