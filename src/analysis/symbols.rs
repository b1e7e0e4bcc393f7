//! The symbols of one analysis: where each comes from, and what is assumed of it.
//!
//! A symbol is a size the model does not fix: a named input dim (`batch`, `seq`), an input dim the
//! model leaves unnamed (`?`, `-1`, no value: named here after its input and axis), or a size that
//! only the data decides (the length of a `NonZero`, a `Slice` whose bounds are runtime values),
//! named after the node that makes it.
//!
//! Every symbol is a dim, so each gets two default assumptions: `S >= 0`, and `S <= 1000000000`
//! ([`DEFAULT_DIM_MAX`]). The second is what lets exporters' "to the end" sentinels resolve
//! symbolically as they do at run time: tf2onnx writes `±1e9` and `INT32_MAX`, torch `INT64_MAX`,
//! and `min(N, 2147483647)` is `N` only for `N <= 2147483647`. A user assumption bounding a symbol
//! from above (`N<=K`, `N<K`) replaces that default for the symbol.

use std::collections::HashMap;
use tract_onnx::prelude::*;

/// The default upper bound of every symbol (see the module docs).
pub(crate) const DEFAULT_DIM_MAX: i64 = 1_000_000_000;

/// Where a symbol comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Origin {
    /// An input dim the model names (`dim_param`), possibly inside an expression (`8*height`).
    Declared {
        /// The graph input.
        input: String,
        /// The axis.
        axis: usize,
        /// The declared text.
        text: String,
    },
    /// An input dim the model leaves unnamed (no value, `dim_value` < 0, `dim_param` `?`, empty or
    /// `-1`): each gets its own symbol, even when two are written the same way.
    Unnamed {
        /// The graph input.
        input: String,
        /// The axis.
        axis: usize,
        /// How the model writes it (`?`, `-1`, `` for nothing).
        declared: String,
    },
    /// Set by the user's `--input-shape`.
    Given {
        /// The graph input.
        input: String,
        /// The axis.
        axis: usize,
    },
    /// A size that depends on data, or that no rule could express: named after the node.
    Node {
        /// The node's name.
        node: String,
        /// Its op type.
        op: String,
        /// Which output.
        output: usize,
        /// Which axis of that output.
        axis: usize,
        /// Why the size is not known before running.
        reason: String,
    },
}

/// One symbol of an analysis.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SymbolInfo {
    /// Its name, as dims print it.
    pub name: String,
    /// Where it comes from.
    pub origin: Origin,
    /// Its smallest possible value under the assumptions in force.
    pub min: Option<i64>,
    /// Its largest possible value under the assumptions in force.
    pub max: Option<i64>,
    /// The bound its op implies, as an expression (a `NonZero` count is at most its input's element
    /// count, `N` for an input `[N]`; a run-time `k` of `TopK` at most the length of its axis).
    pub at_most: Option<TDim>,
}

/// The symbols of one analysis, in the order they were met.
#[derive(Debug, Clone, Default)]
pub(crate) struct SymbolTable {
    entries: Vec<SymbolInfo>,
    index: HashMap<String, usize>,
    /// Symbols the user bounded from above: no default upper bound for them.
    user_bounded: Vec<String>,
    /// The bounds ops imply, by symbol name.
    at_most: HashMap<String, TDim>,
}

impl SymbolTable {
    /// A table for symbols in `scope`; `user_bounded` are the symbols the user's assumptions already
    /// bound from above.
    pub(super) fn new(user_bounded: Vec<String>) -> SymbolTable {
        SymbolTable { user_bounded, ..Default::default() }
    }

    /// Records `symbol` with its origin (the first origin wins) and adds its default assumptions to
    /// `scope`.
    pub(super) fn record(&mut self, scope: &SymbolScope, symbol: &Symbol, origin: Origin) -> TractResult<()> {
        let name = symbol.to_string();
        if self.index.contains_key(&name) {
            return Ok(());
        }
        scope.add_assertion(format!("{name}>=0"))?;
        if !self.user_bounded.contains(&name) {
            scope.add_assertion(format!("{name}<={DEFAULT_DIM_MAX}"))?;
        }
        self.index.insert(name.clone(), self.entries.len());
        self.entries.push(SymbolInfo { name, origin, min: None, max: None, at_most: None });
        Ok(())
    }

    /// Notes the bound the op minting the symbol `name` implies.
    pub(super) fn set_at_most(&mut self, name: &str, bound: TDim) {
        self.at_most.insert(name.to_string(), bound);
    }

    /// Whether the symbol named `name` is recorded.
    pub(super) fn contains(&self, name: &str) -> bool {
        self.index.contains_key(name)
    }

    /// Whether the symbol named `name` is a size a node mints (known only when it runs).
    pub(super) fn minted(&self, name: &str) -> bool {
        self.index.get(name).is_some_and(|&i| matches!(self.entries[i].origin, Origin::Node { .. }))
    }

    /// The recorded symbols, with their bounds filled in from `scope`'s assumptions.
    pub(super) fn finish(mut self, scope: &SymbolScope) -> Vec<SymbolInfo> {
        for entry in &mut self.entries {
            let Some(sym) = scope.get(&entry.name) else { continue };
            let dim = TDim::Sym(sym);
            entry.min = dim.low_inclusive_bound();
            entry.max = dim.high_inclusive_bound();
            if let Some(bound) = self.at_most.get(&entry.name) {
                if let Some(b) = largest(bound) {
                    entry.max = Some(entry.max.map_or(b, |m| m.min(b)));
                }
                entry.at_most = Some(bound.clone());
            }
        }
        self.entries
    }
}

/// The largest value `dim` can take, as far as tract's bounds tell: a min is at most its smallest
/// bounded term (tract bounds a min from below only), a sum (the element count of a concatenation of
/// capped selections) at most the sum of its terms' largest values.
pub(super) fn largest(dim: &TDim) -> Option<i64> {
    let term = |t: &TDim| match t {
        TDim::Min(terms) => terms.iter().filter_map(TDim::high_inclusive_bound).min(),
        _ => t.high_inclusive_bound(),
    };
    match dim {
        TDim::Add(terms) => terms.iter().try_fold(0i64, |sum, t| sum.checked_add(term(t)?)),
        _ => term(dim),
    }
}

#[cfg(test)]
mod largest_tests {
    use super::*;

    #[test]
    fn a_min_is_at_most_its_smallest_bounded_term() {
        let s = SymbolScope::default().with_assertion("N<=1000").unwrap();
        assert_eq!(largest(&s.parse_tdim("min(N,300)").unwrap()), Some(300));
        assert_eq!(largest(&s.parse_tdim("min(N,3000)").unwrap()), Some(1000));
        assert_eq!(largest(&s.parse_tdim("max(N,3000)").unwrap()), Some(3000));
        assert_eq!(largest(&s.parse_tdim("min(N,M)").unwrap()), Some(1000));
        assert_eq!(largest(&s.parse_tdim("M").unwrap()), None);
        assert_eq!(largest(&s.parse_tdim("min(N,30)+min(M,20)+5").unwrap()), Some(55));
        assert_eq!(largest(&s.parse_tdim("min(N,30)+M").unwrap()), None);
    }
}
