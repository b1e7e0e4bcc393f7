//! Resolving one `start:end:step` against an axis of size `d`: the clamping rules every front end shares.
//!
//! Two rules exist and differ in exactly one case:
//! - [`Clamp::Python`] (numpy, TensorFlow, MindSpore, MXNet): `slice.indices(d)`. With a negative step,
//!   a start below `-d` clamps to "before index 0", so the range is empty.
//! - [`Clamp::Onnx`] (ONNX Slice opset 13 text, Paddle): with a negative step, starts clamp into
//!   `[0, d-1]`, so a start below `-d` becomes index 0 and the range holds one element.
//!
//! Everything else is common: negative bounds count from the end; with a positive step bounds clamp
//! into `[0, d]`; with a negative step ends clamp into `[-1, d-1]` (`-1` meaning "before index 0").
//! `INT64_MAX` and `INT64_MIN` are ordinary numbers under these rules.
//!
//! Concrete dims are resolved in `i128`, where nothing can overflow. Symbolic dims get exact closed
//! forms built from `min`/`max` (see [`resolve_symbolic`]).

use crate::error::{SliceError, SliceResult};
use crate::view::Dim;
use tract_onnx::prelude::TDim;

/// Which clamping rule a dialect uses (see the module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Clamp {
    /// Python / numpy `slice.indices`.
    Python,
    /// ONNX Slice (opset 13 wording) and Paddle.
    Onnx,
}

/// A resolved range along one axis: `len` indices `start, start + step, ..`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AxisRange<D> {
    /// First index (meaningful only when `len > 0`).
    pub start: D,
    /// Step (non-zero).
    pub step: i64,
    /// Number of indices.
    pub len: D,
}

/// Resolves `start:end:step` on an axis of size `dim`. `None` bounds are omitted (numpy's `x[:e]`,
/// `x[s:]`): from the first element in the step's direction, to past the last one.
///
/// The caller reports a zero step with the entry or axis it belongs to; here it is a generic error.
pub fn resolve_range<D: Dim>(
    dim: &D,
    start: Option<i64>,
    end: Option<i64>,
    step: i64,
    rule: Clamp,
) -> SliceResult<AxisRange<D>> {
    if step == 0 {
        return Err(SliceError::ZeroStep { what: "step", index: 0 });
    }
    match dim.as_i64() {
        Some(d) => {
            let (s, len) = resolve_concrete(d, start, end, step, rule)?;
            Ok(AxisRange { start: D::from_i64(s), step, len: D::from_i64(len) })
        }
        None => resolve_symbolic(dim, start, end, step, rule),
    }
}

/// Concrete resolution: `(first index, length)`, both in `[0, d]`.
fn resolve_concrete(d: i64, start: Option<i64>, end: Option<i64>, step: i64, rule: Clamp) -> SliceResult<(i64, i64)> {
    if d < 0 {
        return Err(SliceError::Negative { what: "dim", value: d, at: String::new() });
    }
    let d = i128::from(d);
    let from_end = |v: i64| if v < 0 { i128::from(v) + d } else { i128::from(v) };
    let clamp = |v: i128, lo: i128, hi: i128| v.max(lo).min(hi);
    let step128 = i128::from(step);
    let (s, e) = if step > 0 {
        let s = start.map_or(0, |s| clamp(from_end(s), 0, d));
        let e = end.map_or(d, |e| clamp(from_end(e), 0, d));
        (s, e)
    } else {
        let s_lo = match rule {
            Clamp::Python => -1,
            Clamp::Onnx => 0,
        };
        // With d == 0 the clamp bounds cross; max-then-min gives -1 for both ends and an empty range.
        let s = start.map_or(d - 1, |s| clamp(from_end(s), s_lo, d - 1));
        let e = end.map_or(-1, |e| clamp(from_end(e), -1, d - 1));
        (s, e)
    };
    let span = if step > 0 { e - s } else { s - e };
    let len = if span <= 0 { 0 } else { (span + step128.abs() - 1) / step128.abs() };
    let first = if len == 0 { 0 } else { s };
    // Both are within [0, d] and d came from an i64.
    Ok((first as i64, len as i64))
}

/// A bound in forward (positive-step) coordinates.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Fwd {
    /// Index `a >= 0` counted from the start (clamped to `d`).
    Front(i64),
    /// Index `d + b`, `b < 0` (clamped to 0).
    Back(i64),
    /// The end of the axis.
    Full,
}

/// Symbolic dims are taken to be below 2^62 elements (no tensor is larger, and tract's dim arithmetic is
/// 64-bit). Bounds at or beyond ±2^62 behave like ±2^62 for every such dim, which keeps every
/// intermediate term of the closed forms within `i64`.
const SYMBOLIC_LIMIT: i64 = 1 << 62;

fn fwd(v: i64) -> Fwd {
    let v = v.clamp(-SYMBOLIC_LIMIT, SYMBOLIC_LIMIT);
    if v >= SYMBOLIC_LIMIT {
        Fwd::Full
    } else if v >= 0 {
        Fwd::Front(v)
    } else {
        Fwd::Back(v)
    }
}

/// Symbolic resolution by exact closed forms.
///
/// A negative step is handled by mirroring the axis (`r = d-1-i`): a bound `v` becomes `-1-v` (which
/// swaps "from the start" and "from the end" exactly like Python's clamping does), and an omitted bound
/// stays omitted. The forward problem then has `start = clamp(S)`, `end = clamp(E)` and
/// `len = ceil(max(0, end - start) / |step|)`, whose `max(0, ..)` is written in the form tract
/// simplifies best, case by case: `x[1:-1]` gives `max(0, d-2)`, `x[::2]` gives `(d+1)/2`, `x[-3:]`
/// gives `min(d, 3)`.
pub(super) fn resolve_symbolic<D: Dim>(
    d: &D,
    start: Option<i64>,
    end: Option<i64>,
    step: i64,
    rule: Clamp,
) -> SliceResult<AxisRange<D>> {
    let ovf = || SliceError::Overflow { what: "symbolic slice bound" };
    let k = step.unsigned_abs();
    let mirror = |v: i64| -1 - v; // never overflows: maps [MIN, MAX] onto [MIN, MAX]
    let (s, e) = if step > 0 { (start, end) } else { (start.map(mirror), end.map(mirror)) };
    // ONNX caps a negative-step start at d-1 (index 0 of the original axis is still taken), so a start
    // past every dim is the last index, not "past the end".
    let capped = step < 0 && rule == Clamp::Onnx;
    let s = match s.map_or(Fwd::Front(0), fwd) {
        Fwd::Full if capped => Fwd::Front(SYMBOLIC_LIMIT - 1),
        other => other,
    };
    let e = e.map_or(Fwd::Full, fwd);
    let c = |v: i64| D::from_i64(v);
    let zero = c(0);
    let add = |a: &D, b: &D| a.checked_add(b).ok_or_else(ovf);
    let sub = |a: &D, b: &D| a.checked_sub(b).ok_or_else(ovf);

    let len0: D = match (s, e) {
        // Capped, an end at or before the start still leaves index d-1 when 1 <= d <= e.
        (Fwd::Front(a), Fwd::Front(e)) if e <= a && capped => {
            sub(&c(e + 1), d)?.min_with(&d.min_with(&c(1))).max_with(&zero)
        }
        (Fwd::Front(a), Fwd::Front(e)) if e <= a => zero.clone(),
        (Fwd::Front(0), Fwd::Front(e)) => d.min_with(&c(e)),
        (Fwd::Front(a), Fwd::Front(e)) if capped => sub(&d.min_with(&c(e)), &c(a))?.max_with(&d.min_with(&c(1))),
        (Fwd::Front(a), Fwd::Front(e)) => sub(&d.min_with(&c(e)), &c(a))?.max_with(&zero),
        (Fwd::Front(a), Fwd::Back(f)) => add(d, &c(f - a))?.max_with(&zero),
        (Fwd::Front(0), Fwd::Full) => d.clone(),
        (Fwd::Front(a), Fwd::Full) if capped => sub(d, &c(a))?.max_with(&d.min_with(&c(1))),
        (Fwd::Front(a), Fwd::Full) => sub(d, &c(a))?.max_with(&zero),
        (Fwd::Back(b), Fwd::Front(e)) => {
            let tail = sub(&c(e - b), d)?;
            tail.min_with(&c(e.min(-b))).min_with(d).max_with(&zero)
        }
        (Fwd::Back(b), Fwd::Back(f)) if f <= b => zero.clone(),
        (Fwd::Back(b), Fwd::Back(f)) => add(d, &c(f))?.min_with(&c(f - b)).max_with(&zero),
        (Fwd::Back(b), Fwd::Full) => d.min_with(&c(-b)),
        (Fwd::Full, _) => zero.clone(),
    };
    let len = len0.div_ceil_by(k);
    let first_fwd = match s {
        Fwd::Front(a) if capped => c(a).min_with(&sub(d, &c(1))?),
        Fwd::Front(a) => c(a),
        Fwd::Back(b) => add(d, &c(b))?.max_with(&zero),
        Fwd::Full => zero.clone(),
    };
    let start = if step > 0 { first_fwd } else { sub(&sub(d, &c(1))?, &first_fwd)? };
    Ok(AxisRange { start, step, len })
}

/// Resolves a range whose bounds may be symbolic expressions (`T` from a `Shape`, `H/4`) on a symbolic
/// or concrete axis. Integer bounds go through [`resolve_range`]. Symbolic bounds use the general
/// clamping formulas written with `min` and `max`, for steps of ±1 only; the bound's sign must be
/// provable (every symbol is a dim, so `T` and `H/4` are non-negative). `Ok(None)` when the length
/// cannot be written exactly: it then depends on values analysis cannot order.
pub(crate) fn resolve_range_with_dims(
    dim: &TDim,
    start: Option<&TDim>,
    end: Option<&TDim>,
    step: i64,
    rule: Clamp,
) -> SliceResult<Option<AxisRange<TDim>>> {
    if step == 0 {
        return Err(SliceError::ZeroStep { what: "step", index: 0 });
    }
    let concrete = |b: Option<&TDim>| b.map(|b| b.as_i64().ok_or(())).transpose();
    if let (Ok(s), Ok(e)) = (concrete(start), concrete(end)) {
        return resolve_range(dim, s, e, step, rule).map(Some);
    }
    // tract rewrites `(c - x) / k` as `c/k - x/k`, which is wrong for k > 1 when x/k is inexact: with a
    // symbolic bound and a step other than ±1 the length is left to the data.
    if step.unsigned_abs() != 1 {
        return Ok(None);
    }
    resolve_symbolic_bounds(dim, start, end, step, rule)
}

/// Which side a bound counts from, if provable.
enum Side {
    /// `v >= 0`: from the start.
    Front,
    /// `v <= -1`: from the end.
    Back,
}

fn side(v: &TDim) -> Option<Side> {
    if v.prove_positive_or_zero() {
        Some(Side::Front)
    } else if (TDim::Val(-1) - v.clone()).prove_positive_or_zero() {
        Some(Side::Back)
    } else {
        None
    }
}

/// For steps of ±1. In forward coordinates throughout (a negative step mirrors the axis, `i -> d-1-i`, so a bound `v`
/// becomes `-1-v`, as in [`resolve_symbolic`]): every clamped bound lies in `[0, d]`, which keeps
/// tract's simplification of the final division exact.
fn resolve_symbolic_bounds(
    d: &TDim,
    start: Option<&TDim>,
    end: Option<&TDim>,
    step: i64,
    rule: Clamp,
) -> SliceResult<Option<AxisRange<TDim>>> {
    let zero = TDim::Val(0);
    let mirror = |v: &TDim| TDim::Val(-1) - v.clone();
    let (s, e) = if step > 0 { (start.cloned(), end.cloned()) } else { (start.map(mirror), end.map(mirror)) };
    // Clamps a forward bound into [0, d]; `omitted` when absent.
    let clamp = |v: Option<&TDim>, omitted: &TDim| -> Option<TDim> {
        Some(match v {
            None => omitted.clone(),
            Some(v) => match side(v)? {
                Side::Front => v.min_with(d),
                Side::Back => (d.clone() + v.clone()).max_with(&zero),
            },
        })
    };
    let (Some(mut s), Some(e)) = (clamp(s.as_ref(), &zero), clamp(e.as_ref(), d)) else { return Ok(None) };
    // ONNX caps a negative-step start at the last index: a start past the end still takes index d-1,
    // which is forward index 0 (but nothing on an empty axis).
    let capped = step < 0 && rule == Clamp::Onnx;
    if capped {
        s = s.min_with(&(d.clone() - 1)).max_with(&zero);
    }
    let mut len = (e - s.clone()).max_with(&zero);
    if capped {
        len = len.min_with(d);
    }
    let first = if step > 0 { s } else { d.clone() - 1 - s };
    Ok(Some(AxisRange { start: first, step, len }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn py(d: i64, s: Option<i64>, e: Option<i64>, k: i64) -> (i64, i64) {
        resolve_concrete(d, s, e, k, Clamp::Python).unwrap()
    }

    #[test]
    fn python_rules_match_slice_indices() {
        // list(range(10))[2:8:3] == [2, 5]
        assert_eq!(py(10, Some(2), Some(8), 3), (2, 2));
        // [::-1] on 4 -> 3,2,1,0
        assert_eq!(py(4, None, None, -1), (3, 4));
        // [-100:100] on 5
        assert_eq!(py(5, Some(-100), Some(100), 1), (0, 5));
        // [-100::-1] on 5 is empty in Python
        assert_eq!(py(5, Some(-100), None, -1), (0, 0));
        // [i64::MIN:i64::MAX:i64::MAX] on 5 -> one element, index 0
        assert_eq!(py(5, Some(i64::MIN), Some(i64::MAX), i64::MAX), (0, 1));
        // [::i64::MIN] on 5 -> one element, the last
        assert_eq!(py(5, None, None, i64::MIN), (4, 1));
    }

    #[test]
    fn onnx_negative_step_start_below_minus_dim_takes_index_0() {
        assert_eq!(resolve_concrete(5, Some(-100), Some(-200), -1, Clamp::Onnx).unwrap(), (0, 1));
        assert_eq!(resolve_concrete(5, Some(-100), Some(-200), -1, Clamp::Python).unwrap(), (0, 0));
    }

    /// Symbolic bounds over a symbolic or a known axis, evaluated at many values of the symbols, give
    /// what the concrete rule gives.
    #[test]
    fn symbolic_bounds_agree_with_concrete_resolution() {
        use tract_onnx::prelude::{SymbolScope, SymbolValues};
        let scope = SymbolScope::default().with_assertion("T>=0").unwrap().with_assertion("N>=0").unwrap();
        let t = scope.sym("T");
        let n = scope.sym("N");
        let tt = TDim::Sym(t.clone());
        let nn = TDim::Sym(n.clone());
        let bounds: Vec<Option<TDim>> =
            vec![None, Some(tt.clone()), Some(TDim::Val(0) - tt.clone()), Some(tt.clone() - 1 + 1), Some(TDim::Val(2))];
        for dim in [nn.clone(), TDim::Val(5)] {
            for start in &bounds {
                for end in &bounds {
                    for step in [-2, -1, 1, 3] {
                        for rule in [Clamp::Python, Clamp::Onnx] {
                            let Some(r) =
                                resolve_range_with_dims(&dim, start.as_ref(), end.as_ref(), step, rule).unwrap()
                            else {
                                continue;
                            };
                            for (tv, nv) in [(0, 0), (0, 4), (3, 5), (7, 5), (2, 1)] {
                                let values = SymbolValues::default().with(&t, tv).with(&n, nv);
                                let ev = |b: &Option<TDim>| b.as_ref().map(|b| b.eval(&values).to_i64().unwrap());
                                let d = dim.eval(&values).to_i64().unwrap();
                                let (s0, len0) = resolve_concrete(d, ev(start), ev(end), step, rule).unwrap();
                                let len = r.len.eval(&values).to_i64().unwrap();
                                assert_eq!(len, len0, "{dim}[{start:?}:{end:?}:{step}] {rule:?} at T={tv} N={nv}");
                                if len > 0 {
                                    assert_eq!(r.start.eval(&values).to_i64().unwrap(), s0);
                                }
                            }
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn zero_dim_is_always_empty() {
        for rule in [Clamp::Python, Clamp::Onnx] {
            for step in [-3, -1, 1, 2] {
                assert_eq!(resolve_concrete(0, Some(-1), Some(i64::MAX), step, rule).unwrap(), (0, 0));
            }
        }
    }
}
