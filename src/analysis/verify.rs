//! Checking symbolic shape arithmetic by evaluating it.
//!
//! tract simplifies dim expressions as it builds them, and some of its rewrites are wrong for
//! divisions of negative terms: `(4 - r) mod 4` comes out as `-r`. A shape value computed from
//! symbolic dims (`Div`, `Mod`, `Sub`...) is therefore checked before analysis uses it: at a few
//! dozen values of its symbols, the ONNX operator applied to the evaluated inputs must give the
//! evaluated output. A value that fails is dropped (analysis then treats it as unknown, which is
//! never wrong). Evaluation here is exact: floor division as the dims mean it, checked arithmetic.

use crate::symbolic::eval_exact;
use std::collections::HashMap;
use tract_onnx::prelude::*;

/// The ONNX elementwise integer operators whose symbolic results are checked.
const CHECKED: &[&str] = &["Add", "Sub", "Mul", "Div", "Mod", "Neg", "Abs", "Max", "Min"];

/// Whether `op_type` is one whose symbolic results [`holds`] checks.
pub(crate) fn is_checked(op_type: &str) -> bool {
    CHECKED.contains(&op_type)
}

fn ints(t: &Tensor) -> Option<Vec<TDim>> {
    if t.rank() > 1 {
        return None;
    }
    crate::dims::dims_of(t).ok()
}

/// ONNX's result of `op` on two integers (`fmod` for `Mod`); `None` on overflow or a division by 0.
fn apply(op: &str, fmod: bool, a: i64, b: i64) -> Option<i64> {
    Some(match op {
        "Add" => a.checked_add(b)?,
        "Sub" => a.checked_sub(b)?,
        "Mul" => a.checked_mul(b)?,
        // Integer Div truncates toward zero.
        "Div" => a.checked_div(b)?,
        "Mod" if fmod => a.checked_rem(b)?,
        // Mod takes the divisor's sign, as Python's %.
        "Mod" => {
            let r = a.checked_rem(b)?;
            if r != 0 && (r < 0) != (b < 0) {
                r + b
            } else {
                r
            }
        }
        "Max" => a.max(b),
        "Min" => a.min(b),
        _ => return None,
    })
}

/// Whether `output`, the value tract computed for an `op_type` node over `inputs` (0-D or 1-D integer
/// or dim tensors), is right at sampled values of the symbols. `false` when it cannot be checked.
pub(super) fn holds(op_type: &str, fmod: bool, inputs: &[&Tensor], output: &Tensor) -> bool {
    let Some(ins) = inputs.iter().map(|t| ints(t)).collect::<Option<Vec<_>>>() else { return false };
    let Some(out) = ints(output) else { return false };
    let mut symbols: Vec<Symbol> = vec![];
    for d in ins.iter().flatten().chain(out.iter()) {
        for s in d.symbols() {
            if !symbols.contains(&s) {
                symbols.push(s);
            }
        }
    }
    // Deterministic samples: every symbol small, large, and mixed (a linear congruential sequence).
    let mut seed: u64 = 0x9e37_79b9_7f4a_7c15;
    for sample in 0..48 {
        let mut values = HashMap::new();
        for s in &symbols {
            seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            let v = match sample {
                0..=7 => sample as i64,
                _ => ((seed >> 33) % 300) as i64,
            };
            values.insert(s.clone(), v);
        }
        let Some(ev) = ins
            .iter()
            .map(|i| i.iter().map(|d| eval_exact(d, &values)).collect::<Option<Vec<i64>>>())
            .collect::<Option<Vec<_>>>()
        else {
            return false;
        };
        let Some(got) = out.iter().map(|d| eval_exact(d, &values)).collect::<Option<Vec<i64>>>() else { return false };
        let len = ev.iter().map(Vec::len).max().unwrap_or(0).max(got.len());
        let at = |v: &Vec<i64>, i: usize| if v.len() == 1 { v.first().copied() } else { v.get(i).copied() };
        for i in 0..len {
            let want = match (op_type, ev.as_slice()) {
                ("Neg", [a]) => at(a, i).and_then(|a| a.checked_neg()),
                ("Abs", [a]) => at(a, i).and_then(|a| a.checked_abs()),
                (op, [a, rest @ ..]) if !rest.is_empty() => rest
                    .iter()
                    .try_fold(at(a, i), |acc, b| match (acc, at(b, i)) {
                        (Some(x), Some(y)) => Some(apply(op, fmod, x, y)),
                        _ => None,
                    })
                    .flatten(),
                _ => None,
            };
            // An input outside the operator's domain (a division by 0) says nothing either way.
            let Some(want) = want else { continue };
            if at(&got, i) != Some(want) {
                return false;
            }
        }
    }
    true
}

/// Whether `result` is `floor(num / den)` at sampled values of the symbols.
pub(crate) fn floor_holds(num: &TDim, den: i64, result: &TDim) -> bool {
    let mut symbols: Vec<Symbol> = num.symbols().into_iter().collect();
    for s in result.symbols() {
        if !symbols.contains(&s) {
            symbols.push(s);
        }
    }
    let mut seed: u64 = 0x2545_f491_4f6c_dd1d;
    for sample in 0..48 {
        let mut values = HashMap::new();
        for s in &symbols {
            seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            values.insert(s.clone(), if sample < 8 { sample as i64 } else { ((seed >> 33) % 300) as i64 });
        }
        let (Some(n), Some(r)) = (eval_exact(num, &values), eval_exact(result, &values)) else { return false };
        if n.div_euclid(den) != r {
            return false;
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_wrong_symbolic_mod_is_caught_and_a_right_one_passes() {
        let scope = SymbolScope::default();
        let h = TDim::Sym(scope.sym("H"));
        let q = h.clone() / 4;
        let t = |d: TDim| tensor1(&[d]);
        // tract's (4 - (q mod 4)) mod 4 for q = H/4: `-q + 4*(H/16)`, negative where the real pad is not.
        let r = q.clone() - (h.clone() / 16) * 4;
        let wrong = TDim::Val(0) - r.clone();
        assert!(!holds("Mod", false, &[&t(TDim::Val(4) - r.clone()), &t(TDim::Val(4))], &t(wrong)));
        assert!(holds("Sub", false, &[&t(q.clone()), &t(TDim::Val(1))], &t(q.clone() - 1)));
        assert!(holds("Mul", false, &[&t(q.clone()), &t(TDim::Val(2))], &t(q * 2)));
    }
}
