//! Symbol names made from model text.

/// A symbol name made of letters, digits and `_`, starting with a letter.
pub(crate) fn symbol_name(text: &str) -> String {
    let mut s: String = text.chars().map(|c| if c.is_ascii_alphanumeric() { c } else { '_' }).collect();
    if !s.starts_with(|c: char| c.is_ascii_alphabetic()) {
        s.insert(0, 'n');
    }
    s
}
