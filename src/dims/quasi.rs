//! Dims of one symbol written in their smallest form.
//!
//! Stacked strided convolutions and SAME paddings leave dims such as
//! `(W-8*((-((W+3)/4)+2*((W+7)/8)+1)/2)-8*((W+3)/4)+24*((W+7)/8)+7)/16`, which is `(W+15)/16`: tract
//! simplifies term by term and cannot see it. A dim built from one symbol `s` with `+`, `*` by an
//! integer, floor division by a positive integer of a non-negative value, and `min`/`max` of terms
//! growing alike is *quasi-linear*: there are a period `p` and a step `k` with
//! `f(s + p) = f(s) + k` for every `s >= 0`. Such an `f` is known exactly by `k` and its values on
//! `0..p`, computed here by following the expression (no sampling), and is then written as
//! `(a*s + b)/q + c` with the smallest `q`.

use tract_onnx::prelude::{Symbol, TDim};

/// Periods longer than this are not followed (the tables would grow with them).
const MAX_PERIOD: u64 = 1 << 12;

/// `f(s) = base[s % p] + step * (s / p)` for `s >= 0`.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Quasi {
    step: i128,
    base: Vec<i128>,
}

impl Quasi {
    fn period(&self) -> u64 {
        self.base.len() as u64
    }

    fn at(&self, s: u64) -> Option<i128> {
        let p = self.period();
        let whole = i128::from(s / p).checked_mul(self.step)?;
        self.base[(s % p) as usize].checked_add(whole)
    }

    fn constant(c: i128) -> Quasi {
        Quasi { step: 0, base: vec![c] }
    }

    /// `self` and `other` over their common period `p`: the values of each on `0..p`, and their steps
    /// over `p`.
    fn aligned(&self, other: &Quasi) -> Option<(Vec<[i128; 2]>, [i128; 2])> {
        let (a, b) = (self.period(), other.period());
        let p = lcm(a, b)?;
        if p > MAX_PERIOD {
            return None;
        }
        let values = (0..p).map(|s| Some([self.at(s)?, other.at(s)?])).collect::<Option<Vec<_>>>()?;
        let ka = self.step.checked_mul(i128::from(p / a))?;
        let kb = other.step.checked_mul(i128::from(p / b))?;
        Some((values, [ka, kb]))
    }

    fn add(&self, other: &Quasi) -> Option<Quasi> {
        let (values, [ka, kb]) = self.aligned(other)?;
        let base = values.iter().map(|[x, y]| x.checked_add(*y)).collect::<Option<_>>()?;
        Some(Quasi { step: ka.checked_add(kb)?, base })
    }

    fn scale(&self, k: i128) -> Option<Quasi> {
        let base = self.base.iter().map(|v| v.checked_mul(k)).collect::<Option<_>>()?;
        Some(Quasi { step: self.step.checked_mul(k)?, base })
    }

    /// `min` or `max`, for two dims growing alike (else the result is not quasi-linear).
    fn extreme(&self, other: &Quasi, max: bool) -> Option<Quasi> {
        let (values, [ka, kb]) = self.aligned(other)?;
        if ka != kb {
            return None;
        }
        let base = values.iter().map(|&[x, y]| if max { x.max(y) } else { x.min(y) }).collect();
        Some(Quasi { step: ka, base })
    }

    /// `floor(self / q)`, for a `self` that is never negative (where floor and truncation agree).
    fn div(&self, q: u64) -> Option<Quasi> {
        let q = i128::from(q);
        if q <= 0 || self.step < 0 || self.base.iter().any(|&v| v < 0) {
            return None;
        }
        // Repeat the period until the step is a multiple of q.
        let m = q / gcd(self.step, q);
        let p = self.period().checked_mul(u64::try_from(m).ok()?)?;
        if p > MAX_PERIOD {
            return None;
        }
        let base = (0..p).map(|s| Some(self.at(s)?.div_euclid(q))).collect::<Option<_>>()?;
        Some(Quasi { step: self.step.checked_mul(m)? / q, base })
    }
}

fn gcd(a: i128, b: i128) -> i128 {
    let (mut a, mut b) = (a.abs(), b.abs());
    while b != 0 {
        (a, b) = (b, a % b);
    }
    a.max(1)
}

fn lcm(a: u64, b: u64) -> Option<u64> {
    let g = gcd(i128::from(a), i128::from(b)) as u64;
    (a / g).checked_mul(b)
}

/// `d` as a quasi-linear function of `s`, if it is one (every symbol in it is `s`).
fn follow(d: &TDim, s: &Symbol) -> Option<Quasi> {
    match d {
        TDim::Val(v) => Some(Quasi::constant(i128::from(*v))),
        TDim::Sym(x) if x == s => Some(Quasi { step: 1, base: vec![0] }),
        TDim::Add(terms) => terms.iter().try_fold(Quasi::constant(0), |acc, t| acc.add(&follow(t, s)?)),
        TDim::MulInt(k, x) => follow(x, s)?.scale(i128::from(*k)),
        TDim::Mul(terms) => {
            let parts = terms.iter().map(|t| follow(t, s)).collect::<Option<Vec<_>>>()?;
            let mut product = Quasi::constant(1);
            for p in parts {
                // A product of two growing dims is not quasi-linear.
                product = match (product.base.as_slice(), product.step, p.base.as_slice(), p.step) {
                    (&[c], 0, _, _) => p.scale(c)?,
                    (_, _, &[c], 0) => product.scale(c)?,
                    _ => return None,
                };
            }
            Some(product)
        }
        TDim::Div(x, q) => follow(x, s)?.div(*q),
        TDim::Max(terms) | TDim::Min(terms) => {
            let max = matches!(d, TDim::Max(_));
            let mut parts = terms.iter().map(|t| follow(t, s));
            let first = parts.next()??;
            parts.try_fold(first, |acc, t| acc.extreme(&t?, max))
        }
        _ => None,
    }
}

/// `f` written as `g*h + r` where `g` divides every change of `f` (`2*((W+15)/16)+1` has steps of 2),
/// with `h` written by [`quotient`].
fn written(f: &Quasi, s: &Symbol) -> Option<TDim> {
    let mut g = f.step;
    let next = f.at(f.period())?;
    let ends = f.base.iter().chain(std::iter::once(&next));
    for (x, y) in f.base.iter().zip(ends.skip(1)) {
        g = gcd(g, y.checked_sub(*x)?);
    }
    if g == 1 {
        return quotient(f, s);
    }
    let r = f.base[0].rem_euclid(g);
    let h = Quasi { step: f.step / g, base: f.base.iter().map(|v| (v - r) / g).collect() };
    let h = quotient(&h, s)?;
    let (g, r) = (i64::try_from(g).ok()?, i64::try_from(r).ok()?);
    Some((TDim::MulInt(g, Box::new(h)) + TDim::Val(r)).simplify())
}

/// The smallest `(a*s + b)/q + c` (`0 <= b < q`) equal to `f` for every `s >= 0`.
fn quotient(f: &Quasi, s: &Symbol) -> Option<TDim> {
    let p = i128::from(f.period());
    // The slope is step/p = a/q: q is a multiple of the reduced denominator, up to p.
    // (At most 32 multiples are tried, which bounds the work at 32 periods.)
    let q0 = p / gcd(f.step, p);
    for q in (1..=32).map(|k| q0 * k).take_while(|&q| q <= p) {
        let a = f.step.checked_mul(q)? / p;
        if a < 0 && q > 1 {
            // A numerator that turns negative: floor and truncation would differ there.
            return None;
        }
        // floor((a*i + b)/q) = f(i) for each i in 0..p: q*f(i) - a*i <= b <= q*f(i) - a*i + q - 1.
        let (mut lo, mut hi) = (i128::MIN, i128::MAX);
        for (i, &v) in f.base.iter().enumerate() {
            let t = v.checked_mul(q)?.checked_sub(a.checked_mul(i as i128)?)?;
            lo = lo.max(t);
            hi = hi.min(t.checked_add(q - 1)?);
        }
        if lo <= hi {
            let (c, b) = (lo.div_euclid(q), lo.rem_euclid(q));
            let (a, b, c) = (i64::try_from(a).ok()?, i64::try_from(b).ok()?, i64::try_from(c).ok()?);
            let linear = TDim::MulInt(a, Box::new(TDim::Sym(s.clone()))) + TDim::Val(b);
            let quotient = if q == 1 { linear } else { TDim::Div(Box::new(linear.simplify()), q as u64) };
            return Some((quotient + TDim::Val(c)).simplify());
        }
    }
    None
}

/// `d` with each part that depends on one symbol only, and holds a quotient, a `min` or a `max`,
/// written in its smallest quasi-linear form; anything else is kept as it is.
pub(crate) fn smallest(d: &TDim) -> TDim {
    rewritten(d).unwrap_or_else(|| d.clone())
}

/// [`smallest`], `None` when nothing changes.
fn rewritten(d: &TDim) -> Option<TDim> {
    let symbols = d.symbols();
    if symbols.len() == 1 && has_structure(d) {
        let s = symbols.into_iter().next().expect("one symbol");
        if let Some(w) = follow(d, &s).and_then(|f| written(&f, &s)) {
            return Some(w);
        }
    }
    let parts = |t: &[TDim]| -> Option<Vec<TDim>> {
        let new: Vec<Option<TDim>> = t.iter().map(rewritten).collect();
        new.iter()
            .any(Option::is_some)
            .then(|| new.into_iter().zip(t).map(|(n, o)| n.unwrap_or_else(|| o.clone())).collect())
    };
    Some(
        match d {
            TDim::Add(t) => TDim::Add(parts(t)?),
            TDim::Mul(t) => TDim::Mul(parts(t)?),
            TDim::Min(t) => TDim::Min(parts(t)?),
            TDim::Max(t) => TDim::Max(parts(t)?),
            TDim::MulInt(k, x) => TDim::MulInt(*k, Box::new(rewritten(x)?)),
            _ => return None,
        }
        .simplify(),
    )
}

/// Whether `d` holds a quotient, a `min` or a `max` (else tract's own form is already the smallest).
fn has_structure(d: &TDim) -> bool {
    match d {
        TDim::Div(..) | TDim::Min(_) | TDim::Max(_) => true,
        TDim::Add(t) | TDim::Mul(t) => t.iter().any(has_structure),
        TDim::MulInt(_, x) => has_structure(x),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tract_onnx::prelude::SymbolScope;

    fn w() -> (SymbolScope, TDim) {
        let scope = SymbolScope::default();
        let w = TDim::Sym(scope.sym("W"));
        (scope, w)
    }

    #[test]
    fn stacked_same_paddings_become_one_quotient() {
        let (_scope, w) = w();
        // Four stride-2 3-wide convolutions with TF's SAME padding, each step simplified by tract
        // only: pad `max(0, (ceil(d/2)-1)*2 + 3 - d)`, then `(d + pad - 3)/2 + 1`, which is `ceil(d/2)`.
        let stage = |d: &TDim| {
            let pad = TDim::Max(vec![TDim::Val(0), (((d.clone() + 1) / 2 - 1) * 2 + 3 - d.clone()).simplify()]);
            ((d.clone() + pad - 3) / 2 + 1).simplify()
        };
        let two = stage(&stage(&w));
        assert_ne!(crate::dims::format_raw(&two), "(W+3)/4");
        assert_eq!(crate::dims::format_dim(&smallest(&two)), "(W+3)/4");
        // As analysis does it, each stage written small before the next (tract's simplifier takes
        // exponential time on the stacked raw forms).
        let mut d = w.clone();
        for _ in 0..4 {
            d = smallest(&stage(&d));
        }
        assert_eq!(crate::dims::format_dim(&d), "(W+15)/16");
    }

    #[test]
    fn clipped_pads_and_constant_offsets() {
        let (_scope, w) = w();
        // max(0, (ceil(W/2)-1)*2 + 3 - W): SAME padding of a 3-wide stride-2 window, 2 or 1.
        let pad = TDim::Max(vec![TDim::Val(0), (((w.clone() + 1) / 2 - 1) * 2 + 3 - w.clone()).simplify()]);
        assert_eq!(crate::dims::format_dim(&smallest(&(w.clone() + pad))), "2*((W+1)/2)+1");
        let padded = ((w.clone() + ((w.clone() + 15) / 16) * 16 + 15) / 16 + 1).simplify();
        assert_eq!(crate::dims::format_dim(&smallest(&padded)), "2*((W+15)/16)+1");
        assert_eq!(crate::dims::format_dim(&smallest(&(w.clone() / 2 - 1).simplify())), "W/2-1");
        assert_eq!(crate::dims::format_dim(&smallest(&((w.clone() * 3 + 5) / 2).simplify())), "(3*W+1)/2+2");
    }

    #[test]
    fn what_is_not_quasi_linear_is_kept() {
        let (scope, w) = w();
        let h = TDim::Sym(scope.sym("H"));
        let product = ((w.clone() * w.clone()) / 2).simplify();
        assert_eq!(smallest(&product), product);
        let two = ((w.clone() + h.clone()) / 2).simplify();
        assert_eq!(smallest(&two), two);
        // Parts in one symbol each are written each in their smallest form.
        let q = ((w.clone() / 2 + 1) / 2).simplify();
        let sum = (q + h.clone()).simplify();
        // (tract's simplification may order the terms of the sum either way from run to run, and
        // from run to run brings `H` inside the quotient or leaves it outside.)
        let text = crate::dims::format_dim(&smallest(&sum));
        let sorted = |inner: &str| {
            let mut terms: Vec<String> = inner.split('+').map(str::to_string).collect();
            terms.sort_unstable();
            terms
        };
        let quotient = |t: &str| t.strip_prefix('(').and_then(|t| t.strip_suffix(")/4")).map(sorted);
        let outside = text.strip_prefix("H+").or_else(|| text.strip_suffix("+H")).and_then(quotient);
        match (quotient(&text), outside) {
            (Some(terms), _) if terms == ["2", "4*H", "W"] => {}
            (_, Some(terms)) if terms == ["2", "W"] => {}
            _ => panic!("{text}"),
        }
        // A numerator that can be negative is not followed (floor and truncation differ there).
        let neg = ((w.clone() - 5) / 2).simplify();
        assert_eq!(smallest(&neg), neg);
        // min of dims growing at different rates.
        let m = TDim::Min(vec![w.clone(), TDim::Val(3)]);
        assert_eq!(smallest(&m), m);
    }

    #[test]
    fn every_form_written_has_the_values_of_the_dim() {
        let (_scope, w) = w();
        let s = match &w {
            TDim::Sym(s) => s.clone(),
            _ => unreachable!(),
        };
        let cases = [
            ((w.clone() + 7) / 8 * 3 + (w.clone() + 1) / 2).simplify(),
            TDim::Max(vec![(w.clone() / 3).simplify(), ((w.clone() + 2) / 3 - 1).simplify()]),
            ((w.clone() * 5 + 9) / 6 * 2 + 4).simplify(),
        ];
        for d in cases {
            let f = follow(&d, &s).expect("quasi-linear");
            let e = smallest(&d);
            for v in 0..200u64 {
                let values = std::collections::HashMap::from([(s.clone(), v as i64)]);
                let expected = crate::symbolic::eval_exact(&d, &values).map(i128::from);
                assert_eq!(f.at(v), expected, "{d} at {v}");
                assert_eq!(crate::symbolic::eval_exact(&e, &values), expected.map(|x| x as i64), "{e} at {v}");
            }
        }
    }
}
