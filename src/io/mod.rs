//! Files in and out, safely: only regular files are read, with bounded sizes ([`regular`]), and every
//! file written goes to a temporary file in the same folder and is renamed over its target once
//! complete ([`atomic`]).

pub(crate) mod atomic;
pub(crate) mod regular;

#[cfg(test)]
mod tests;
