//! [`Poly`]: a cost figure as an exact polynomial over a model's dims.
//!
//! Costs are sums of products of dims (`N*C*H*W*9 + N*C*H*W`). tract's `TDim` holds such sums, but
//! with 64-bit coefficients that wrap; a figure here is kept as a sum of terms, each an integer
//! coefficient (128 bits, checked) times a product of atoms. An atom is a symbol or a dim that is not
//! a polynomial (`(H+1)/2`, `max(0,N-2)`), kept whole. Dims are sizes, never negative, so every atom
//! is at least 0: a polynomial whose coefficients are all at least 0 is at least 0 wherever the model
//! can run, which is how [`Poly::dominates`] compares two figures without assumptions.

use super::CostError;
use crate::dims::format_dim;
use std::collections::{BTreeMap, HashMap};
use tract_onnx::prelude::*;

/// The most terms one figure may hold: a figure past it comes from dims no real model has (sums of
/// many symbols multiplied together) and is refused rather than expanded without end.
pub(crate) const MAX_TERMS: usize = 4096;

/// A sum of `coefficient * atom * atom * ...` terms, exact.
///
/// A figure keeps the symbol scope of its dims alive, so its symbols keep their names after the
/// model that made them is gone.
#[derive(Clone, Debug, Default)]
pub struct Poly {
    /// Terms by their atoms (written out and sorted, so equal products share a key).
    terms: BTreeMap<Vec<String>, Term>,
    scope: Option<SymbolScope>,
}

impl PartialEq for Poly {
    fn eq(&self, other: &Poly) -> bool {
        self.terms == other.terms
    }
}

#[derive(Clone, Debug, PartialEq)]
struct Term {
    atoms: Vec<TDim>,
    coef: i128,
}

impl Poly {
    /// The constant `v`.
    pub fn constant(v: i128) -> Poly {
        let mut p = Poly::default();
        if v != 0 {
            p.terms.insert(vec![], Term { atoms: vec![], coef: v });
        }
        p
    }

    /// Zero.
    pub fn zero() -> Poly {
        Poly::default()
    }

    /// The value, if the figure holds no symbol.
    pub fn as_constant(&self) -> Option<i128> {
        match self.terms.len() {
            0 => Some(0),
            1 => self.terms.get(&vec![]).map(|t| t.coef),
            _ => None,
        }
    }

    /// A dim as a polynomial: sums and products are expanded, anything else is one atom.
    pub fn from_dim(d: &TDim) -> Result<Poly, CostError> {
        Ok(match d {
            TDim::Val(v) => Poly::constant(*v as i128),
            TDim::Add(terms) => {
                let mut sum = Poly::zero();
                for t in terms {
                    sum = sum.add(&Poly::from_dim(t)?)?;
                }
                sum
            }
            TDim::Mul(terms) => {
                let mut product = Poly::constant(1);
                for t in terms {
                    product = product.mul(&Poly::from_dim(t)?)?;
                }
                product
            }
            TDim::MulInt(k, x) => Poly::from_dim(x)?.scale(*k as i128)?,
            _ => Poly::atom(d.clone()),
        })
    }

    fn atom(d: TDim) -> Poly {
        let mut p = Poly { scope: d.find_scope(), ..Poly::default() };
        p.terms.insert(vec![format_dim(&d)], Term { atoms: vec![d], coef: 1 });
        p
    }

    /// The scope of `self`, else `other`'s.
    fn scope_of(&self, other: &Poly) -> Option<SymbolScope> {
        self.scope.clone().or_else(|| other.scope.clone())
    }

    /// The product of dims (a shape's element count), exact.
    pub fn volume(dims: &[TDim]) -> Result<Poly, CostError> {
        let mut v = Poly::constant(1);
        for d in dims {
            v = v.mul(&Poly::from_dim(d)?)?;
        }
        Ok(v)
    }

    /// `self + other`.
    pub fn add(&self, other: &Poly) -> Result<Poly, CostError> {
        let mut sum = self.clone();
        sum.scope = self.scope_of(other);
        for (key, t) in &other.terms {
            sum.add_term(key.clone(), t.atoms.clone(), t.coef)?;
        }
        Ok(sum)
    }

    /// `self - other`.
    pub fn sub(&self, other: &Poly) -> Result<Poly, CostError> {
        self.add(&other.scale(-1)?)
    }

    /// `self * k`.
    pub fn scale(&self, k: i128) -> Result<Poly, CostError> {
        let mut p = Poly { scope: self.scope.clone(), ..Poly::default() };
        for (key, t) in &self.terms {
            p.add_term(key.clone(), t.atoms.clone(), t.coef.checked_mul(k).ok_or(CostError::Overflow)?)?;
        }
        Ok(p)
    }

    /// `self * other`, expanded.
    pub fn mul(&self, other: &Poly) -> Result<Poly, CostError> {
        let mut p = Poly { scope: self.scope_of(other), ..Poly::default() };
        for (ka, a) in &self.terms {
            for (kb, b) in &other.terms {
                let coef = a.coef.checked_mul(b.coef).ok_or(CostError::Overflow)?;
                let mut pairs: Vec<(String, TDim)> = ka
                    .iter()
                    .cloned()
                    .zip(a.atoms.iter().cloned())
                    .chain(kb.iter().cloned().zip(b.atoms.iter().cloned()))
                    .collect();
                pairs.sort_by(|x, y| x.0.cmp(&y.0));
                let (key, atoms): (Vec<String>, Vec<TDim>) = pairs.into_iter().unzip();
                p.add_term(key, atoms, coef)?;
            }
        }
        Ok(p)
    }

    fn add_term(&mut self, key: Vec<String>, atoms: Vec<TDim>, coef: i128) -> Result<(), CostError> {
        if coef == 0 {
            return Ok(());
        }
        match self.terms.get_mut(&key) {
            Some(t) => {
                t.coef = t.coef.checked_add(coef).ok_or(CostError::Overflow)?;
                if t.coef == 0 {
                    self.terms.remove(&key);
                }
            }
            None => {
                if self.terms.len() >= MAX_TERMS {
                    return Err(CostError::TooManyTerms);
                }
                self.terms.insert(key, Term { atoms, coef });
            }
        }
        Ok(())
    }

    /// Whether `self >= other` wherever the model can run: every coefficient of `self - other` is at
    /// least 0 (each atom is a size, at least 0). `false` means "not shown", not "smaller".
    pub fn dominates(&self, other: &Poly) -> bool {
        match self.sub(other) {
            Ok(d) => d.terms.values().all(|t| t.coef >= 0),
            Err(_) => false,
        }
    }

    /// The figure with the symbols of `values` set (by name): a symbol with no value stays, an atom
    /// such as `(H+1)/2` is computed once all its symbols have values.
    pub fn at(&self, values: &HashMap<String, i64>) -> Result<Poly, CostError> {
        let mut out = Poly::zero();
        for t in self.terms.values() {
            let mut term = Poly::constant(t.coef);
            for a in &t.atoms {
                term = term.mul(&atom_at(a, values)?)?;
            }
            out = out.add(&term)?;
        }
        out.scope = out.scope.or_else(|| self.scope.clone());
        Ok(out)
    }

    /// The figure as a dim (a sum of products, not simplified further); an error when a coefficient
    /// does not fit the dim's 64 bits.
    pub fn to_dim(&self) -> Result<TDim, CostError> {
        let mut terms = vec![];
        for t in self.terms.values() {
            let coef = i64::try_from(t.coef).map_err(|_| CostError::Overflow)?;
            let product = match t.atoms.len() {
                0 => TDim::Val(coef),
                _ => {
                    let atoms = if t.atoms.len() == 1 { t.atoms[0].clone() } else { TDim::Mul(t.atoms.clone()) };
                    if coef == 1 {
                        atoms
                    } else {
                        TDim::MulInt(coef, Box::new(atoms))
                    }
                }
            };
            terms.push(product);
        }
        Ok(match terms.len() {
            0 => TDim::Val(0),
            1 => terms.pop().unwrap_or(TDim::Val(0)),
            _ => TDim::Add(terms),
        })
    }
}

impl Poly {
    /// The terms, highest degree first, then by their atoms' text.
    fn ordered(&self) -> Vec<(&Vec<String>, &Term)> {
        let mut terms: Vec<(&Vec<String>, &Term)> = self.terms.iter().collect();
        terms.sort_by(|a, b| b.0.len().cmp(&a.0.len()).then(a.0.cmp(b.0)));
        terms
    }

    /// The terms as `(coefficient, atoms)`, in the order [`Poly::text`] writes them.
    pub fn terms(&self) -> Vec<(i128, &[TDim])> {
        self.ordered().into_iter().map(|(_, t)| (t.coef, t.atoms.as_slice())).collect()
    }

    /// The figure written as a sum of products, highest degree first (`32*N*C+64`), in the dim
    /// grammar `infer` prints and `--input-shape` reads: an atom that is a division is parenthesized
    /// (`18*N*(W/2)`).
    pub fn text(&self) -> String {
        let mut out = String::new();
        for (key, t) in self.ordered() {
            let mut factors: Vec<String> =
                key.iter()
                    .zip(&t.atoms)
                    .map(|(k, a)| {
                        if matches!(a, TDim::Sym(_) | TDim::Min(_) | TDim::Max(_)) {
                            k.clone()
                        } else {
                            format!("({k})")
                        }
                    })
                    .collect();
            let magnitude = t.coef.unsigned_abs();
            if magnitude != 1 || factors.is_empty() {
                factors.insert(0, magnitude.to_string());
            }
            let sign = if t.coef < 0 {
                "-"
            } else if out.is_empty() {
                ""
            } else {
                "+"
            };
            out.push_str(sign);
            out.push_str(&factors.join("*"));
        }
        if out.is_empty() {
            out.push('0');
        }
        out
    }
}

/// One atom at `values`: a symbol with a value becomes it; another atom whose symbols all have values
/// is computed exactly.
fn atom_at(a: &TDim, values: &HashMap<String, i64>) -> Result<Poly, CostError> {
    let symbols = a.symbols();
    let mut bound = HashMap::new();
    for s in &symbols {
        match values.get(&s.to_string()) {
            Some(v) => {
                bound.insert(s.clone(), *v);
            }
            None => return Ok(Poly::atom(a.clone())),
        }
    }
    match crate::symbolic::eval_exact(a, &bound) {
        Some(v) => Ok(Poly::constant(v as i128)),
        None => Err(CostError::Evaluation(format_dim(a))),
    }
}
