//! Why a dim expression or an assumption could not be parsed: each variant says what is wrong in words
//! and where (columns count characters from 1).

use super::limits::{MAX_DEPTH, MAX_DIVISIONS, MAX_LEN, MAX_MINMAX, MAX_MINMAX_NESTING, MAX_OPERANDS, MAX_TERMS};
use thiserror::Error;

/// A dim expression or assumption that cannot be parsed, or that exceeds one of the parser's limits.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum DimParseError {
    /// Nothing but spaces.
    #[error("the expression is empty")]
    Empty,
    /// Longer than [`MAX_LEN`] bytes.
    #[error("the expression is {len} bytes long; the limit is {MAX_LEN}")]
    TooLong {
        /// Its length in bytes.
        len: usize,
    },
    /// A character that is no part of the grammar.
    #[error("unexpected character '{ch}' at column {column}")]
    BadCharacter {
        /// The character.
        ch: char,
        /// Where.
        column: usize,
    },
    /// A token where the grammar allows none of its kind.
    #[error("unexpected '{found}' at column {column}: {hint}")]
    Unexpected {
        /// The token as written.
        found: String,
        /// Where.
        column: usize,
        /// What was expected instead, or how to write it.
        hint: &'static str,
    },
    /// The text stops where an operand is missing (`N+`).
    #[error("the expression ends at column {column} where a number, a symbol or '(' is missing")]
    UnexpectedEnd {
        /// The column just past the end.
        column: usize,
    },
    /// A `(` with no `)`.
    #[error("'(' at column {column} is never closed")]
    Unclosed {
        /// Where the parenthesis opens.
        column: usize,
    },
    /// A `)` with no `(`.
    #[error("')' at column {column} has no matching '('")]
    Unmatched {
        /// Where.
        column: usize,
    },
    /// More than [`MAX_DEPTH`] parentheses open at once.
    #[error("nesting deeper than {MAX_DEPTH} parentheses at column {column}")]
    TooDeep {
        /// Where the parenthesis past the limit opens.
        column: usize,
    },
    /// More than [`MAX_OPERANDS`] numbers and symbols.
    #[error("more than {MAX_OPERANDS} numbers and symbols in one expression (at column {column})")]
    TooManyOperands {
        /// Where the operand past the limit is.
        column: usize,
    },
    /// A product of sums that multiplies out to more than [`MAX_TERMS`] terms.
    #[error("the expression multiplies out to more than {MAX_TERMS} terms (at column {column})")]
    TooManyTerms {
        /// The operator that crossed the limit.
        column: usize,
    },
    /// `min`/`max` nested more than [`MAX_MINMAX_NESTING`] deep.
    #[error("min and max nested more than {MAX_MINMAX_NESTING} deep (at column {column})")]
    MinMaxTooDeep {
        /// The function that crossed the limit.
        column: usize,
    },
    /// More than [`MAX_MINMAX`] calls of `min`/`max`.
    #[error("more than {MAX_MINMAX} calls of min and max in one expression (at column {column})")]
    TooManyMinMax {
        /// The call past the limit.
        column: usize,
    },
    /// More than [`MAX_DIVISIONS`] divisions of symbolic values.
    #[error("more than {MAX_DIVISIONS} divisions of symbolic values in one expression (at column {column})")]
    TooManyDivisions {
        /// The division past the limit.
        column: usize,
    },
    /// `min` or `max` in an assumption: tract recurses without end reasoning with them.
    #[error("min and max cannot be used in assumptions (at column {column}): tract cannot reason with them")]
    MinMaxInAssumption {
        /// Where the call is.
        column: usize,
    },
    /// `N==N+1`, or equalities that define symbols in terms of each other: tract substitutes the symbol
    /// on the left of an equality wherever it appears, without end for these.
    #[error("assuming {text} makes {symbol} stand for an expression of itself (with the equalities already assumed): tract would substitute it without end")]
    CyclicEquality {
        /// The assumption, as canonical text.
        text: String,
        /// A symbol on the cycle.
        symbol: String,
    },
    /// A call to a function other than `min` and `max`.
    #[error("unknown function '{name}' at column {column}: only min(..) and max(..) are supported")]
    UnknownFunction {
        /// The name as written.
        name: String,
        /// Where.
        column: usize,
    },
    /// `min()` or `max()`.
    #[error("{name}() at column {column} needs at least one argument")]
    NoArguments {
        /// `min` or `max`.
        name: &'static str,
        /// Where the call starts.
        column: usize,
    },
    /// An integer literal above `i64::MAX`.
    #[error("the integer {digits} at column {column} is too large (the largest is 9223372036854775807)")]
    IntegerTooLarge {
        /// The digits as written.
        digits: String,
        /// Where.
        column: usize,
    },
    /// Values or coefficients that could leave 64-bit integers.
    #[error("the numbers in the expression could exceed 64-bit integers (at column {column})")]
    Overflow {
        /// The operator that crossed the limit.
        column: usize,
    },
    /// `N/M`.
    #[error("division by a symbolic expression is not supported (at column {column}): divide by a positive integer")]
    SymbolicDivisor {
        /// Where the `/` is.
        column: usize,
    },
    /// `N/0`, `N/-2`.
    #[error("division by {divisor} at column {column}: the divisor must be a positive integer")]
    NonPositiveDivisor {
        /// The divisor's value.
        divisor: i64,
        /// Where the `/` is.
        column: usize,
    },
    /// An assumption (between `&&`s) that compares nothing.
    #[error("no comparison in the assumption at columns {start}-{end}: compare two expressions, such as N>=2")]
    NoComparison {
        /// Its first column.
        start: usize,
        /// Its last column.
        end: usize,
    },
}
