//! numpy's `.npy` header, parsed here once: the magic, the version (1.0, 2.0 or 3.0), the header
//! length, and the header itself, a Python dict literal with exactly the keys `descr` (a type string),
//! `fortran_order` (`True`/`False`) and `shape` (a tuple of integers). A flat scan with no recursion;
//! a duplicated, unknown or missing key is an error, so every reader of a file sees the same header.

use thiserror::Error;

/// The longest header read (numpy itself refuses headers over 10,000 bytes by default).
pub const MAX_HEADER_LEN: usize = 65536;
/// The most dims a shape may have (numpy stops at 64; sliceops writes higher ranks, which tract allows).
pub const MAX_DIMS: usize = 1024;
/// The magic string that starts every `.npy` file.
pub(crate) const MAGIC: &[u8; 6] = b"\x93NUMPY";

/// What a `.npy` header says.
#[derive(Debug, Clone, PartialEq)]
pub struct NpyHeader {
    /// The type descriptor, e.g. `<f4`.
    pub descr: String,
    /// Whether the data is in Fortran (column-major) order.
    pub fortran_order: bool,
    /// The shape.
    pub shape: Vec<usize>,
    /// Where the data starts (bytes from the start of the file).
    pub data_offset: usize,
}

/// Why a `.npy` header cannot be read.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum NpyHeaderError {
    /// The file does not start with numpy's magic string.
    #[error("not a .npy file (it does not start with numpy's magic string)")]
    BadMagic,
    /// A format version other than 1.0, 2.0 and 3.0.
    #[error("unsupported .npy format version {0}.{1}")]
    Version(u8, u8),
    /// The file ends inside the header.
    #[error("truncated .npy header: it claims {claimed} bytes but the file holds {available}")]
    Truncated {
        /// Header bytes claimed (with the prefix).
        claimed: u64,
        /// Bytes available.
        available: u64,
    },
    /// A header longer than [`MAX_HEADER_LEN`].
    #[error("the .npy header is {0} bytes long; the limit is {MAX_HEADER_LEN}")]
    TooLong(u64),
    /// Bytes outside printable ASCII.
    #[error("the .npy header is not ASCII text")]
    NotText,
    /// Something other than the dict literal numpy writes.
    #[error("unreadable .npy header at byte {at}: {what}")]
    Syntax {
        /// Offset in the header text.
        at: usize,
        /// What was expected.
        what: &'static str,
    },
    /// A key given twice.
    #[error("the .npy header has the key '{0}' twice")]
    Duplicate(String),
    /// A key other than `descr`, `fortran_order` and `shape`.
    #[error("the .npy header has an unknown key '{0}'")]
    UnknownKey(String),
    /// A key missing.
    #[error("the .npy header has no '{0}'")]
    Missing(&'static str),
    /// A key with a value of the wrong kind.
    #[error("the .npy header's '{key}' {what}")]
    BadValue {
        /// The key.
        key: &'static str,
        /// What is wrong with its value.
        what: &'static str,
    },
    /// A dim too large for this machine.
    #[error("the .npy header's shape has a dim too large: {0}")]
    DimTooLarge(String),
    /// More than [`MAX_DIMS`] dims.
    #[error("the .npy header's shape has more than {MAX_DIMS} dims")]
    TooManyDims,
}

/// Where the header text is: its version, its offset and its length, read from the first bytes of a
/// file (`prefix` holds at least 12 bytes, or the whole file if shorter).
pub(crate) fn header_span(prefix: &[u8]) -> Result<(usize, usize), NpyHeaderError> {
    if prefix.len() < 8 || &prefix[..6] != MAGIC {
        return Err(NpyHeaderError::BadMagic);
    }
    let (major, minor) = (prefix[6], prefix[7]);
    let (start, len) = match (major, minor) {
        (1, 0) if prefix.len() >= 10 => (10, u64::from(u16::from_le_bytes([prefix[8], prefix[9]]))),
        (2 | 3, 0) if prefix.len() >= 12 => {
            (12, u64::from(u32::from_le_bytes([prefix[8], prefix[9], prefix[10], prefix[11]])))
        }
        (1..=3, 0) => return Err(NpyHeaderError::Truncated { claimed: 12, available: prefix.len() as u64 }),
        _ => return Err(NpyHeaderError::Version(major, minor)),
    };
    if len > MAX_HEADER_LEN as u64 {
        return Err(NpyHeaderError::TooLong(len));
    }
    Ok((start, len as usize))
}

/// Parses a `.npy` header from the start of a file (the data may follow or not).
pub fn parse_header(bytes: &[u8]) -> Result<NpyHeader, NpyHeaderError> {
    let (start, len) = header_span(&bytes[..bytes.len().min(12)])?;
    let end = start + len;
    let text = bytes
        .get(start..end)
        .ok_or(NpyHeaderError::Truncated { claimed: end as u64, available: bytes.len() as u64 })?;
    let (descr, fortran_order, shape) = parse_dict(text)?;
    Ok(NpyHeader { descr, fortran_order, shape, data_offset: end })
}

/// A value of the header dict.
enum PyValue {
    Str(String),
    Bool(bool),
    Tuple(Vec<usize>),
}

/// A cursor over the header text.
struct Scan<'a> {
    text: &'a [u8],
    at: usize,
}

impl Scan<'_> {
    fn skip_space(&mut self) {
        while self.at < self.text.len() && matches!(self.text[self.at], b' ' | b'\t' | b'\n' | b'\r') {
            self.at += 1;
        }
    }

    /// The next non-space byte, not consumed.
    fn peek(&mut self) -> Option<u8> {
        self.skip_space();
        self.text.get(self.at).copied()
    }

    fn error(&self, what: &'static str) -> NpyHeaderError {
        NpyHeaderError::Syntax { at: self.at, what }
    }

    fn expect(&mut self, byte: u8, what: &'static str) -> Result<(), NpyHeaderError> {
        if self.peek() != Some(byte) {
            return Err(self.error(what));
        }
        self.at += 1;
        Ok(())
    }

    /// A quoted string without escapes.
    fn string(&mut self) -> Result<String, NpyHeaderError> {
        let quote = self.peek().filter(|q| matches!(q, b'\'' | b'"')).ok_or_else(|| self.error("expected a string"))?;
        let start = self.at + 1;
        let len =
            self.text[start..].iter().position(|&b| b == quote).ok_or_else(|| self.error("unterminated string"))?;
        let body = &self.text[start..start + len];
        if body.contains(&b'\\') {
            return Err(self.error("escape sequences are not supported"));
        }
        self.at = start + len + 1;
        // The text was checked to be ASCII.
        Ok(body.iter().map(|&b| b as char).collect())
    }

    /// A word such as `True`, `False`.
    fn word(&mut self) -> &[u8] {
        self.skip_space();
        let start = self.at;
        while self.at < self.text.len() && self.text[self.at].is_ascii_alphanumeric() {
            self.at += 1;
        }
        &self.text[start..self.at]
    }

    /// A non-negative integer, with Python 2's optional `L` suffix.
    fn dim(&mut self) -> Result<usize, NpyHeaderError> {
        self.skip_space();
        if self.text.get(self.at) == Some(&b'-') {
            return Err(NpyHeaderError::BadValue { key: "shape", what: "has a negative dim" });
        }
        let start = self.at;
        while self.at < self.text.len() && self.text[self.at].is_ascii_digit() {
            self.at += 1;
        }
        if start == self.at {
            return Err(NpyHeaderError::BadValue { key: "shape", what: "is not a tuple of integers" });
        }
        let digits: String = self.text[start..self.at].iter().map(|&b| b as char).collect();
        if self.text.get(self.at) == Some(&b'L') {
            self.at += 1;
        }
        digits.parse::<usize>().map_err(|_| NpyHeaderError::DimTooLarge(digits))
    }

    fn tuple(&mut self) -> Result<Vec<usize>, NpyHeaderError> {
        self.expect(b'(', "expected '('")?;
        let mut dims = vec![];
        loop {
            if self.peek() == Some(b')') {
                self.at += 1;
                return Ok(dims);
            }
            if dims.len() == MAX_DIMS {
                return Err(NpyHeaderError::TooManyDims);
            }
            dims.push(self.dim()?);
            match self.peek() {
                Some(b',') => self.at += 1,
                Some(b')') => {}
                _ => return Err(self.error("expected ',' or ')' in the shape")),
            }
        }
    }

    fn value(&mut self, key: &'static str) -> Result<PyValue, NpyHeaderError> {
        match self.peek() {
            Some(b'\'' | b'"') => Ok(PyValue::Str(self.string()?)),
            Some(b'(') => Ok(PyValue::Tuple(self.tuple()?)),
            Some(b'[' | b'{') if key == "descr" => {
                Err(NpyHeaderError::BadValue { key, what: "describes a structured dtype, which is not supported" })
            }
            _ => {
                let start = self.at;
                match self.word() {
                    b"True" => Ok(PyValue::Bool(true)),
                    b"False" => Ok(PyValue::Bool(false)),
                    _ => Err(NpyHeaderError::Syntax { at: start, what: "expected a string, True, False or a tuple" }),
                }
            }
        }
    }
}

/// The three values of the header dict.
fn parse_dict(text: &[u8]) -> Result<(String, bool, Vec<usize>), NpyHeaderError> {
    if !text.iter().all(|&b| b.is_ascii() && (b >= b' ' || matches!(b, b'\t' | b'\n' | b'\r'))) {
        return Err(NpyHeaderError::NotText);
    }
    let mut s = Scan { text, at: 0 };
    s.expect(b'{', "expected '{'")?;
    let (mut descr, mut fortran, mut shape) = (None, None, None);
    loop {
        if s.peek() == Some(b'}') {
            s.at += 1;
            break;
        }
        let key = s.string()?;
        let key: &'static str = match key.as_str() {
            "descr" => "descr",
            "fortran_order" => "fortran_order",
            "shape" => "shape",
            _ => return Err(NpyHeaderError::UnknownKey(key)),
        };
        s.expect(b':', "expected ':'")?;
        let value = s.value(key)?;
        let slot_taken = match (key, value) {
            ("descr", PyValue::Str(v)) => descr.replace(v).is_some(),
            ("fortran_order", PyValue::Bool(v)) => fortran.replace(v).is_some(),
            ("shape", PyValue::Tuple(v)) => shape.replace(v).is_some(),
            ("descr", _) => return Err(NpyHeaderError::BadValue { key, what: "is not a string" }),
            ("fortran_order", _) => return Err(NpyHeaderError::BadValue { key, what: "is not True or False" }),
            _ => return Err(NpyHeaderError::BadValue { key, what: "is not a tuple of integers" }),
        };
        if slot_taken {
            return Err(NpyHeaderError::Duplicate(key.to_string()));
        }
        match s.peek() {
            Some(b',') => s.at += 1,
            Some(b'}') => {}
            _ => return Err(s.error("expected ',' or '}'")),
        }
    }
    if s.peek().is_some() {
        return Err(s.error("unexpected text after the dict"));
    }
    Ok((
        descr.ok_or(NpyHeaderError::Missing("descr"))?,
        fortran.ok_or(NpyHeaderError::Missing("fortran_order"))?,
        shape.ok_or(NpyHeaderError::Missing("shape"))?,
    ))
}
