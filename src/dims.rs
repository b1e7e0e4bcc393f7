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
    let TDim::Add(den_terms) = den.clone().expand_polynomial() else { return None };
    let num = num.clone().expand_polynomial();
    let first = den_terms.first()?;
    let terms = match &num {
        TDim::Add(terms) => terms.clone(),
        other => vec![other.clone()],
    };
    for term in &terms {
        let Ok((q, 1)) = term.maybe_div(first) else { continue };
        let q = q.simplify();
        if (q.clone() * den.clone()).expand_polynomial().simplify() == num.clone().simplify() {
            return Some(q);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use tract_onnx::prelude::SymbolScope;

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
