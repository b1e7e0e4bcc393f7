//! Evaluating a dim expression exactly, at given values of its symbols.

use std::collections::HashMap;
use tract_onnx::prelude::*;

/// The value of `d` with its symbols set from `values`; `None` if a symbol has no value, on
/// overflow, or for a construct with no integer meaning.
pub(crate) fn eval_exact(d: &TDim, values: &HashMap<Symbol, i64>) -> Option<i64> {
    Some(match d {
        TDim::Val(v) => *v,
        TDim::Sym(s) => *values.get(s)?,
        TDim::Add(terms) => terms.iter().try_fold(0i64, |acc, t| acc.checked_add(eval_exact(t, values)?))?,
        TDim::Mul(terms) => terms.iter().try_fold(1i64, |acc, t| acc.checked_mul(eval_exact(t, values)?))?,
        TDim::MulInt(k, x) => eval_exact(x, values)?.checked_mul(*k)?,
        TDim::Div(x, k) => eval_exact(x, values)?.checked_div_euclid(i64::try_from(*k).ok()?)?,
        TDim::Min(terms) => {
            terms.iter().map(|t| eval_exact(t, values)).collect::<Option<Vec<_>>>()?.into_iter().min()?
        }
        TDim::Max(terms) => {
            terms.iter().map(|t| eval_exact(t, values)).collect::<Option<Vec<_>>>()?.into_iter().max()?
        }
        TDim::Broadcast(terms) => {
            let vals = terms.iter().map(|t| eval_exact(t, values)).collect::<Option<Vec<_>>>()?;
            let big: Vec<i64> = vals.iter().copied().filter(|&v| v != 1).collect();
            match big.first() {
                None => 1,
                Some(&v) if big.iter().all(|&b| b == v) => v,
                Some(_) => return None,
            }
        }
        TDim::Ge(a, b) => (eval_exact(a, values)? >= eval_exact(b, values)?) as i64,
        TDim::Eq(a, b) => (eval_exact(a, values)? == eval_exact(b, values)?) as i64,
    })
}
