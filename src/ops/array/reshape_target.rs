//! What a Reshape's target shape makes of its input's dims: the `0`s and the one `-1` resolved
//! exactly over symbolic dims, and the volume equality the target requires. Shared by the op
//! ([`super::reshape`]) and its shape parameter rule ([`super::reshape_params`]).

use crate::dims::{divide_exact, format_dim};
use tract_onnx::prelude::*;

/// The output's volume and the input's, which a reshape requires equal.
pub(crate) type VolumeEquality = (TDim, TDim);

/// A reshape's output for a known target shape.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Planned {
    /// The output dims; a `-1` that is not an exact expression is `None`.
    pub out: Vec<Option<TDim>>,
    /// Why the `-1` dim is not known, when it is not.
    pub inexact: Option<String>,
    /// The volume equality the target requires, if it holds only under a condition on the inputs.
    pub requires: Option<VolumeEquality>,
}

/// The output of reshaping `input` to `target` (a `0` copies the input's dim unless `allowzero`, one
/// `-1` takes what is left of the volume); an error, in words, for a target that is invalid.
pub(crate) fn plan_reshape(input: &[TDim], target: &[TDim], allowzero: bool) -> Result<Planned, String> {
    let mut out: Vec<TDim> = vec![];
    let mut free = None;
    for (i, d) in target.iter().enumerate() {
        match d.as_i64() {
            Some(0) if !allowzero => out.push(
                input
                    .get(i)
                    .cloned()
                    .ok_or_else(|| format!("target dim {i} is 0 but the input has rank {}", input.len()))?,
            ),
            Some(-1) if free.is_some() => return Err("the target shape has more than one -1".into()),
            Some(-1) if allowzero && target.iter().any(|d| d.as_i64() == Some(0)) => {
                return Err("the target shape has both -1 and 0 with allowzero".into())
            }
            Some(-1) => {
                free = Some(i);
                out.push(TDim::Val(1));
            }
            Some(v) if v < 0 => return Err(format!("target dim {i} is {v}")),
            _ => out.push(d.clone()),
        }
    }
    let volume = |dims: &[TDim]| -> Result<TDim, String> {
        let concrete: Option<Vec<i64>> = dims.iter().map(TDim::as_i64).collect();
        match concrete {
            Some(values) => values
                .iter()
                .try_fold(1i64, |acc, &d| acc.checked_mul(d))
                .map(TDim::Val)
                .ok_or_else(|| format!("the volume of {values:?} overflows")),
            None => Ok(dims.iter().fold(TDim::Val(1), |acc, d| acc * d.clone()).simplify()),
        }
    };
    let vin = volume(input)?;
    if let Some(i) = free {
        let rest = volume(&out)?;
        if let (Some(a), Some(b)) = (vin.as_i64(), rest.as_i64()) {
            if b == 0 {
                return Err("the -1 dim is ambiguous: the other target dims hold no element".into());
            }
            if a % b != 0 {
                return Err(format!("the input has {a} elements, not a multiple of the other target dims' {b}"));
            }
        }
        let mut out: Vec<Option<TDim>> = out.into_iter().map(Some).collect();
        out[i] = divide_exact(&vin, &rest);
        let inexact = out[i].is_none().then(|| {
            format!("the -1 dim is {} / {}, which is not an exact expression", format_dim(&vin), format_dim(&rest))
        });
        return Ok(Planned { out, inexact, requires: None });
    }
    let vout = volume(&out)?;
    let out: Vec<Option<TDim>> = out.into_iter().map(Some).collect();
    let same = vin == vout || (vin.clone() - vout.clone()).simplify().as_i64() == Some(0);
    if same {
        return Ok(Planned { out, inexact: None, requires: None });
    }
    if let (Some(a), Some(b)) = (vin.as_i64(), vout.as_i64()) {
        return Err(format!("the input has {a} elements but the target shape {b}"));
    }
    Ok(Planned { out, inexact: None, requires: Some((vout, vin)) })
}
