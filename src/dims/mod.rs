//! Writing symbolic dims as the expressions users read: integers and symbols with `+ - *`, `/` (floor
//! division by an integer) and two-argument `min(a,b)` / `max(a,b)`, constants last: `N-2`,
//! `(N+1)/2`, `min(N,3)`, `max(0,N-2)`.

pub(crate) mod poly;
mod quasi;
pub(crate) mod scoped;
mod set;
mod values;

pub(crate) use quasi::smallest;
pub(crate) use set::DimSet;
use tract_onnx::prelude::TDim;
use tract_onnx::tract_core::internal::DimLike;
pub(crate) use values::dims_of;

/// Formats a dim: its integer value, or an expression, in canonical form.
pub fn format_dim(d: &TDim) -> String {
    format_raw(&canonical(d))
}

/// Whether a quotient sits inside another one's numerator.
fn has_nested_division(d: &TDim) -> bool {
    match d {
        TDim::Div(x, _) => contains_division(x) || has_nested_division(x),
        TDim::Add(t) | TDim::Mul(t) | TDim::Min(t) | TDim::Max(t) => t.iter().any(has_nested_division),
        TDim::MulInt(_, x) => has_nested_division(x),
        _ => false,
    }
}

fn contains_division(d: &TDim) -> bool {
    match d {
        TDim::Div(..) => true,
        TDim::Add(t) | TDim::Mul(t) | TDim::Min(t) | TDim::Max(t) => t.iter().any(contains_division),
        TDim::MulInt(_, x) => contains_division(x),
        _ => false,
    }
}

/// One spelling for the quotients tract writes either way: `(x/a + z)/c` and `(x + a*z)/(a*c)` are the
/// same integer for integers `z` and positive `a`, `c` (floor division), and tract's simplifier gives
/// one or the other from run to run (it iterates a hash map). Nested quotients are flattened into
/// the second form, checked by evaluation; anything else is kept as it is.
///
/// Parts of one symbol are first written in their [`smallest`] form.
pub(crate) fn canonical(d: &TDim) -> TDim {
    let d = &smallest(d);
    if !has_nested_division(d) {
        return d.clone();
    }
    // (tract's `==` on dims compares them up to its simplification: it cannot tell the two apart.)
    let flat = flatten_divisions(d);
    if same_values(d, &flat) {
        flat
    } else {
        d.clone()
    }
}

fn flatten_divisions(d: &TDim) -> TDim {
    match d {
        TDim::Div(x, c) => {
            let x = flatten_divisions(x);
            match &x {
                TDim::Div(y, a) => match a.checked_mul(*c) {
                    Some(ac) => TDim::Div(y.clone(), ac),
                    None => TDim::Div(Box::new(x.clone()), *c),
                },
                TDim::Add(terms) => {
                    let inner: Vec<usize> =
                        terms.iter().enumerate().filter(|(_, t)| matches!(t, TDim::Div(..))).map(|(i, _)| i).collect();
                    let [i] = inner.as_slice() else { return TDim::Div(Box::new(x.clone()), *c) };
                    let TDim::Div(y, a) = &terms[*i] else { unreachable!("filtered on Div") };
                    let (Ok(scale), Some(ac)) = (i64::try_from(*a), a.checked_mul(*c)) else {
                        return TDim::Div(Box::new(x.clone()), *c);
                    };
                    let rest: Vec<TDim> =
                        terms.iter().enumerate().filter(|(j, _)| j != i).map(|(_, t)| t.clone()).collect();
                    let numerator = TDim::Add(vec![(**y).clone(), TDim::MulInt(scale, Box::new(TDim::Add(rest)))]);
                    TDim::Div(Box::new(numerator.simplify()), ac)
                }
                _ => TDim::Div(Box::new(x), *c),
            }
        }
        TDim::Add(t) => TDim::Add(t.iter().map(flatten_divisions).collect()),
        TDim::Mul(t) => TDim::Mul(t.iter().map(flatten_divisions).collect()),
        TDim::Min(t) => TDim::Min(t.iter().map(flatten_divisions).collect()),
        TDim::Max(t) => TDim::Max(t.iter().map(flatten_divisions).collect()),
        TDim::MulInt(k, x) => TDim::MulInt(*k, Box::new(flatten_divisions(x))),
        other => other.clone(),
    }
}

/// Formats a dim as it is.
pub(crate) fn format_raw(d: &TDim) -> String {
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
        // After a minus sign a quotient needs its parentheses: `-((H+1)/2)` is not `-(H+1)/2`.
        match x {
            TDim::Div(..) => format!("({})", format_term(x)),
            _ => format_term(x),
        }
    } else {
        format!("{k}*{}", format_factor(x))
    }
}

/// A term of a sum: sums inside need no parentheses (they are flattened), everything else is atomic.
fn format_term(d: &TDim) -> String {
    format_raw(d)
}

/// A factor of a product or a dividend: parenthesized when it is a sum or a quotient (`2*((H+31)/32)`
/// is not `2*(H+31)/32`, which reads as `(2*(H+31))/32`).
fn format_factor(d: &TDim) -> String {
    match d {
        TDim::Add(_) | TDim::Div(..) => format!("({})", format_raw(d)),
        TDim::MulInt(k, _) if *k < 0 => format!("({})", format_raw(d)),
        _ => format_raw(d),
    }
}

/// `min(a,b,c)` written as `min(a,min(b,c))`, constants first as tract sorts them.
fn nested(name: &str, terms: &[TDim]) -> String {
    match terms {
        [] => name.to_string(),
        [one] => format_raw(one),
        [first, rest @ ..] => format!("{name}({},{})", format_raw(first), nested(name, rest)),
    }
}

/// `num / den` when it is exact and can be written, else `None`. tract divides by a single term;
/// a sum is divided term by term: `(32*B + 32*B*A) / (16 + 16*A)` is `2*B` because every term of the
/// numerator is `2*B` times the matching term of the denominator (checked by multiplying back).
pub(crate) fn divide_exact(num: &TDim, den: &TDim) -> Option<TDim> {
    if den.as_i64() == Some(0) {
        return None;
    }
    if let Ok((q, 1)) = num.maybe_div(den) {
        return Some(q.simplify());
    }
    let den_terms = sum_terms(den);
    if den_terms.len() < 2 {
        return divide_each_term(num, den);
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
    poly::divide(num, den)
}

/// `num / den` for a single-term `den`, when it divides every term of `num` exactly: wav2vec2's
/// `(32*B*(S/5) - 32*B) / (32*B)` is `S/5 - 1` (checked by multiplying back).
fn divide_each_term(num: &TDim, den: &TDim) -> Option<TDim> {
    let terms = sum_terms(num);
    if terms.len() < 2 {
        return poly::divide(num, den);
    }
    let mut q = TDim::Val(0);
    for term in &terms {
        let Ok((part, 1)) = term.maybe_div(den) else { return poly::divide(num, den) };
        q += part;
    }
    let q = q.simplify();
    ((q.clone() * den.clone() - num.clone()).simplify().as_i64() == Some(0)).then_some(q)
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
pub(crate) fn modulo(e: &TDim, k: i64) -> Option<TDim> {
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

/// ONNX's integer `Div` of a symbolic `a` by a constant `k >= 1`, which truncates toward zero, as a
/// dim (whose `/` is floor division): `a/k` when `a >= 0` for every value of its symbols, and
/// `max(0, a/k)` when `a >= 1-k` (there the floor of a negative `a/k` is -1 where the truncation is
/// 0): the torch dynamo exporter's `floordiv(height - 1, 4)` is `max(0, (height+3)/4-1)`.
/// `None` when `a` may be lower. The caller checks the result by evaluation.
pub(crate) fn truncated_div(a: &TDim, k: i64) -> Option<TDim> {
    if k < 1 {
        return None;
    }
    let floor = a.clone() / k as u64;
    if at_least(a, 0) {
        Some(floor)
    } else if at_least(a, 1 - k) {
        Some(TDim::Max(vec![TDim::Val(0), floor]))
    } else {
        None
    }
}

/// [`tidy`] then [`smallest`], kept only where it gives the same values as `d` at sampled values of its
/// symbols (tract re-simplifies what `tidy` rebuilds, and some of its rewrites are wrong on negative
/// terms).
pub(crate) fn tidy_checked(d: &TDim) -> TDim {
    let d = &resolve_broadcasts(d);
    let t = smallest(&tidy(d));
    if &t == d || same_values(d, &t) {
        t
    } else {
        d.clone()
    }
}

/// `d` with the broadcasts tract writes between dims it cannot compare (`broadcast(g_1,32)`) resolved
/// as every valid run resolves them: a dim broadcast with 1 is itself, with itself is itself, and
/// with a number other than 1 is that number (the other dim is 1 or that number, else the model
/// fails). A broadcast of two different expressions is left as it is.
pub(crate) fn resolve_broadcasts(d: &TDim) -> TDim {
    let each = |terms: &[TDim]| terms.iter().map(resolve_broadcasts).collect::<Vec<_>>();
    match d {
        TDim::Broadcast(terms) => {
            let mut kept: Vec<TDim> = vec![];
            for t in each(terms) {
                if t.as_i64() != Some(1) && !kept.contains(&t) {
                    kept.push(t);
                }
            }
            let numbers: Vec<TDim> = kept.iter().filter(|t| t.as_i64().is_some()).cloned().collect();
            match (kept.as_slice(), numbers.as_slice()) {
                ([], _) => TDim::Val(1),
                ([one], _) => one.clone(),
                (_, [number]) => number.clone(),
                _ => TDim::Broadcast(kept),
            }
        }
        TDim::Add(terms) => TDim::Add(each(terms)).simplify(),
        TDim::Mul(terms) => TDim::Mul(each(terms)).simplify(),
        TDim::Min(terms) => TDim::Min(each(terms)).simplify(),
        TDim::Max(terms) => TDim::Max(each(terms)).simplify(),
        TDim::MulInt(k, x) => TDim::MulInt(*k, Box::new(resolve_broadcasts(x))).simplify(),
        TDim::Div(x, k) => TDim::Div(Box::new(resolve_broadcasts(x)), *k).simplify(),
        other => other.clone(),
    }
}

/// Whether two dims evaluate to the same values at sampled values of their symbols (0 to 7, then
/// pseudo-random up to 299), floor division as dims mean it.
pub(crate) fn same_values(a: &TDim, b: &TDim) -> bool {
    let mut symbols: Vec<tract_onnx::prelude::Symbol> = a.symbols().into_iter().collect();
    for s in b.symbols() {
        if !symbols.contains(&s) {
            symbols.push(s);
        }
    }
    let mut seed: u64 = 0x853c_49e6_748f_ea9b;
    for sample in 0..48i64 {
        let mut values = std::collections::HashMap::new();
        for s in &symbols {
            seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            values.insert(s.clone(), if sample < 8 { sample } else { ((seed >> 33) % 300) as i64 });
        }
        let (x, y) = (crate::symbolic::eval_exact(a, &values), crate::symbolic::eval_exact(b, &values));
        if x.is_none() || x != y {
            return false;
        }
    }
    true
}

/// `d` with the forms that slicing and concatenating leave behind put back together: cutting an axis
/// of length `X` at `c` and concatenating the parts (a `roll`, shifted windows) gives
/// `min(c,X) + max(0,X-c)`, which is `X` for `c, X >= 0`. tract keeps the sum, and a reshape of it
/// then fails its volume check.
pub(crate) fn tidy(d: &TDim) -> TDim {
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
        TDim::Min(terms) => {
            let terms: Vec<TDim> = terms.iter().map(tidy).collect();
            // min(a, b) is b when a - b >= 0 can be shown (`min(H, H/4)` is `H/4`).
            if let [a, b] = terms.as_slice() {
                if at_least(&(a.clone() - b.clone()).simplify(), 0) {
                    return b.clone();
                }
                if at_least(&(b.clone() - a.clone()).simplify(), 0) {
                    return a.clone();
                }
            }
            TDim::Min(terms).simplify()
        }
        TDim::Max(terms) => {
            let terms: Vec<TDim> = terms.iter().map(tidy).collect();
            // max(c, X) is X when X >= c can be shown (SAME padding: max(0, 2*((H+1)/2) - H + 1)).
            if let [TDim::Val(c), x] | [x, TDim::Val(c)] = terms.as_slice() {
                if at_least(x, *c) {
                    return x.clone();
                }
            }
            TDim::Max(terms).simplify()
        }
        other => other.clone(),
    }
}

/// Whether `x >= c` for every value of its symbols (each a dim, so `>= 0`): tract's proof, else a
/// linear relaxation where each floor division `a/k` lies in `[a/k - (k-1)/k, a/k]` (real division).
/// `2*((H+3)/4) - (H+1)/2 + 1 >= 1/2`, so that SAME-padding `max(0, ..)` drops.
fn at_least(x: &TDim, c: i64) -> bool {
    if (x.clone() - c).prove_positive_or_zero() {
        return true;
    }
    let Some(b) = Linear::bound(x, true) else { return false };
    // Every symbol's coefficient non-negative: the bound is at least its constant.
    b.coefs.values().all(|&(n, _)| n >= 0) && {
        let (n, d) = b.constant;
        // x is an integer >= n/d, so x >= c when n/d > c - 1.
        n > (i128::from(c) - 1) * d
    }
}

/// A linear form over symbols with rational coefficients `(numerator, denominator > 0)`.
struct Linear {
    coefs: std::collections::HashMap<tract_onnx::prelude::Symbol, (i128, i128)>,
    constant: (i128, i128),
}

impl Linear {
    fn add_frac(a: (i128, i128), b: (i128, i128)) -> Option<(i128, i128)> {
        let n = a.0.checked_mul(b.1)?.checked_add(b.0.checked_mul(a.1)?)?;
        let d = a.1.checked_mul(b.1)?;
        let g = gcd_i128(n.abs(), d).max(1);
        Some((n / g, d / g))
    }

    fn scale(self, n: i128, d: i128) -> Option<Linear> {
        let s = |f: (i128, i128)| -> Option<(i128, i128)> {
            let (a, b) = (f.0.checked_mul(n)?, f.1.checked_mul(d)?);
            let g = gcd_i128(a.abs(), b).max(1);
            Some((a / g, b / g))
        };
        Some(Linear {
            coefs: self.coefs.into_iter().map(|(k, v)| s(v).map(|v| (k, v))).collect::<Option<_>>()?,
            constant: s(self.constant)?,
        })
    }

    fn plus(mut self, o: Linear) -> Option<Linear> {
        for (k, v) in o.coefs {
            let cur = self.coefs.get(&k).copied().unwrap_or((0, 1));
            self.coefs.insert(k, Linear::add_frac(cur, v)?);
        }
        self.constant = Linear::add_frac(self.constant, o.constant)?;
        Some(self)
    }

    /// A lower (`low`) or upper bound of `d` as a linear form, if `d` is linear in its symbols and
    /// floor divisions.
    fn bound(d: &TDim, low: bool) -> Option<Linear> {
        Some(match d {
            TDim::Val(v) => Linear { coefs: Default::default(), constant: (i128::from(*v), 1) },
            TDim::Sym(s) => Linear { coefs: [(s.clone(), (1, 1))].into_iter().collect(), constant: (0, 1) },
            TDim::Add(terms) => {
                let mut acc = Linear { coefs: Default::default(), constant: (0, 1) };
                for t in terms {
                    acc = acc.plus(Linear::bound(t, low)?)?;
                }
                acc
            }
            TDim::MulInt(k, x) => {
                let inner = Linear::bound(x, if *k >= 0 { low } else { !low })?;
                inner.scale(i128::from(*k), 1)?
            }
            // max(c, ..) >= c and min(c, ..) <= c: a constant term bounds it on that side.
            TDim::Max(terms) | TDim::Min(terms) if low == matches!(d, TDim::Max(_)) => {
                let c = terms.iter().find_map(TDim::as_i64)?;
                Linear { coefs: Default::default(), constant: (i128::from(c), 1) }
            }
            TDim::Div(a, k) => {
                let k = i128::from(*k);
                let inner = Linear::bound(a, low)?.scale(1, k)?;
                if low {
                    inner.plus(Linear { coefs: Default::default(), constant: (-(k - 1), k) })?
                } else {
                    inner
                }
            }
            _ => return None,
        })
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

fn gcd_i128(a: i128, b: i128) -> i128 {
    if b == 0 {
        a
    } else {
        gcd_i128(b, a % b)
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
            assert_eq!(crate::symbolic::eval_exact(&r, &v), Some(q % 4), "{r} at H={h}");
            assert_eq!(crate::symbolic::eval_exact(&pad, &v), Some((4 - q % 4) % 4), "{pad} at H={h}");
        }
    }

    #[test]
    fn the_two_parts_of_a_cut_axis_add_up_to_the_axis() {
        let s = SymbolScope::default().with_assertion("H>=0").unwrap();
        let p = (TDim::Sym(s.sym("H")) + 12) / 16 * 4;
        let sum = p.clone().min_with(&TDim::Val(2)) + (p.clone() - 2).max_with(&TDim::Val(0));
        assert_eq!(tidy(&sum), p);
        assert_eq!(tidy(&(sum + 3)), p + 3);
        // SAME padding: H + max(0, 2*((H+1)/2) - H + 1) is 2*((H+1)/2) + 1.
        let h = TDim::Sym(s.sym("H"));
        let pad = (h.clone().div_ceil(2) * 2 - h.clone() + 1).max_with(&TDim::Val(0));
        assert_eq!(tidy(&pad), (h.clone().div_ceil(2) * 2 - h.clone() + 1).simplify());
        let x = h.clone().div_ceil(2);
        let pad2 = (x.clone().div_ceil(2) * 2 - x.clone() + 1).max_with(&TDim::Val(0));
        assert!(!matches!(tidy(&pad2), TDim::Max(_)), "{}", tidy(&pad2));
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
        // wav2vec2's GroupNorm: [batch, 32, samples/5-1] reshaped to [0, 32, -1].
        let samples = TDim::Sym(s.sym("samples"));
        let t = (samples.clone() / 5 - 1).simplify();
        let volume = (b.clone() * 32 * t.clone()).simplify();
        assert_eq!(divide_exact(&volume, &(b.clone() * 32).simplify()), Some(t.clone()));
        assert_eq!(divide_exact(&(volume.clone() + 1).simplify(), &(b.clone() * 32).simplify()), None);
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
        // Nested quotients, which tract's simplifier writes one way or the other, print one way.
        let w = TDim::Sym(s.sym("width"));
        let nested = TDim::Div(Box::new(TDim::Add(vec![TDim::Div(Box::new(w.clone()), 4), TDim::Val(1)])), 2);
        assert_eq!(format_dim(&nested), "(width+4)/8");
        assert_eq!(format_dim(&((w.clone() + 4) / 8)), "(width+4)/8");
        let h = TDim::Sym(s.sym("H"));
        assert_eq!(format_dim(&(h.clone().div_ceil(32) * 2)), "2*((H+31)/32)");
        assert_eq!(format_dim(&(h.clone().div_ceil(8) * h.clone().div_ceil(8))), "((H+7)/8)*((H+7)/8)");
        assert_eq!(format_dim(&(TDim::Val(1) - h.clone().div_ceil(2))), "-((H+1)/2)+1");
    }
}
