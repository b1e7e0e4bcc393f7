//! Conditional shapes in the reports: what a value is under each outcome of the `If` conditions the
//! analysis cannot decide, where that differs from the merged facts.

use crate::analysis::{Analysis, Case};
use crate::dims::format_dim;
use tract_onnx::prelude::*;

/// A value in one outcome.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CaseFact {
    /// The conditions of the outcome, joined with `and`.
    pub when: String,
    /// Its element type's name and dims, or why they are unknown in this outcome.
    pub fact: Result<(String, Vec<TDim>), String>,
}

impl CaseFact {
    /// The fact as printed: `float32 [1, 128]`, or `? (why)`.
    fn text(&self) -> String {
        match &self.fact {
            Ok((dtype, shape)) => format!("{dtype} {}", shape_text(shape)),
            Err(why) => format!("? ({why})"),
        }
    }
}

/// The dims as printed: `[N, 3]`.
pub(crate) fn shape_text(shape: &[TDim]) -> String {
    format!("[{}]", shape.iter().map(format_dim).collect::<Vec<_>>().join(", "))
}

fn fact_in(analysis: &Analysis, name: &str) -> Option<Result<(String, Vec<TDim>), String>> {
    if let Some(fact) = analysis.value_fact(name).ok()? {
        return Some(Ok((fact.dtype_name, fact.shape)));
    }
    analysis.unknown.get(name).map(|why| Err(why.clone()))
}

/// The named value in each outcome, when one of them differs from what the merged analysis `base`
/// says of it (`None` when they all agree, or there are no outcomes).
pub fn value_cases(name: &str, base: &Analysis, cases: &[Case]) -> Option<Vec<CaseFact>> {
    let merged = fact_in(base, name).map(|fact| CaseFact { when: String::new(), fact }.text());
    let facts: Vec<CaseFact> = cases
        .iter()
        .filter_map(|c| Some(CaseFact { when: c.when.join(" and "), fact: fact_in(&c.analysis, name)? }))
        .collect();
    facts.iter().any(|f| Some(f.text()) != merged).then_some(facts)
}
