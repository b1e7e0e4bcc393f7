//! Symbolic dims as text: the expressions of `dim_param`, `--input-shape` and `--assume`.
//!
//! Our own parser ([`parse_dim`], [`parse_assumption`], [`symbols_in`]) with explicit stacks instead
//! of recursion, and limits on the text's length ([`MAX_LEN`]), nesting ([`MAX_DEPTH`],
//! [`MAX_MINMAX_NESTING`]), size ([`MAX_OPERANDS`], [`MAX_TERMS`], [`MAX_MINMAX`], [`MAX_DIVISIONS`])
//! and magnitudes, so that no input makes it, or tract's arithmetic on what it builds, overflow the
//! stack, the integers or the time budget (tract simplifies as it computes, and its simplification of
//! nested `min`/`max`, of products of sums and of sums of divisions is exponential in their number). Errors ([`DimParseError`]) say what is wrong and at which column.
//!
//! Grammar: integers; symbols `[A-Za-z_][A-Za-z0-9_.]*` (`N`, `batch_size`, `unk__12`, `s0`); `+ - *`;
//! `/`, floor division by a positive integer (or an expression of integers); unary minus; parentheses;
//! `min(a,b,..)` and `max(a,b,..)`. An assumption is one comparison (`== <= >= < >`), several joined
//! with `&&`. Constant parts are computed exactly (floor division included); a symbolic numerator is
//! divided by tract, which truncates, the same as floor for the non-negative values dims take.

mod assumption;
mod build;
mod cycles;
mod error;
mod eval;
mod lex;
mod limits;
mod names;
mod parse;

pub use assumption::{Assumption, Comparison};
pub use error::DimParseError;
pub(crate) use eval::eval_exact;
pub(crate) use names::symbol_name;
pub use parse::{
    parse_assumption, parse_dim, symbols_in, MAX_DEPTH, MAX_DIVISIONS, MAX_LEN, MAX_MINMAX, MAX_MINMAX_NESTING,
    MAX_OPERANDS, MAX_TERMS,
};

/// A text as it is shown in an error message: whole if short, else its first 60 characters and its
/// length (a hostile text may be megabytes long).
pub(crate) fn excerpt(text: &str) -> String {
    const SHOWN: usize = 60;
    match text.char_indices().nth(SHOWN) {
        None => text.to_string(),
        Some((cut, _)) => format!("{}... ({} bytes)", &text[..cut], text.len()),
    }
}

#[cfg(test)]
mod tests;
