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

/// The output facts and the reason, when the outputs' known shapes take more than `budget` bytes.
/// `None` when they fit, a shape is not fully known, or the size is past `u64`.
pub(crate) fn oversized(outputs: &[InferenceFact], budget: u64) -> Option<(TVec<TypedFact>, String)> {
    let mut facts = tvec![];
    let mut total: Option<u64> = Some(0);
    let mut shapes = vec![];
    for fact in outputs {
        let dt = fact.datum_type.concretize()?;
        let dims: Vec<usize> = fact
            .shape
            .concretize()?
            .iter()
            .map(|d| d.to_i64().ok().and_then(|v| usize::try_from(v).ok()))
            .collect::<Option<_>>()?;
        let bytes = bytes_of(&dims, dt);
        total = total.zip(bytes).and_then(|(t, b)| t.checked_add(b));
        shapes.push(format!("{dims:?}"));
        facts.push(dt.fact(&*dims));
    }
    // A size past u64 is no model's to run: the node's own translation refuses it with its error.
    let total = total?;
    if total <= budget {
        return None;
    }
    let size = format!("{total} bytes");
    let reason = format!(
        "its output ({} {}) would take {size}, over the analysis budget of {budget} bytes: it is not \
         computed before the model runs",
        if shapes.len() == 1 { "shape" } else { "shapes" },
        shapes.join(", ")
    );
    Some((facts, reason))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_shape_over_the_budget_is_reported_with_its_size() {
        let fact = InferenceFact::dt_shape(f32::datum_type(), [2048usize, 1048576].as_ref());
        let (facts, reason) = oversized(&[fact], 4 << 20).unwrap();
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
        assert!(oversized(&[small], 4 << 20).is_none());
        assert!(oversized(&[InferenceFact::dt(f32::datum_type())], 0).is_none());
    }

    #[test]
    fn sizes_past_u64_are_left_to_the_node() {
        let huge = InferenceFact::dt_shape(f64::datum_type(), [1usize << 40, 1 << 40].as_ref());
        assert!(oversized(&[huge], 0).is_none());
        assert_eq!(bytes_of(&[1 << 62, 4], DatumType::U8), None);
        assert_eq!(bytes_of(&[3, 5], DatumType::I64), Some(120));
    }
}
