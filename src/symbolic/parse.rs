//! The parser: an operator-precedence (shunting-yard) loop over tokens with explicit stacks, so no
//! recursion follows the input's shape. It runs twice over a text: first with [`Check`] (grammar and
//! limits, no symbol is created), then, only if that passed, with [`Build`] into tract dims.
//!
//! Precedence follows Python's: unary minus binds tighter than `*` and `/` (floor division), which bind
//! tighter than `+` and `-`, all left-associative.

use super::assumption::{Assumption, Comparison};
use super::build::{Build, Check, Dims};
use super::error::DimParseError;
use super::lex::{unexpected, Lexer, Tok, Token};
use tract_onnx::prelude::{SymbolScope, TDim};

pub use super::limits::{MAX_DEPTH, MAX_DIVISIONS, MAX_LEN, MAX_MINMAX, MAX_MINMAX_NESTING, MAX_OPERANDS, MAX_TERMS};

/// The largest magnitude of any coefficient, constant or common denominator the expression could take
/// in tract's arithmetic.
const MAX_MAGNITUDE: u64 = i64::MAX as u64;

/// Parses a dim expression such as `N`, `2*N+1`, `(N-1)/2` or `max(0,N-2)` into a tract dim, with its
/// symbols from `scope`. Nothing is added to the scope unless the whole text is valid.
pub fn parse_dim(scope: &SymbolScope, text: &str) -> Result<TDim, DimParseError> {
    run(&Check, text, Mode::Dim)?;
    let clause = run(&Build(scope), text, Mode::Dim)?.into_iter().next().ok_or(DimParseError::Empty)?;
    Ok(clause.lhs.dim)
}

/// Parses an assumption such as `N>=2`, or several joined with `&&` (`N>=2 && M==2*N`), one
/// [`Assumption`] each, with their symbols from `scope`. Hand tract each one's
/// [`Assumption::tract_text`]. Refused as tract cannot use them: `min`/`max`, and equalities that
/// would define a symbol in terms of itself, alone or with the equalities already in `scope`.
pub fn parse_assumption(scope: &SymbolScope, text: &str) -> Result<Vec<Assumption>, DimParseError> {
    run(&Check, text, Mode::Assumption)?;
    let assumptions = run(&Build(scope), text, Mode::Assumption)?
        .into_iter()
        .map(|clause| {
            let (comparison, rhs) =
                clause.rhs.ok_or(DimParseError::NoComparison { start: clause.start, end: clause.end })?;
            Ok(Assumption {
                text: format!("{}{}{}", clause.lhs.text, comparison.as_str(), rhs.text),
                lhs: clause.lhs.dim,
                comparison,
                rhs: rhs.dim,
                symbols: clause.symbols,
            })
        })
        .collect::<Result<Vec<_>, DimParseError>>()?;
    super::cycles::check_substitutions(scope, &assumptions)?;
    Ok(assumptions)
}

/// The canonical text of a dim expression (what tract is handed for an assumption's side).
#[cfg(test)]
pub(super) fn canonical_dim(text: &str) -> Result<String, DimParseError> {
    let clause = run(&Check, text, Mode::Dim)?.into_iter().next().ok_or(DimParseError::Empty)?;
    Ok(clause.lhs.text)
}

/// The symbols a dim expression or an assumption names, in order of first appearance, once each
/// (function names excluded). The text must be valid: a dim, or comparisons joined with `&&`.
pub fn symbols_in(text: &str) -> Result<Vec<String>, DimParseError> {
    let mut all: Vec<String> = vec![];
    for clause in run(&Check, text, Mode::Either)? {
        for s in clause.symbols {
            if !all.contains(&s) {
                all.push(s);
            }
        }
    }
    Ok(all)
}

/// What a text must be.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    /// One expression.
    Dim,
    /// Comparisons joined with `&&`.
    Assumption,
    /// Either.
    Either,
}

/// One side of a comparison (or the whole dim): the built value and its canonical text.
struct Side<D> {
    dim: D,
    text: String,
}

/// One expression or comparison between `&&`s.
struct Clause<D> {
    lhs: Side<D>,
    rhs: Option<(Comparison, Side<D>)>,
    symbols: Vec<String>,
    start: usize,
    end: usize,
}

/// How tightly a value's canonical text binds, in tract's grammar. tract reads `a+b-c` as `a+(b-c)`
/// (its `-` binds tighter than `+`): the same value as our `(a+b)-c`, so sums and differences print
/// flat, keeping the text's nesting no deeper than the parsed text's.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Prec {
    Sum,
    Product,
    Unary,
    Atom,
}

/// A value read so far, with what the limits need to know of it.
struct Value<D> {
    dim: D,
    /// Canonical text.
    text: String,
    prec: Prec,
    /// The text is an atom followed by `/k` divisions (`x/2/3`), which tract reads left to right.
    div_chain: bool,
    /// Its value, when it names no symbol.
    constant: Option<i64>,
    /// Bounds, over the expression written as a polynomial divided by a common denominator: the sum of
    /// the numerator's absolute coefficients, the denominator, the number of terms.
    numer: u64,
    denom: u64,
    terms: u64,
    /// How deep `min`/`max` nest in it.
    minmax: usize,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Op {
    Add,
    Sub,
    Mul,
    Div,
    Neg,
}

impl Op {
    fn prec(self) -> u8 {
        match self {
            Op::Add | Op::Sub => 1,
            Op::Mul | Op::Div => 2,
            Op::Neg => 3,
        }
    }

    fn symbol(self) -> &'static str {
        match self {
            Op::Add => "+",
            Op::Sub | Op::Neg => "-",
            Op::Mul => "*",
            Op::Div => "/",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Func {
    Min,
    Max,
}

impl Func {
    fn name(self) -> &'static str {
        match self {
            Func::Min => "min",
            Func::Max => "max",
        }
    }
}

/// A function call whose `(` is open.
#[derive(Debug, Clone, Copy)]
struct Call {
    func: Func,
    column: usize,
    /// Arguments complete so far (each ended by a comma).
    args: usize,
}

/// An entry of the operator stack.
#[derive(Debug, Clone, Copy)]
enum Pending {
    Op { op: Op, column: usize },
    Open { column: usize, call: Option<Call> },
}

const OPERAND: &str = "expected a number, a symbol, '(' or '-'";
const OPERATOR: &str = "expected an operator (+ - * /) before it";

/// The parser's state over one text.
struct Parser<'a, 'b, B: Dims> {
    build: &'b B,
    lexer: Lexer<'a>,
    mode: Mode,
    values: Vec<Value<B::Dim>>,
    pending: Vec<Pending>,
    depth: usize,
    operands: usize,
    divisions: usize,
    calls: usize,
    clauses: Vec<Clause<B::Dim>>,
    lhs: Option<(Side<B::Dim>, Comparison)>,
    clause_start: Option<usize>,
    symbols: Vec<String>,
}

/// Runs the parser over a text.
fn run<B: Dims>(build: &B, text: &str, mode: Mode) -> Result<Vec<Clause<B::Dim>>, DimParseError> {
    if text.len() > MAX_LEN {
        return Err(DimParseError::TooLong { len: text.len() });
    }
    if text.trim().is_empty() {
        return Err(DimParseError::Empty);
    }
    let mut p = Parser {
        build,
        lexer: Lexer::new(text),
        mode,
        values: vec![],
        pending: vec![],
        depth: 0,
        operands: 0,
        divisions: 0,
        calls: 0,
        clauses: vec![],
        lhs: None,
        clause_start: None,
        symbols: vec![],
    };
    let mut expect_operand = true;
    // Set right after `min(` / `max(`, to tell `min()` apart from other misplaced `)`.
    let mut call_opened = false;
    loop {
        let token = p.lexer.next_token()?;
        p.clause_start.get_or_insert(token.column);
        let opened = std::mem::take(&mut call_opened);
        if expect_operand {
            match token.tok {
                Tok::Int(digits) => {
                    p.int(digits, token.column)?;
                    expect_operand = false;
                }
                Tok::Ident(name) if p.lexer.peek()?.tok == Tok::Open => {
                    let func = match name {
                        "min" => Func::Min,
                        "max" => Func::Max,
                        _ => {
                            return Err(DimParseError::UnknownFunction { name: name.to_string(), column: token.column })
                        }
                    };
                    let open = p.lexer.next_token()?;
                    p.open(open.column, Some(Call { func, column: token.column, args: 0 }))?;
                    call_opened = true;
                }
                Tok::Ident(name) => {
                    p.symbol(name, token.column)?;
                    expect_operand = false;
                }
                Tok::Open => p.open(token.column, None)?,
                Tok::Minus => p.negate(token.column),
                Tok::Close if opened => {
                    if let Some(Pending::Open { call: Some(call), .. }) = p.pending.last() {
                        return Err(DimParseError::NoArguments { name: call.func.name(), column: call.column });
                    }
                    return Err(unexpected(token.text, token.column, OPERAND));
                }
                Tok::End => return Err(DimParseError::UnexpectedEnd { column: token.column }),
                _ => return Err(unexpected(token.text, token.column, OPERAND)),
            }
        } else {
            match token.tok {
                Tok::Plus => p.binary(Op::Add, token.column)?,
                Tok::Minus => p.binary(Op::Sub, token.column)?,
                Tok::Star => p.binary(Op::Mul, token.column)?,
                Tok::Slash => p.binary(Op::Div, token.column)?,
                Tok::Close => p.close(token.column)?,
                Tok::Comma => p.comma(token.column)?,
                Tok::Cmp(c) => p.compare(c, token)?,
                Tok::And => p.and(token)?,
                Tok::End => {
                    p.finish_clause(token.column)?;
                    break;
                }
                Tok::Int(_) | Tok::Ident(_) | Tok::Open => return Err(unexpected(token.text, token.column, OPERATOR)),
            }
            // After an operator, a comma, a comparison or `&&`, an operand; after `)`, an operator.
            expect_operand = token.tok != Tok::Close;
        }
    }
    Ok(p.clauses)
}

impl<B: Dims> Parser<'_, '_, B> {
    fn count_operand(&mut self, column: usize) -> Result<(), DimParseError> {
        self.operands += 1;
        if self.operands > MAX_OPERANDS {
            return Err(DimParseError::TooManyOperands { column });
        }
        Ok(())
    }

    fn int(&mut self, digits: &str, column: usize) -> Result<(), DimParseError> {
        self.count_operand(column)?;
        let v =
            digits.parse::<i64>().map_err(|_| DimParseError::IntegerTooLarge { digits: digits.to_string(), column })?;
        self.values.push(self.constant(v));
        Ok(())
    }

    fn symbol(&mut self, name: &str, column: usize) -> Result<(), DimParseError> {
        self.count_operand(column)?;
        if !self.symbols.iter().any(|s| s == name) {
            self.symbols.push(name.to_string());
        }
        self.values.push(Value {
            dim: self.build.sym(name),
            text: name.to_string(),
            prec: Prec::Atom,
            div_chain: false,
            constant: None,
            numer: 1,
            denom: 1,
            terms: 1,
            minmax: 0,
        });
        Ok(())
    }

    fn constant(&self, v: i64) -> Value<B::Dim> {
        Value {
            dim: self.build.int(v),
            text: v.to_string(),
            prec: if v < 0 { Prec::Unary } else { Prec::Atom },
            div_chain: false,
            constant: Some(v),
            numer: v.unsigned_abs(),
            denom: 1,
            terms: 1,
            minmax: 0,
        }
    }

    fn open(&mut self, column: usize, call: Option<Call>) -> Result<(), DimParseError> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return Err(DimParseError::TooDeep { column });
        }
        self.pending.push(Pending::Open { column, call });
        Ok(())
    }

    /// A unary minus; two in a row cancel, so a long run of them costs nothing later.
    fn negate(&mut self, column: usize) {
        if let Some(Pending::Op { op: Op::Neg, .. }) = self.pending.last() {
            self.pending.pop();
        } else {
            self.pending.push(Pending::Op { op: Op::Neg, column });
        }
    }

    fn binary(&mut self, op: Op, column: usize) -> Result<(), DimParseError> {
        while let Some(&Pending::Op { op: top, column: at }) = self.pending.last() {
            if top.prec() < op.prec() {
                break;
            }
            self.pending.pop();
            self.apply(top, at)?;
        }
        self.pending.push(Pending::Op { op, column });
        Ok(())
    }

    /// Applies the pending operators down to the innermost open parenthesis, which is popped and
    /// returned (`None` at the bottom of the stack).
    fn unwind(&mut self) -> Result<Option<(usize, Option<Call>)>, DimParseError> {
        while let Some(entry) = self.pending.pop() {
            match entry {
                Pending::Op { op, column } => self.apply(op, column)?,
                Pending::Open { column, call } => return Ok(Some((column, call))),
            }
        }
        Ok(None)
    }

    fn close(&mut self, column: usize) -> Result<(), DimParseError> {
        let Some((_, call)) = self.unwind()? else { return Err(DimParseError::Unmatched { column }) };
        self.depth -= 1;
        if let Some(call) = call {
            self.call(call.func, call.args + 1, call.column)?;
        }
        Ok(())
    }

    fn comma(&mut self, column: usize) -> Result<(), DimParseError> {
        match self.unwind()? {
            Some((open, Some(call))) => {
                self.pending.push(Pending::Open { column: open, call: Some(Call { args: call.args + 1, ..call }) });
                Ok(())
            }
            _ => Err(unexpected(",", column, "commas only separate the arguments of min(..) and max(..)")),
        }
    }

    /// Applies every pending operator of the current side; an open parenthesis left is an error.
    fn finish_side(&mut self, column: usize) -> Result<Side<B::Dim>, DimParseError> {
        if let Some((open, _)) = self.unwind()? {
            return Err(DimParseError::Unclosed { column: open });
        }
        let value = self.pop("", column)?;
        Ok(Side { dim: value.dim, text: value.text })
    }

    fn compare(&mut self, c: Comparison, token: Token<'_>) -> Result<(), DimParseError> {
        if self.mode == Mode::Dim {
            return Err(unexpected(token.text, token.column, "a dim is an expression such as N+1, not a comparison"));
        }
        if self.lhs.is_some() {
            return Err(unexpected(
                token.text,
                token.column,
                "an assumption is one comparison such as N>=2; join several with && or separate --assume flags",
            ));
        }
        if self.pending.iter().any(|p| matches!(p, Pending::Open { .. })) {
            return Err(unexpected(token.text, token.column, "compare whole expressions, not inside parentheses"));
        }
        let side = self.finish_side(token.column)?;
        self.lhs = Some((side, c));
        Ok(())
    }

    fn and(&mut self, token: Token<'_>) -> Result<(), DimParseError> {
        if self.mode == Mode::Dim {
            return Err(unexpected(token.text, token.column, "a dim is an expression such as N+1, not a condition"));
        }
        self.finish_clause(token.column)
    }

    /// Ends the clause before `column` (at `&&` or the end of the text).
    fn finish_clause(&mut self, column: usize) -> Result<(), DimParseError> {
        let side = self.finish_side(column)?;
        let start = self.clause_start.take().unwrap_or(column);
        let end = column.saturating_sub(1).max(start);
        let symbols = std::mem::take(&mut self.symbols);
        let clause = match self.lhs.take() {
            Some((lhs, c)) => Clause { lhs, rhs: Some((c, side)), symbols, start, end },
            None if self.mode == Mode::Assumption => return Err(DimParseError::NoComparison { start, end }),
            None => Clause { lhs: side, rhs: None, symbols, start, end },
        };
        self.clauses.push(clause);
        Ok(())
    }

    /// The last value read; the grammar guarantees one wherever this is called, and an operator
    /// without its operand is what a missing one would mean.
    fn pop(&mut self, op: &str, column: usize) -> Result<Value<B::Dim>, DimParseError> {
        self.values.pop().ok_or_else(|| unexpected(op, column, OPERAND))
    }

    fn apply(&mut self, op: Op, column: usize) -> Result<(), DimParseError> {
        let b = self.pop(op.symbol(), column)?;
        let value = if op == Op::Neg {
            self.neg(b, column)?
        } else {
            let a = self.pop(op.symbol(), column)?;
            match op {
                Op::Div => self.div(a, b, column)?,
                _ => self.arith(op, a, b, column)?,
            }
        };
        self.values.push(value);
        Ok(())
    }

    fn neg(&self, a: Value<B::Dim>, column: usize) -> Result<Value<B::Dim>, DimParseError> {
        if let Some(v) = a.constant {
            return Ok(self.constant(v.checked_neg().ok_or(DimParseError::Overflow { column })?));
        }
        let text = if a.prec == Prec::Atom { format!("-{}", a.text) } else { format!("-({})", a.text) };
        Ok(Value { dim: self.build.neg(a.dim), text, prec: Prec::Unary, div_chain: false, constant: None, ..a })
    }

    /// `+`, `-` and `*`.
    fn arith(&self, op: Op, a: Value<B::Dim>, b: Value<B::Dim>, column: usize) -> Result<Value<B::Dim>, DimParseError> {
        if let (Some(x), Some(y)) = (a.constant, b.constant) {
            let v = match op {
                Op::Add => x.checked_add(y),
                Op::Sub => x.checked_sub(y),
                _ => x.checked_mul(y),
            };
            return Ok(self.constant(v.ok_or(DimParseError::Overflow { column })?));
        }
        let denom = magnitude(a.denom.checked_mul(b.denom), column)?;
        let (numer, terms) = if op == Op::Mul {
            (a.numer.checked_mul(b.numer), a.terms.checked_mul(b.terms))
        } else {
            let scaled_a = a.numer.checked_mul(b.denom);
            let scaled_b = b.numer.checked_mul(a.denom);
            (scaled_a.zip(scaled_b).and_then(|(x, y)| x.checked_add(y)), a.terms.checked_add(b.terms))
        };
        let numer = magnitude(numer, column)?;
        let terms = terms.filter(|&t| t <= MAX_TERMS).ok_or(DimParseError::TooManyTerms { column })?;
        let (text, prec) = match op {
            Op::Add => (format!("{}+{}", a.text, b.text), Prec::Sum),
            Op::Sub => (format!("{}-{}", a.text, paren_below(&b, Prec::Product)), Prec::Sum),
            _ => (format!("{}*{}", paren_below(&a, Prec::Product), paren_below(&b, Prec::Unary)), Prec::Product),
        };
        let dim = match op {
            Op::Add => self.build.add(a.dim, b.dim),
            Op::Sub => self.build.sub(a.dim, b.dim),
            _ => self.build.mul(a.dim, b.dim),
        };
        Ok(Value {
            dim,
            text,
            prec,
            div_chain: false,
            constant: None,
            numer,
            denom,
            terms,
            minmax: a.minmax.max(b.minmax),
        })
    }

    fn div(&mut self, a: Value<B::Dim>, b: Value<B::Dim>, column: usize) -> Result<Value<B::Dim>, DimParseError> {
        let d = b.constant.ok_or(DimParseError::SymbolicDivisor { column })?;
        if d <= 0 {
            return Err(DimParseError::NonPositiveDivisor { divisor: d, column });
        }
        if let Some(x) = a.constant {
            return Ok(self.constant(x.div_euclid(d)));
        }
        if d == 1 {
            return Ok(a);
        }
        self.divisions += 1;
        if self.divisions > MAX_DIVISIONS {
            return Err(DimParseError::TooManyDivisions { column });
        }
        let denom = magnitude(a.denom.checked_mul(d.unsigned_abs()), column)?;
        let base = if a.prec == Prec::Atom || a.div_chain { a.text } else { format!("({})", a.text) };
        Ok(Value {
            dim: self.build.div(a.dim, d.unsigned_abs()),
            text: format!("{base}/{d}"),
            prec: Prec::Product,
            div_chain: true,
            constant: None,
            denom,
            ..a
        })
    }

    /// `min(..)` or `max(..)` over the last `n` values.
    fn call(&mut self, func: Func, n: usize, column: usize) -> Result<(), DimParseError> {
        let Some(first) = self.values.len().checked_sub(n) else {
            return Err(unexpected(func.name(), column, OPERAND));
        };
        let mut args = self.values.split_off(first);
        if args.len() == 1 {
            // min(x) is x.
            self.values.append(&mut args);
            return Ok(());
        }
        let constants: Option<Vec<i64>> = args.iter().map(|a| a.constant).collect();
        if let Some(values) = constants {
            let folded = match func {
                Func::Min => values.iter().min(),
                Func::Max => values.iter().max(),
            };
            let v = *folded.ok_or(DimParseError::NoArguments { name: func.name(), column })?;
            self.values.push(self.constant(v));
            return Ok(());
        }
        if self.mode == Mode::Assumption {
            return Err(DimParseError::MinMaxInAssumption { column });
        }
        self.calls += 1;
        if self.calls > MAX_MINMAX {
            return Err(DimParseError::TooManyMinMax { column });
        }
        let minmax = args.iter().map(|a| a.minmax).max().unwrap_or(0) + 1;
        if minmax > MAX_MINMAX_NESTING {
            return Err(DimParseError::MinMaxTooDeep { column });
        }
        let mut denom = 1u64;
        let mut terms = 0u64;
        for a in &args {
            denom = magnitude(denom.checked_mul(a.denom), column)?;
            terms =
                a.terms.checked_add(terms).filter(|&t| t <= MAX_TERMS).ok_or(DimParseError::TooManyTerms { column })?;
        }
        let mut numer = 0u64;
        for a in &args {
            let scaled = (denom / a.denom.max(1)).checked_mul(a.numer);
            numer = numer.max(magnitude(scaled, column)?);
        }
        let text = format!("{}({})", func.name(), args.iter().map(|a| a.text.as_str()).collect::<Vec<_>>().join(","));
        let dims = args.into_iter().map(|a| a.dim).collect();
        let dim = match func {
            Func::Min => self.build.min(dims),
            Func::Max => self.build.max(dims),
        };
        self.values.push(Value {
            dim,
            text,
            prec: Prec::Atom,
            div_chain: false,
            constant: None,
            numer,
            denom,
            terms,
            minmax,
        });
        Ok(())
    }
}

/// A magnitude within [`MAX_MAGNITUDE`], or the overflow error.
fn magnitude(v: Option<u64>, column: usize) -> Result<u64, DimParseError> {
    v.filter(|&v| v <= MAX_MAGNITUDE).ok_or(DimParseError::Overflow { column })
}

/// The value's text, in parentheses if it binds less tightly than `prec`.
fn paren_below<D>(v: &Value<D>, prec: Prec) -> String {
    if v.prec < prec {
        format!("({})", v.text)
    } else {
        v.text.clone()
    }
}
