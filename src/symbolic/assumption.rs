//! A parsed assumption: two dims compared, with the canonical text tract's `SymbolScope::add_assertion`
//! reads back to the same dims.

use std::fmt;
use tract_onnx::prelude::{Assertion, TDim};

/// How an assumption compares its two sides.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Comparison {
    /// `==`
    Eq,
    /// `<=`
    Le,
    /// `>=`
    Ge,
    /// `<`
    Lt,
    /// `>`
    Gt,
}

impl Comparison {
    /// The operator as written: `==`, `<=`, `>=`, `<` or `>`.
    pub fn as_str(self) -> &'static str {
        match self {
            Comparison::Eq => "==",
            Comparison::Le => "<=",
            Comparison::Ge => ">=",
            Comparison::Lt => "<",
            Comparison::Gt => ">",
        }
    }
}

impl Comparison {
    /// The two sides of a tract assertion when it makes this comparison, `None` when it makes
    /// another: how a check reads back what tract parsed of [`Assumption::tract_text`].
    pub fn sides_of(self, assertion: &Assertion) -> Option<(&TDim, &TDim)> {
        match (self, assertion) {
            (Comparison::Eq, Assertion::Eq(l, r))
            | (Comparison::Le, Assertion::LTE(l, r))
            | (Comparison::Ge, Assertion::GTE(l, r))
            | (Comparison::Lt, Assertion::LT(l, r))
            | (Comparison::Gt, Assertion::GT(l, r)) => Some((l, r)),
            _ => None,
        }
    }
}

impl fmt::Display for Comparison {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One comparison between two dims, such as `N>=2`.
#[derive(Debug, Clone, PartialEq)]
pub struct Assumption {
    /// The left side.
    pub lhs: TDim,
    /// The comparison.
    pub comparison: Comparison,
    /// The right side.
    pub rhs: TDim,
    pub(super) text: String,
    pub(super) symbols: Vec<String>,
}

impl Assumption {
    /// The assumption as canonical text for tract's `SymbolScope::add_assertion`: fully folded
    /// constants, parentheses wherever tract's grammar binds differently from ours (its `/` binds tighter
    /// than `*`), no more nesting than the parsed text had plus a bounded amount. tract parses it
    /// recursively, so only this text, never the user's, is handed to it.
    pub fn tract_text(&self) -> &str {
        &self.text
    }

    /// The symbols the assumption names, in order of first appearance.
    pub fn symbols(&self) -> &[String] {
        &self.symbols
    }
}

impl fmt::Display for Assumption {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}
