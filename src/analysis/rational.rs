//! Shape arithmetic done in floating point, followed symbolically.
//!
//! Exporters compute sizes in floats: EfficientNet's SAME padding is
//! `max((ceil(H / s) - 1) * s + k - H, 0) / 2` over `Cast(H, float)`, Paddle's upsampling multiplies a
//! cast height by `2.0`. A float tensor cannot hold a symbolic dim, so tract loses such values and
//! every size after them. While analysing, a float value computed from dims is followed here as an
//! exact rational `num / den` (a dim expression over a positive integer), through the operators such
//! computations use; a cast back to an integer gives a dim again (`floor` of a non-negative value,
//! which is what truncation gives). Only exact steps are taken: a float constant that is not a small
//! dyadic rational, a division by a symbolic value, or a value whose sign cannot be proved stops the
//! tracking (the result is then unknown, as before).

use tract_onnx::prelude::*;

/// An exact rational `num / den`, `den >= 1`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Rat {
    /// The numerator, a dim expression.
    pub num: TDim,
    /// The denominator.
    pub den: i64,
}

impl Rat {
    fn int(d: TDim) -> Rat {
        Rat { num: d, den: 1 }
    }

    /// A float as an exact rational with a power-of-two denominator up to 2^20.
    fn of_float(f: f64) -> Option<Rat> {
        if !f.is_finite() {
            return None;
        }
        for k in 0..=20 {
            let scaled = f * f64::from(1u32 << k);
            if scaled.fract() == 0.0 && scaled.abs() < 9.0e15 {
                return Some(Rat { num: TDim::Val(scaled as i64), den: 1 << k });
            }
        }
        None
    }

    /// Both over a common denominator.
    fn common(a: &Rat, b: &Rat) -> Option<(TDim, TDim, i64)> {
        let den = a.den.checked_mul(b.den)?;
        Some((a.num.clone() * b.den, b.num.clone() * a.den, den))
    }

    fn add(&self, o: &Rat) -> Option<Rat> {
        let (x, y, den) = Rat::common(self, o)?;
        Some(Rat { num: (x + y).simplify(), den }.reduced())
    }

    fn sub(&self, o: &Rat) -> Option<Rat> {
        let (x, y, den) = Rat::common(self, o)?;
        Some(Rat { num: (x - y).simplify(), den }.reduced())
    }

    fn mul(&self, o: &Rat) -> Option<Rat> {
        if self.num.as_i64().is_none() && o.num.as_i64().is_none() {
            return None;
        }
        Some(Rat { num: (self.num.clone() * o.num.clone()).simplify(), den: self.den.checked_mul(o.den)? }.reduced())
    }

    fn div(&self, o: &Rat) -> Option<Rat> {
        let p = o.num.as_i64()?;
        if p == 0 {
            return None;
        }
        let (num, p) = if p < 0 { (self.num.clone() * -1, -p) } else { (self.num.clone(), p) };
        Some(Rat { num: (num * o.den).simplify(), den: self.den.checked_mul(p)? }.reduced())
    }

    fn extreme(&self, o: &Rat, max: bool) -> Option<Rat> {
        let (x, y, den) = Rat::common(self, o)?;
        let num = if max { TDim::Max(vec![x, y]) } else { TDim::Min(vec![x, y]) };
        Some(Rat { num: num.simplify(), den }.reduced())
    }

    /// `floor(self)`, for a numerator that is provably non-negative.
    fn floor(&self, dims: &Dims) -> Option<TDim> {
        if self.den == 1 {
            return Some(self.num.clone());
        }
        non_negative(&self.num, dims).then(|| (self.num.clone() / self.den as u64).simplify())
    }

    /// `ceil(self)`, for a numerator that is provably non-negative.
    fn ceil(&self, dims: &Dims) -> Option<TDim> {
        if self.den == 1 {
            return Some(self.num.clone());
        }
        non_negative(&self.num, dims).then(|| self.num.clone().div_ceil(self.den as u64).simplify())
    }

    /// The same value with the denominator's common factor with every coefficient removed.
    fn reduced(self) -> Rat {
        let g = gcd(self.num.gcd(), self.den as u64).max(1);
        if g == 1 {
            return self;
        }
        match self.num.clone() / g {
            num if num.clone() * g as i64 == self.num => Rat { num, den: self.den / g as i64 },
            _ => self,
        }
    }
}

/// Which dim expressions are known to be non-negative because some tensor of the model has them as
/// a dim (a size is never negative, however tract writes it: `(W-8*((W+3)/4)+...)/16` is one).
pub(super) type Dims = crate::dims::DimSet;

/// Whether `d >= 0` for every value of its symbols: a dim of some tensor, tract's proof, or a `max`
/// with a non-negative term (a `Clip` at 0), a `min` or sum of non-negative terms.
fn non_negative(d: &TDim, dims: &Dims) -> bool {
    if dims.contains(d) {
        return true;
    }
    match d {
        TDim::Max(terms) => terms.iter().any(|t| non_negative(t, dims)),
        TDim::Min(terms) | TDim::Add(terms) | TDim::Mul(terms) => terms.iter().all(|t| non_negative(t, dims)),
        TDim::MulInt(k, x) => *k >= 0 && non_negative(x, dims),
        TDim::Div(x, _) => non_negative(x, dims),
        other => other.prove_positive_or_zero(),
    }
}

fn gcd(a: u64, b: u64) -> u64 {
    if b == 0 {
        a
    } else {
        gcd(b, a % b)
    }
}

/// A 0-D or 1-D value: its shape and elements.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Rats {
    /// `[]` or `[n]`.
    pub shape: Vec<usize>,
    /// The elements.
    pub values: Vec<Rat>,
}

impl Rats {
    /// The rationals of a constant tensor (integers, dims or floats), if it is 0-D or 1-D.
    pub(crate) fn of_tensor(t: &Tensor) -> Option<Rats> {
        if t.rank() > 1 || t.len() > 64 {
            return None;
        }
        let values = if t.datum_type().is_float() {
            let f = t.cast_to::<f64>().ok()?;
            f.try_as_plain_ram()
                .ok()?
                .as_slice::<f64>()
                .ok()?
                .iter()
                .map(|&v| Rat::of_float(v))
                .collect::<Option<Vec<_>>>()?
        } else if t.datum_type().is_integer() || t.datum_type().is_tdim() {
            crate::dims::dims_of(t).ok()?.into_iter().map(Rat::int).collect()
        } else {
            return None;
        };
        Some(Rats { shape: t.shape().to_vec(), values })
    }

    fn zip(&self, o: &Rats, f: impl Fn(&Rat, &Rat) -> Option<Rat>) -> Option<Rats> {
        let n = self.values.len().max(o.values.len());
        if self.values.len() != n && self.values.len() != 1 || o.values.len() != n && o.values.len() != 1 {
            return None;
        }
        fn at(r: &Rats, i: usize) -> &Rat {
            if r.values.len() == 1 {
                &r.values[0]
            } else {
                &r.values[i]
            }
        }
        let values = (0..n).map(|i| f(at(self, i), at(o, i))).collect::<Option<Vec<_>>>()?;
        let shape = if self.shape.len() >= o.shape.len() { self.shape.clone() } else { o.shape.clone() };
        Some(Rats { shape: if values.len() == n && !shape.is_empty() { vec![n] } else { shape }, values })
    }

    /// The integers these are cast to (truncation, which is `floor` for the non-negative values shape
    /// arithmetic computes), as a dims tensor.
    pub(crate) fn to_dims(&self, known: &Dims) -> Option<Tensor> {
        let dims: Vec<TDim> = self.values.iter().map(|r| r.floor(known)).collect::<Option<_>>()?;
        tract_ndarray::ArrayD::from_shape_vec(self.shape.clone(), dims).ok().map(|a| a.into_tensor())
    }
}

/// One input of a node, as this analysis sees it.
#[derive(Debug, Clone)]
pub(crate) enum Arg {
    /// The ONNX node leaves this optional input out.
    Absent,
    /// A value not followed here.
    Unknown,
    /// A value followed here.
    Known(Rats),
}

/// What an operator computes over rational inputs, for the operators float shape arithmetic uses.
/// `args` are the node's inputs in ONNX order; `attr_f` reads a float attribute, `attr_i` an int one;
/// `dims` tells the expressions that are some tensor's dim.
pub(super) fn eval(
    op_type: &str,
    args: &[Arg],
    attr_f: &dyn Fn(&str) -> Option<f32>,
    attr_i: &dyn Fn(&str) -> Option<i64>,
    dims: &Dims,
) -> Option<Rats> {
    let get = |i: usize| match args.get(i) {
        Some(Arg::Known(r)) => Some(r.clone()),
        _ => None,
    };
    let unary = |f: &dyn Fn(&Rat) -> Option<Rat>| -> Option<Rats> {
        let a = get(0)?;
        Some(Rats { shape: a.shape.clone(), values: a.values.iter().map(f).collect::<Option<_>>()? })
    };
    let all =
        || args.iter().map(|a| if let Arg::Known(r) = a { Some(r.clone()) } else { None }).collect::<Option<Vec<_>>>();
    match op_type {
        "Add" => get(0)?.zip(&get(1)?, Rat::add),
        "Sub" => get(0)?.zip(&get(1)?, Rat::sub),
        "Mul" => get(0)?.zip(&get(1)?, Rat::mul),
        "Div" => get(0)?.zip(&get(1)?, Rat::div),
        "Max" | "Min" => {
            let max = op_type == "Max";
            let mut parts = all()?.into_iter();
            let first = parts.next()?;
            parts.try_fold(first, |acc, r| acc.zip(&r, |a, b| a.extreme(b, max)))
        }
        "Neg" => unary(&|r| Some(Rat { num: (r.num.clone() * -1).simplify(), den: r.den })),
        "Floor" => unary(&|r| r.floor(dims).map(Rat::int)),
        "Ceil" => unary(&|r| r.ceil(dims).map(Rat::int)),
        "Identity" | "Squeeze" | "Unsqueeze" | "Reshape" | "Flatten" => {
            let a = get(0)?;
            let n = a.values.len();
            // Only 0-D <-> [1] <-> [n] changes are followed, which is what these do to shape values.
            Some(Rats { shape: if n == 1 && op_type == "Squeeze" { vec![] } else { vec![n] }, values: a.values })
        }
        "Clip" => {
            let mut x = get(0)?;
            for (i, name, max) in [(1, "min", true), (2, "max", false)] {
                let bound = match args.get(i) {
                    None | Some(Arg::Absent) => match attr_f(name) {
                        Some(v) => Some(Rats { shape: vec![], values: vec![Rat::of_float(f64::from(v))?] }),
                        None => None,
                    },
                    Some(Arg::Unknown) => return None,
                    Some(Arg::Known(r)) => Some(r.clone()),
                };
                if let Some(b) = bound {
                    x = x.zip(&b, |a, b| a.extreme(b, max))?;
                }
            }
            Some(x)
        }
        // torchvision's batch of image sizes: the largest height and width over a vector of dims.
        // Only a reduction over the whole of a vector (or scalar) with `axes` not given as an input.
        "ReduceMax" | "ReduceMin" if args.len() == 1 || matches!(args.get(1), Some(Arg::Absent)) => {
            let a = get(0)?;
            if a.shape.len() > 1 {
                return None;
            }
            let max = op_type == "ReduceMax";
            let mut values = a.values.iter();
            let first = values.next()?.clone();
            let value = values.try_fold(first, |acc, r| acc.extreme(r, max))?;
            let keep = attr_i("keepdims").unwrap_or(1) != 0 && !a.shape.is_empty();
            Some(Rats { shape: if keep { vec![1] } else { vec![] }, values: vec![value] })
        }
        "Concat" => {
            let parts = all()?;
            if parts.iter().any(|p| p.shape.len() != 1) {
                return None;
            }
            let values: Vec<Rat> = parts.into_iter().flat_map(|p| p.values).collect();
            Some(Rats { shape: vec![values.len()], values })
        }
        "Gather" if attr_i("axis").unwrap_or(0) == 0 => {
            let a = get(0)?;
            let index = get(1)?;
            let n = a.values.len() as i64;
            let picked = index
                .values
                .iter()
                .map(|i| {
                    let i = i.num.as_i64().filter(|_| i.den == 1)?;
                    let i = if i < 0 { i + n } else { i };
                    a.values.get(usize::try_from(i).ok()?).cloned()
                })
                .collect::<Option<Vec<_>>>()?;
            Some(Rats { shape: index.shape.clone(), values: picked })
        }
        _ => None,
    }
}
