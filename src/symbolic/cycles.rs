//! Equalities tract would substitute without end. tract reads an assertion `S == e` (a bare symbol on
//! the left) as "replace `S` by `e`" wherever it simplifies: if `e` names `S`, or the equalities define
//! symbols in terms of each other, that replacement never ends (a hang or a stack overflow). Such
//! assumptions are refused, counting the equalities the scope already holds.

use super::assumption::{Assumption, Comparison};
use super::error::DimParseError;
use std::collections::HashMap;
use tract_onnx::prelude::{Assertion, SymbolScope, TDim};

/// The substitution edges of the equalities already in `scope` and in `new`, by symbol name.
fn edges(scope: &SymbolScope, new: &[Assumption]) -> HashMap<String, Vec<String>> {
    let mut map: HashMap<String, Vec<String>> = HashMap::new();
    let mut add = |lhs: &TDim, rhs: &TDim| {
        if let TDim::Sym(s) = lhs {
            map.entry(s.to_string()).or_default().extend(rhs.symbols().iter().map(|t| t.to_string()));
        }
    };
    for a in scope.all_assertions() {
        if let Assertion::Eq(l, r) = &a {
            add(l, r);
        }
    }
    for a in new.iter().filter(|a| a.comparison == Comparison::Eq) {
        add(&a.lhs, &a.rhs);
    }
    map
}

/// Refuses `new` if an equality among them leads back to its own symbol.
pub(super) fn check_substitutions(scope: &SymbolScope, new: &[Assumption]) -> Result<(), DimParseError> {
    let edges = edges(scope, new);
    for a in new.iter().filter(|a| a.comparison == Comparison::Eq) {
        let TDim::Sym(start) = &a.lhs else { continue };
        let start = start.to_string();
        // Depth-first, with an explicit stack, over the symbols `start` would be replaced by.
        let mut seen: Vec<&str> = vec![];
        let mut todo: Vec<&str> = edges.get(&start).map(|v| v.iter().map(String::as_str).collect()).unwrap_or_default();
        while let Some(s) = todo.pop() {
            if s == start {
                return Err(DimParseError::CyclicEquality { text: a.tract_text().to_string(), symbol: start });
            }
            if seen.contains(&s) {
                continue;
            }
            seen.push(s);
            todo.extend(edges.get(s).map(|v| v.iter().map(String::as_str)).into_iter().flatten());
        }
    }
    Ok(())
}
