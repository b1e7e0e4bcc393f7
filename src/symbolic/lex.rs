//! Tokens of dim expressions and assumptions. Every valid token is ASCII, so the lexer stops at the
//! first other character and columns (1-based) are byte positions plus one.

use super::error::DimParseError;
use super::Comparison;

/// What a token is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Tok<'a> {
    /// Decimal digits.
    Int(&'a str),
    /// `[A-Za-z_][A-Za-z0-9_.]*`.
    Ident(&'a str),
    Plus,
    Minus,
    Star,
    Slash,
    Open,
    Close,
    Comma,
    Cmp(Comparison),
    /// `&&`.
    And,
    /// The end of the text.
    End,
}

/// A token, where it starts and how it is written.
#[derive(Debug, Clone, Copy)]
pub(super) struct Token<'a> {
    pub tok: Tok<'a>,
    pub column: usize,
    pub text: &'a str,
}

/// Splits a text into tokens, one at a time, with one token of lookahead.
pub(super) struct Lexer<'a> {
    text: &'a str,
    pos: usize,
    peeked: Option<Token<'a>>,
}

impl<'a> Lexer<'a> {
    pub(crate) fn new(text: &'a str) -> Self {
        Lexer { text, pos: 0, peeked: None }
    }

    /// The next token, without consuming it.
    pub(crate) fn peek(&mut self) -> Result<Token<'a>, DimParseError> {
        if let Some(t) = self.peeked {
            return Ok(t);
        }
        let t = self.scan()?;
        self.peeked = Some(t);
        Ok(t)
    }

    /// The next token.
    pub(crate) fn next_token(&mut self) -> Result<Token<'a>, DimParseError> {
        match self.peeked.take() {
            Some(t) => Ok(t),
            None => self.scan(),
        }
    }

    fn scan(&mut self) -> Result<Token<'a>, DimParseError> {
        let bytes = self.text.as_bytes();
        while self.pos < bytes.len() && matches!(bytes[self.pos], b' ' | b'\t' | b'\n' | b'\r') {
            self.pos += 1;
        }
        let start = self.pos;
        let column = start + 1;
        let Some(&first) = bytes.get(start) else {
            return Ok(Token { tok: Tok::End, column, text: "" });
        };
        let second = bytes.get(start + 1).copied();
        let run =
            |pred: fn(u8) -> bool| bytes[start..].iter().position(|&b| !pred(b)).map_or(bytes.len(), |n| start + n);
        let (tok, end) = match first {
            b'0'..=b'9' => {
                let end = run(|b| b.is_ascii_digit());
                (Tok::Int(&self.text[start..end]), end)
            }
            b'A'..=b'Z' | b'a'..=b'z' | b'_' => {
                let end = run(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'.');
                (Tok::Ident(&self.text[start..end]), end)
            }
            b'+' => (Tok::Plus, start + 1),
            b'-' => (Tok::Minus, start + 1),
            b'*' => (Tok::Star, start + 1),
            b'/' => (Tok::Slash, start + 1),
            b'(' => (Tok::Open, start + 1),
            b')' => (Tok::Close, start + 1),
            b',' => (Tok::Comma, start + 1),
            b'=' if second == Some(b'=') => (Tok::Cmp(Comparison::Eq), start + 2),
            b'<' if second == Some(b'=') => (Tok::Cmp(Comparison::Le), start + 2),
            b'>' if second == Some(b'=') => (Tok::Cmp(Comparison::Ge), start + 2),
            b'<' => (Tok::Cmp(Comparison::Lt), start + 1),
            b'>' => (Tok::Cmp(Comparison::Gt), start + 1),
            b'&' if second == Some(b'&') => (Tok::And, start + 2),
            b'=' => return Err(unexpected("=", column, "write == to compare")),
            b'!' if second == Some(b'=') => {
                return Err(unexpected("!=", column, "comparisons are ==, <=, >=, < and >"));
            }
            b'&' => return Err(unexpected("&", column, "join assumptions with &&")),
            b'|' if second == Some(b'|') => {
                return Err(unexpected("||", column, "assumptions can only be joined with && (all of them hold)"));
            }
            _ => {
                let ch = self.text[start..].chars().next().unwrap_or('\u{fffd}');
                return Err(DimParseError::BadCharacter { ch, column });
            }
        };
        self.pos = end;
        Ok(Token { tok, column, text: &self.text[start..end] })
    }
}

/// An [`DimParseError::Unexpected`] error.
pub(super) fn unexpected(found: &str, column: usize, hint: &'static str) -> DimParseError {
    DimParseError::Unexpected { found: found.to_string(), column, hint }
}
