//! The random ops: `Bernoulli` (15-22), `RandomUniform`, `RandomNormal` and their `Like` forms
//! (1-22), and `Dropout` in training mode (12-22).
//!
//! A node with a `seed` draws exactly what onnx's reference implementation draws for it: a fresh
//! `numpy.random.RandomState(int(seed))` each time the node runs ([`mt`]), so a seeded node gives the
//! same values on every run. Without a seed the generator is seeded from the system's randomness and
//! the clock each time the node runs, so runs differ. A seed must be a whole number in
//! `[0, 2^32 - 1]` once truncated (what `RandomState` accepts); a float seed is truncated towards
//! zero as Python's `int` does, and NaN means no seed (as in the reference).
//!
//! These ops are not functions of their inputs: they are never evaluated out of a plan, so neither
//! analysis nor `fold` turns them into constants, and `fold` never merges two of them.

pub(crate) mod bernoulli;
pub(crate) mod dropout;
pub(crate) mod mt;
pub(crate) mod sample;

use crate::node::Label;
use mt::LegacyRng;
use tract_onnx::prelude::*;

/// Where a random op's generator starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Seed {
    /// `RandomState(seed)`: the same draws on every run.
    Fixed(u32),
    /// A new seed from the system and the clock on every run.
    Fresh,
}

impl Seed {
    /// A `float` seed attribute, as the reference converts it (`int(seed)`; NaN or absent: none).
    pub(crate) fn of_float(label: &Label, seed: Option<f32>) -> TractResult<Seed> {
        match seed {
            None => Ok(Seed::Fresh),
            Some(s) if s.is_nan() => Ok(Seed::Fresh),
            Some(s) => {
                let t = s.trunc();
                if (0.0..=u32::MAX as f64).contains(&(t as f64)) {
                    Ok(Seed::Fixed(t as u32))
                } else {
                    Err(label.err(format!("seed {s} is outside [0, 2^32-1], the seeds numpy's RandomState takes")))
                }
            }
        }
    }

    /// An `int` seed attribute (Dropout's).
    pub(crate) fn of_int(label: &Label, seed: Option<i64>) -> TractResult<Seed> {
        match seed {
            None => Ok(Seed::Fresh),
            Some(s) => u32::try_from(s).map(Seed::Fixed).map_err(|_| {
                label.err(format!("seed {s} is outside [0, 2^32-1], the seeds numpy's RandomState takes"))
            }),
        }
    }

    /// A generator for one run of the node.
    pub(crate) fn rng(self) -> LegacyRng {
        match self {
            Seed::Fixed(s) => LegacyRng::new(s),
            Seed::Fresh => LegacyRng::new(fresh_seed()),
        }
    }
}

/// 32 bits from the process's random hashing keys (taken from the system) mixed with the clock.
fn fresh_seed() -> u32 {
    use std::hash::{BuildHasher, Hasher};
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos());
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u128(nanos);
    let v = h.finish();
    (v ^ (v >> 32)) as u32
}

/// Whether `dt` is a float type a random op may produce (tract has no bfloat16).
pub(crate) fn is_float_out(dt: DatumType) -> bool {
    matches!(dt, DatumType::F16 | DatumType::F32 | DatumType::F64)
}

/// A tensor of `shape` whose elements are `values` (as `f64`) rounded to the float type `dt`.
pub(crate) fn float_tensor(dt: DatumType, shape: &[usize], values: Vec<f64>) -> TractResult<Tensor> {
    let t = tract_ndarray::ArrayD::from_shape_vec(shape, values)?.into_tensor();
    Ok(t.cast_to_dt(dt)?.into_owned())
}
