//! [`Dim`]: the integer type a view is computed in, either a concrete `i64` or a symbolic tract `TDim`.
//!
//! Views and front ends are written once, generically, over this trait. Arithmetic is checked: on `i64`
//! an overflow is `None`, never a wrap; on `TDim` two known values are combined with checked arithmetic
//! too, and symbolic terms build an expression (simplified by tract).

use std::fmt::{Debug, Display};
use tract_onnx::prelude::TDim;

/// An integer that is either known (`i64`) or a symbolic expression (`TDim`).
pub trait Dim: Clone + Debug + Display + PartialEq + Send + Sync + 'static {
    /// The dim holding the known value `v`.
    fn from_i64(v: i64) -> Self;
    /// The known value, if there is one.
    fn as_i64(&self) -> Option<i64>;
    /// `self + other`, `None` on overflow.
    fn checked_add(&self, other: &Self) -> Option<Self>;
    /// `self - other`, `None` on overflow.
    fn checked_sub(&self, other: &Self) -> Option<Self>;
    /// `self * other`, `None` on overflow.
    fn checked_mul(&self, other: &Self) -> Option<Self>;
    /// `min(self, other)`.
    fn min_with(&self, other: &Self) -> Self;
    /// `max(self, other)`.
    fn max_with(&self, other: &Self) -> Self;
    /// `ceil(self / k)` for `self >= 0` and `k >= 1`.
    fn div_ceil_by(&self, k: u64) -> Self;
    /// The dim a tract `TDim` denotes here, if it can be one (a symbolic `TDim` is not an `i64`).
    fn from_tdim(d: &TDim) -> Option<Self>;

    /// Whether the value is known to be `v`.
    fn is(&self, v: i64) -> bool {
        self.as_i64() == Some(v)
    }
}

impl Dim for i64 {
    fn from_i64(v: i64) -> Self {
        v
    }
    fn from_tdim(d: &TDim) -> Option<Self> {
        d.as_i64()
    }
    fn as_i64(&self) -> Option<i64> {
        Some(*self)
    }
    fn checked_add(&self, other: &Self) -> Option<Self> {
        i64::checked_add(*self, *other)
    }
    fn checked_sub(&self, other: &Self) -> Option<Self> {
        i64::checked_sub(*self, *other)
    }
    fn checked_mul(&self, other: &Self) -> Option<Self> {
        i64::checked_mul(*self, *other)
    }
    fn min_with(&self, other: &Self) -> Self {
        (*self).min(*other)
    }
    fn max_with(&self, other: &Self) -> Self {
        (*self).max(*other)
    }
    fn div_ceil_by(&self, k: u64) -> Self {
        // In i128 so that neither `self + k - 1` nor a huge `k` can overflow; the quotient of a
        // non-negative i64 by k >= 1 fits back in i64.
        let k = i128::from(k.max(1));
        ((i128::from(*self) + k - 1).div_euclid(k)) as i64
    }
}

impl Dim for TDim {
    fn from_i64(v: i64) -> Self {
        TDim::Val(v)
    }
    fn from_tdim(d: &TDim) -> Option<Self> {
        Some(d.clone())
    }
    fn as_i64(&self) -> Option<i64> {
        TDim::as_i64(self)
    }
    fn checked_add(&self, other: &Self) -> Option<Self> {
        match (self, other) {
            (TDim::Val(a), TDim::Val(b)) => i64::checked_add(*a, *b).map(TDim::Val),
            _ => Some(self.clone() + other),
        }
    }
    fn checked_sub(&self, other: &Self) -> Option<Self> {
        match (self, other) {
            (TDim::Val(a), TDim::Val(b)) => i64::checked_sub(*a, *b).map(TDim::Val),
            _ => Some(self.clone() - other),
        }
    }
    fn checked_mul(&self, other: &Self) -> Option<Self> {
        match (self, other) {
            (TDim::Val(a), TDim::Val(b)) => i64::checked_mul(*a, *b).map(TDim::Val),
            _ => Some(self.clone() * other),
        }
    }
    fn min_with(&self, other: &Self) -> Self {
        match (self, other) {
            (TDim::Val(a), TDim::Val(b)) => TDim::Val(*a.min(b)),
            _ if self == other => self.clone(),
            _ => TDim::Min(vec![self.clone(), other.clone()]).simplify(),
        }
    }
    fn max_with(&self, other: &Self) -> Self {
        match (self, other) {
            (TDim::Val(a), TDim::Val(b)) => TDim::Val(*a.max(b)),
            _ if self == other => self.clone(),
            // max(0, max(0, a) + c) = max(0, a + c) when c <= 0: a slice of a slice stays one `max`
            // deep instead of nesting (tract's simplifier is exponential in the nesting).
            (TDim::Val(0), e) | (e, TDim::Val(0)) if peel_clamped(e).is_some() => {
                let (a, c) = peel_clamped(e).expect("checked");
                TDim::Max(vec![TDim::Val(0), a + c]).simplify()
            }
            _ => TDim::Max(vec![self.clone(), other.clone()]).simplify(),
        }
    }
    fn div_ceil_by(&self, k: u64) -> Self {
        match self {
            TDim::Val(v) => TDim::Val(v.div_ceil_by(k)),
            _ if k == 1 => self.clone(),
            // A symbolic length is below 2^62 (see `semantics::range`), so with k beyond that the quotient
            // is 0 or 1; this also keeps k - 1 within i64 for tract.
            _ if k > 1 << 62 => self.min_with(&TDim::Val(1)),
            _ => self.clone().div_ceil(k).simplify(),
        }
    }
}

/// `(a, c)` when `e` is `max(0, a) + c` with `c <= 0`.
fn peel_clamped(e: &TDim) -> Option<(TDim, i64)> {
    let TDim::Add(terms) = e else { return None };
    let [x, y] = &terms[..] else { return None };
    let (clamped, c) = match (x, y) {
        (TDim::Val(c), m) | (m, TDim::Val(c)) if *c <= 0 => (m, *c),
        _ => return None,
    };
    let TDim::Max(inner) = clamped else { return None };
    let [p, q] = &inner[..] else { return None };
    match (p, q) {
        (TDim::Val(0), a) | (a, TDim::Val(0)) => Some((a.clone(), c)),
        _ => None,
    }
}
