//! The analysis memory budget: no value over it is ever computed before the model runs.
//!
//! tract evaluates a node over constants while wiring it (its constant propagation runs before any
//! size check), so a 200-byte model holding `ConstantOfShape([2048, 1048576])` would make analysis
//! allocate 8 GiB. Before a node whose inputs are all constants is translated, its inference rules
//! give its output shapes; when they are known and take more than the folding budget
//! ([`super::Options::fold_bytes`]), the node is not translated by tract but kept as a deferred
//! [`super::opaque::Opaque`]: typed with those shapes, never folded, computed only when a plan runs.

use crate::memory::bytes_of;
use tract_onnx::prelude::*;
use tract_onnx::tract_hir::infer::Factoid;

/// What the known output shapes of a node over constants say of computing it before the model runs.
pub(crate) enum Weighed {
    /// They fit the budget, a shape is not fully known, or their bytes are past `u64` (the node's own
    /// translation deals with those): the node is translated.
    Fits,
    /// Over the budget: the output facts and the reason; the node is computed only when a plan runs.
    Over(Vec<TypedFact>, String),
    /// An output has more elements than 64-bit sizes can count: no run could hold it, and tract's
    /// size products would wrap (to an empty tensor); the message says which.
    Uncountable(String),
}

/// The output facts and the reason, when the outputs' known shapes take more than `budget` bytes.
pub(crate) fn oversized(outputs: &[InferenceFact], budget: u64) -> Weighed {
    let mut facts = vec![];
    let mut total: Option<u64> = Some(0);
    let mut shapes = vec![];
    for fact in outputs {
        let Some(dt) = fact.datum_type.concretize() else { return Weighed::Fits };
        let Some(shape) = fact.shape.concretize() else { return Weighed::Fits };
        let Some(dims) =
            shape.iter().map(|d| d.to_i64().ok().and_then(|v| usize::try_from(v).ok())).collect::<Option<Vec<usize>>>()
        else {
            return Weighed::Fits;
        };
        if elements_of(&dims).is_none() {
            return Weighed::Uncountable(uncountable(&dims));
        }
        let bytes = bytes_of(&dims, dt);
        total = total.zip(bytes).and_then(|(t, b)| t.checked_add(b));
        shapes.push(format!("{dims:?}"));
        facts.push(dt.fact(&*dims));
    }
    // Bytes past u64 (elements within i64) are left to the node's own translation, which refuses the
    // size (Range) or types the node without computing it (tract's constant evaluation fails).
    let Some(total) = total else { return Weighed::Fits };
    if total <= budget {
        return Weighed::Fits;
    }
    let size = format!("{total} bytes");
    let reason = format!(
        "its output ({} {}) would take {size}, over the analysis budget of {budget} bytes: it is not \
         computed before the model runs",
        if shapes.len() == 1 { "shape" } else { "shapes" },
        shapes.join(", ")
    );
    Weighed::Over(facts, reason)
}

/// Why an output of shape `dims` cannot be: its elements are past what 64-bit sizes count.
pub(crate) fn uncountable(dims: &[usize]) -> String {
    format!("its output of shape {dims:?} has more elements than 64-bit sizes can count ({} is the most)", i64::MAX)
}

/// The elements of a tensor of `dims`; `None` when they are more than `i64::MAX` (tract counts a
/// shape's volume as an `i64` dim).
pub(crate) fn elements_of(dims: &[usize]) -> Option<u64> {
    dims.iter().try_fold(1u64, |acc, &d| acc.checked_mul(d as u64)).filter(|&n| n <= i64::MAX as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_shape_over_the_budget_is_reported_with_its_size() {
        let fact = InferenceFact::dt_shape(f32::datum_type(), [2048usize, 1048576].as_ref());
        let Weighed::Over(facts, reason) = oversized(&[fact], 4 << 20) else { panic!("not over") };
        assert_eq!(facts[0].shape.as_concrete(), Some(&[2048usize, 1048576][..]));
        assert_eq!(
            reason,
            "its output (shape [2048, 1048576]) would take 8589934592 bytes, over the analysis budget of \
             4194304 bytes: it is not computed before the model runs"
        );
    }

    #[test]
    fn a_shape_within_the_budget_or_unknown_is_not() {
        let small = InferenceFact::dt_shape(f32::datum_type(), [1024usize, 1024].as_ref());
        assert!(matches!(oversized(&[small], 4 << 20), Weighed::Fits));
        assert!(matches!(oversized(&[InferenceFact::dt(f32::datum_type())], 0), Weighed::Fits));
    }

    #[test]
    fn bytes_past_u64_are_left_to_the_node_and_elements_past_i64_uncountable() {
        let bytes = InferenceFact::dt_shape(f32::datum_type(), [1usize << 62].as_ref());
        assert!(matches!(oversized(&[bytes], 4 << 20), Weighed::Fits));
        let huge = InferenceFact::dt_shape(f64::datum_type(), [1usize << 33, 1 << 33].as_ref());
        let Weighed::Uncountable(why) = oversized(&[huge], 0) else { panic!("not uncountable") };
        assert_eq!(
            why,
            "its output of shape [8589934592, 8589934592] has more elements than 64-bit sizes can count \
             (9223372036854775807 is the most)"
        );
        assert_eq!(bytes_of(&[1 << 62, 4], DatumType::U8), None);
        assert_eq!(bytes_of(&[3, 5], DatumType::I64), Some(120));
        assert_eq!(elements_of(&[1 << 31, 1 << 32]), None);
        assert_eq!(elements_of(&[1 << 31, (1 << 32) - 1]), Some((1 << 63) - (1 << 31)));
    }
}
