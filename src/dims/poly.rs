//! Dims as polynomials: a sum of integer multiples of products of atoms (symbols, and floor
//! divisions, `min`, `max` taken whole, their insides in the same normal form). tract's simplifier
//! does not distribute a product over a sum, so `batch*(M+1)` and `batch+batch*M` stayed different
//! expressions: a Reshape's `-1` over such products was "not exact" and a requirement comparing them
//! was reported though it always holds. [`equal`] compares two dims in this form and [`divide`]
//! divides one by another exactly (long division, every step exact).

use std::collections::BTreeMap;

use tract_onnx::prelude::TDim;

/// The most monomials a polynomial may have (expanding products of sums grows fast).
const MAX_TERMS: usize = 256;

/// A monomial: its atoms' keys, sorted, repeated for powers.
type Mono = Vec<String>;

/// A polynomial: monomial -> coefficient (never 0), with each atom's dim by key.
#[derive(Debug, Clone, Default)]
struct Poly {
    terms: BTreeMap<Mono, i128>,
    atoms: BTreeMap<String, TDim>,
}

impl Poly {
    fn constant(c: i128) -> Poly {
        let mut p = Poly::default();
        if c != 0 {
            p.terms.insert(vec![], c);
        }
        p
    }

    fn atom(d: &TDim, key: String) -> Poly {
        let mut p = Poly::constant(1);
        p.terms = [(vec![key.clone()], 1)].into_iter().collect();
        p.atoms.insert(key, d.clone());
        p
    }

    fn key(&self) -> String {
        let parts: Vec<String> = self.terms.iter().map(|(m, c)| format!("{c}*[{}]", m.join("·"))).collect();
        parts.join("+")
    }

    fn add(mut self, o: &Poly, sign: i128) -> Option<Poly> {
        for (m, c) in &o.terms {
            let v = self.terms.get(m).copied().unwrap_or(0).checked_add(c.checked_mul(sign)?)?;
            if v == 0 {
                self.terms.remove(m);
            } else {
                self.terms.insert(m.clone(), v);
            }
        }
        self.atoms.extend(o.atoms.iter().map(|(k, v)| (k.clone(), v.clone())));
        (self.terms.len() <= MAX_TERMS).then_some(self)
    }

    fn mul(&self, o: &Poly) -> Option<Poly> {
        let mut out = Poly { terms: BTreeMap::new(), atoms: self.atoms.clone() };
        out.atoms.extend(o.atoms.iter().map(|(k, v)| (k.clone(), v.clone())));
        for (ma, ca) in &self.terms {
            for (mb, cb) in &o.terms {
                let mut m: Mono = ma.iter().chain(mb).cloned().collect();
                m.sort();
                let v = out.terms.get(&m).copied().unwrap_or(0).checked_add(ca.checked_mul(*cb)?)?;
                if v == 0 {
                    out.terms.remove(&m);
                } else {
                    out.terms.insert(m, v);
                }
                if out.terms.len() > MAX_TERMS {
                    return None;
                }
            }
        }
        Some(out)
    }

    fn of(d: &TDim) -> Option<Poly> {
        Some(match d {
            TDim::Val(v) => Poly::constant(i128::from(*v)),
            TDim::Sym(s) => Poly::atom(d, format!("{s}")),
            TDim::Add(terms) => {
                let mut acc = Poly::constant(0);
                for t in terms {
                    acc = acc.add(&Poly::of(t)?, 1)?;
                }
                acc
            }
            TDim::Mul(terms) => {
                let mut acc = Poly::constant(1);
                for t in terms {
                    acc = acc.mul(&Poly::of(t)?)?;
                }
                acc
            }
            TDim::MulInt(k, x) => Poly::of(x)?.mul(&Poly::constant(i128::from(*k)))?,
            TDim::Div(x, k) => Poly::atom(d, format!("div({};{k})", Poly::of(x)?.key())),
            TDim::Min(terms) | TDim::Max(terms) => {
                let mut keys = terms.iter().map(|t| Poly::of(t).map(|p| p.key())).collect::<Option<Vec<_>>>()?;
                keys.sort();
                let name = if matches!(d, TDim::Min(_)) { "min" } else { "max" };
                Poly::atom(d, format!("{name}({})", keys.join(";")))
            }
            _ => return None,
        })
    }

    /// Back to a dim.
    fn dim(&self) -> Option<TDim> {
        let mut sum = TDim::Val(0);
        for (m, c) in &self.terms {
            let mut term = TDim::Val(i64::try_from(*c).ok()?);
            for a in m {
                term *= self.atoms.get(a)?.clone();
            }
            sum += term;
        }
        Some(sum.simplify())
    }
}

/// Whether `a` and `b` are the same polynomial (so equal at every value of their symbols).
pub(crate) fn equal(a: &TDim, b: &TDim) -> bool {
    match (Poly::of(a), Poly::of(b)) {
        (Some(a), Some(b)) => a.add(&b, -1).is_some_and(|d| d.terms.is_empty()),
        _ => false,
    }
}

/// `num / den` when the polynomial `den` divides `num` exactly (each step of the long division, in
/// the order of the monomials, divides a coefficient and a monomial exactly).
pub(crate) fn divide(num: &TDim, den: &TDim) -> Option<TDim> {
    let (mut rest, den) = (Poly::of(num)?, Poly::of(den)?);
    let (lead_m, lead_c) = den.terms.iter().next_back().map(|(m, c)| (m.clone(), *c))?;
    let mut q = Poly { terms: BTreeMap::new(), atoms: rest.atoms.clone() };
    q.atoms.extend(den.atoms.iter().map(|(k, v)| (k.clone(), v.clone())));
    for _ in 0..MAX_TERMS {
        let Some((m, c)) = rest.terms.iter().next_back().map(|(m, c)| (m.clone(), *c)) else {
            return q.dim();
        };
        if c % lead_c != 0 {
            return None;
        }
        let mut left = m.clone();
        for a in &lead_m {
            let at = left.iter().position(|x| x == a)?;
            left.remove(at);
        }
        let step = Poly { terms: [(left, c / lead_c)].into_iter().collect(), atoms: q.atoms.clone() };
        rest = rest.add(&step.mul(&den)?, -1)?;
        q = q.add(&step, 1)?;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use tract_onnx::prelude::SymbolScope;

    #[test]
    fn products_of_sums_compare_and_divide() {
        let scope = SymbolScope::default();
        let (b, m, n) = (TDim::Sym(scope.sym("b")), TDim::Sym(scope.sym("m")), TDim::Sym(scope.sym("n")));
        let mx = TDim::Max(vec![TDim::Val(0), (m.clone() + 3) / 4 - 1]);
        // 8*(b + b*M)*(N+1) and 8*b*(M+1)*(N+1)
        let left = TDim::Mul(vec![b.clone() + b.clone() * mx.clone(), n.clone() + 1]) * 8;
        let right = TDim::Mul(vec![b.clone(), mx.clone() + 1, n.clone() + 1]) * 8;
        assert!(equal(&left, &right));
        assert!(!equal(&left, &(right.clone() + 1)));
        let q =
            divide(&(right.clone() * 3), &TDim::Mul(vec![b.clone() + b.clone() * mx.clone(), n.clone() + 1])).unwrap();
        assert_eq!(q, TDim::Val(24));
        let q = divide(&TDim::Mul(vec![right, m.clone()]), &(b.clone() * 2)).unwrap();
        assert!(equal(&q, &(TDim::Mul(vec![mx.clone() + 1, n.clone() + 1, m.clone()]) * 4)));
        assert!(divide(&(b.clone() + 1), &b).is_none());
        assert!(divide(&(b.clone() * 3), &(b * 2)).is_none());
    }
}
