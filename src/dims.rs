//! Writing symbolic dims as the expressions users read: integers and symbols with `+ - *`, `/` (floor
//! division by an integer) and two-argument `min(a,b)` / `max(a,b)`, constants last: `N-2`,
//! `(N+1)/2`, `min(N,3)`, `max(0,N-2)`.

use tract_onnx::prelude::TDim;
use tract_onnx::tract_core::internal::DimLike;

/// Formats a dim: its integer value, or an expression.
pub fn format_dim(d: &TDim) -> String {
    match d {
        TDim::Val(v) => v.to_string(),
        TDim::Sym(s) => s.to_string(),
        TDim::Add(terms) => {
            // Symbolic terms first, the constant last.
            let mut sorted: Vec<&TDim> = terms.iter().filter(|t| !matches!(t, TDim::Val(_))).collect();
            sorted.extend(terms.iter().filter(|t| matches!(t, TDim::Val(_))));
            let mut out = String::new();
            for (i, t) in sorted.into_iter().enumerate() {
                let (negative, magnitude) = match t {
                    TDim::Val(v) if *v < 0 => (true, v.unsigned_abs().to_string()),
                    TDim::MulInt(k, x) if *k < 0 => (true, scaled(k.unsigned_abs(), x)),
                    other => (false, format_term(other)),
                };
                match (i, negative) {
                    (0, true) => out.push('-'),
                    (0, false) => {}
                    (_, true) => out.push('-'),
                    (_, false) => out.push('+'),
                }
                out.push_str(&magnitude);
            }
            out
        }
        TDim::Mul(terms) => terms.iter().map(format_factor).collect::<Vec<_>>().join("*"),
        TDim::MulInt(k, x) if *k < 0 => format!("-{}", scaled(k.unsigned_abs(), x)),
        TDim::MulInt(k, x) => scaled(*k as u64, x),
        TDim::Div(x, k) => format!("{}/{k}", format_factor(x)),
        TDim::Min(terms) => nested("min", terms),
        TDim::Max(terms) => nested("max", terms),
        other => other.to_string(),
    }
}

fn scaled(k: u64, x: &TDim) -> String {
    if k == 1 {
        format_term(x)
    } else {
        format!("{k}*{}", format_factor(x))
    }
}

/// A term of a sum: sums inside need no parentheses (they are flattened), everything else is atomic.
fn format_term(d: &TDim) -> String {
    format_dim(d)
}

/// A factor of a product or a dividend: parenthesized when it is a sum or a quotient (`2*((H+31)/32)`
/// is not `2*(H+31)/32`, which reads as `(2*(H+31))/32`).
fn format_factor(d: &TDim) -> String {
    match d {
        TDim::Add(_) | TDim::Div(..) => format!("({})", format_dim(d)),
        TDim::MulInt(k, _) if *k < 0 => format!("({})", format_dim(d)),
        _ => format_dim(d),
    }
}

/// `min(a,b,c)` written as `min(a,min(b,c))`, constants first as tract sorts them.
fn nested(name: &str, terms: &[TDim]) -> String {
    match terms {
        [] => name.to_string(),
        [one] => format_dim(one),
        [first, rest @ ..] => format!("{name}({},{})", format_dim(first), nested(name, rest)),
    }
}

/// `num / den` when it is exact and can be written, else `None`. tract divides by a single term;
/// a sum is divided term by term: `(32*B + 32*B*A) / (16 + 16*A)` is `2*B` because every term of the
/// numerator is `2*B` times the matching term of the denominator (checked by multiplying back).
pub fn divide_exact(num: &TDim, den: &TDim) -> Option<TDim> {
    if den.as_i64() == Some(0) {
        return None;
    }
    if let Ok((q, 1)) = num.maybe_div(den) {
        return Some(q.simplify());
    }
    let den_terms = sum_terms(den);
    if den_terms.len() < 2 {
        return None;
    }
    let first = den_terms.first()?;
    let terms = sum_terms(num);
    for term in &terms {
        let Ok((q, 1)) = term.maybe_div(first) else { continue };
        let q = q.simplify();
        if (q.clone() * den.clone() - num.clone()).simplify().as_i64() == Some(0) {
            return Some(q);
        }
    }
    None
}

/// The terms of a sum, a constant factor distributed (`16*(1+A)` is `16 + 16*A`).
fn sum_terms(d: &TDim) -> Vec<TDim> {
    match d.clone().simplify() {
        TDim::Add(terms) => terms,
        TDim::MulInt(c, inner) => match *inner {
            TDim::Add(terms) => terms.into_iter().map(|t| (t * c).simplify()).collect(),
            other => vec![TDim::MulInt(c, Box::new(other))],
        },
        other => vec![other],
    }
}

/// `e mod k` (the result in `[0, k)`, Python's `%`) for a symbolic `e` and a constant `k >= 1`, when it
/// can be written: terms whose coefficient is a multiple of `k` contribute nothing and are dropped,
/// and what remains must be `c0 + t` or `c0 - t` with `t` provably non-negative, giving
/// `(t + c0) - k*((t + c0)/k)` or `(c0 - t) + k*((t - c0 + k - 1)/k)`. This is how a pad to a multiple
/// of a window, `(w - x % w) % w`, gets its exact form `w*((x+w-1)/w) - x`. The caller checks the
/// result by evaluation (tract simplifies what it builds).
pub fn modulo(e: &TDim, k: i64) -> Option<TDim> {
    if k < 1 {
        return None;
    }
    let terms = match e.clone().simplify() {
        TDim::Add(terms) => terms,
        other => vec![other],
    };
    let mut c0: i64 = 0;
    let mut rest: Vec<(i64, TDim)> = vec![];
    for t in terms {
        let (c, base) = match t {
            TDim::Val(v) => {
                c0 = c0.checked_add(v.rem_euclid(k))?.rem_euclid(k);
                continue;
            }
            TDim::MulInt(c, base) => (c, *base),
            other => (1, other),
        };
        let c = c.rem_euclid(k);
        if c != 0 {
            rest.push((c, base));
        }
    }
    match rest.as_slice() {
        [] => Some(TDim::Val(c0)),
        [(1, t)] if t.prove_positive_or_zero() => {
            let x = t.clone() + c0;
            Some(x.clone() - (x / k as u64) * k)
        }
        [(c, t)] if *c == k - 1 && t.prove_positive_or_zero() => {
            Some(TDim::Val(c0) - t.clone() + ((t.clone() - c0 + (k - 1)) / k as u64) * k)
        }
        _ => None,
    }
}

/// `d` with the forms that slicing and concatenating leave behind put back together: cutting an axis
/// of length `X` at `c` and concatenating the parts (a `roll`, shifted windows) gives
/// `min(c,X) + max(0,X-c)`, which is `X` for `c, X >= 0`. tract keeps the sum, and a reshape of it
/// then fails its volume check.
pub fn tidy(d: &TDim) -> TDim {
    match d {
        TDim::Add(terms) => {
            let mut terms: Vec<TDim> = terms.iter().map(tidy).collect();
            'search: loop {
                for i in 0..terms.len() {
                    let Some((c, x)) = min_with_constant(&terms[i]) else { continue };
                    for j in 0..terms.len() {
                        if i == j || !is_max_zero_of(&terms[j], &(x.clone() - c).simplify()) {
                            continue;
                        }
                        if c < 0 || !x.prove_positive_or_zero() {
                            continue;
                        }
                        let (hi, lo) = (i.max(j), i.min(j));
                        terms.remove(hi);
                        terms.remove(lo);
                        terms.push(x);
                        continue 'search;
                    }
                }
                break;
            }
            TDim::Add(terms).simplify()
        }
        TDim::Mul(terms) => TDim::Mul(terms.iter().map(tidy).collect()).simplify(),
        TDim::MulInt(k, x) => TDim::MulInt(*k, Box::new(tidy(x))).simplify(),
        TDim::Div(x, k) => TDim::Div(Box::new(tidy(x)), *k).simplify(),
        TDim::Min(terms) => TDim::Min(terms.iter().map(tidy).collect()).simplify(),
        TDim::Max(terms) => TDim::Max(terms.iter().map(tidy).collect()).simplify(),
        other => other.clone(),
    }
}

/// `(c, X)` for `min(c, X)`.
fn min_with_constant(d: &TDim) -> Option<(i64, TDim)> {
    let TDim::Min(terms) = d else { return None };
    match terms.as_slice() {
        [TDim::Val(c), x] | [x, TDim::Val(c)] => Some((*c, x.clone())),
        _ => None,
    }
}

/// Whether `d` is `max(0, y)`.
fn is_max_zero_of(d: &TDim, y: &TDim) -> bool {
    let TDim::Max(terms) = d else { return false };
    match terms.as_slice() {
        [TDim::Val(0), x] | [x, TDim::Val(0)] => x == y || (x.clone() - y.clone()).simplify().as_i64() == Some(0),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::view::Dim;
    use tract_onnx::prelude::SymbolScope;

    #[test]
    fn a_pad_to_a_multiple_of_a_window_is_exact() {
        let s = SymbolScope::default().with_assertion("H>=0").unwrap();
        let hs = s.sym("H");
        let x = TDim::Sym(hs.clone()) / 4;
        let r = modulo(&x, 4).unwrap();
        let pad = modulo(&(TDim::Val(4) - r.clone()), 4).unwrap();
        for h in 0..200i64 {
            let v = std::collections::HashMap::from([(hs.clone(), h)]);
            let q = h / 4;
            assert_eq!(crate::analysis::eval_exact(&r, &v), Some(q % 4), "{r} at H={h}");
            assert_eq!(crate::analysis::eval_exact(&pad, &v), Some((4 - q % 4) % 4), "{pad} at H={h}");
        }
    }

    #[test]
    fn the_two_parts_of_a_cut_axis_add_up_to_the_axis() {
        let s = SymbolScope::default().with_assertion("H>=0").unwrap();
        let p = (TDim::Sym(s.sym("H")) + 12) / 16 * 4;
        let sum = p.clone().min_with(&TDim::Val(2)) + (p.clone() - 2).max_with(&TDim::Val(0));
        assert_eq!(tidy(&sum), p);
        assert_eq!(tidy(&(sum + 3)), p + 3);
    }

    #[test]
    fn sums_divide_term_by_term() {
        let s = SymbolScope::default();
        let (b, h, w) = (TDim::Sym(s.sym("B")), TDim::Sym(s.sym("H")), TDim::Sym(s.sym("W")));
        let a = (h / 16) * (w / 16);
        let num = b.clone() * 32 + b.clone() * 32 * a.clone();
        let den = TDim::Val(16) + a.clone() * 16;
        assert_eq!(divide_exact(&num, &den), Some(b.clone() * 2));
        assert_eq!(divide_exact(&(b.clone() * 6), &TDim::Val(3)), Some(b.clone() * 2));
        assert_eq!(divide_exact(&(b.clone() + 1), &(a.clone() + 1)), None);
        assert_eq!(divide_exact(&b, &TDim::Val(0)), None);
    }

    #[test]
    fn expressions_read_naturally() {
        let s = SymbolScope::default();
        let n = TDim::Sym(s.sym("N"));
        assert_eq!(format_dim(&(n.clone() - 2)), "N-2");
        assert_eq!(format_dim(&n.clone().div_ceil(2)), "(N+1)/2");
        assert_eq!(format_dim(&TDim::Max(vec![TDim::Val(0), n.clone() - 2])), "max(0,N-2)");
        assert_eq!(format_dim(&TDim::Min(vec![n.clone(), TDim::Val(3), TDim::Val(4)])), "min(N,min(3,4))");
        assert_eq!(format_dim(&(TDim::Val(3) - n.clone())), "-N+3");
        assert_eq!(format_dim(&(n.clone() * 4)), "4*N");
        assert_eq!(format_dim(&TDim::Val(-5)), "-5");
        let h = TDim::Sym(s.sym("H"));
        assert_eq!(format_dim(&(h.clone().div_ceil(32) * 2)), "2*((H+31)/32)");
        assert_eq!(format_dim(&(h.clone().div_ceil(8) * h.clone().div_ceil(8))), "((H+7)/8)*((H+7)/8)");
    }
}
