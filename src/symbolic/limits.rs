//! The parser's limits, which its errors quote: no text makes it, or tract's arithmetic on what it
//! builds, overflow the stack, the integers or the time budget.

/// The longest text accepted, in bytes.
pub const MAX_LEN: usize = 4096;
/// The most parentheses (function calls included) open at once.
pub const MAX_DEPTH: usize = 64;
/// The most numbers and symbols in one text.
pub const MAX_OPERANDS: usize = 256;
/// The most terms an expression may have once its products of sums are multiplied out (tract expands
/// them, which is exponential in the number of factors).
pub const MAX_TERMS: u64 = 256;
/// The deepest `min`/`max` may nest (tract's simplification of nested ones is exponential in the depth).
pub const MAX_MINMAX_NESTING: usize = 3;
/// The most `min`/`max` calls in one text.
pub const MAX_MINMAX: usize = 8;
/// The most divisions by a symbolic numerator in one text (tract's simplification of sums and products
/// of divisions is exponential in their number).
pub const MAX_DIVISIONS: usize = 4;
