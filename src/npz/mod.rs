//! `.npz` files in and out: numpy's archive of named arrays (`np.savez`, `np.savez_compressed`), a zip
//! file whose entries are `.npy` files, `NAME.npy` holding the array `NAME`.
//!
//! Our own zip reader and writer, for what numpy writes and reads: entries stored or deflated (the
//! deflate decoder is flate2's, already in the tree for PNG and TIFF), zip64 sizes and offsets, names in
//! UTF-8. Every offset and size read from the file is checked against the file and against each other
//! with checked arithmetic; every entry's CRC-32 and size are verified; a malformed archive is one clear
//! error (`ZipError`), never a panic or an allocation the file cannot back. Arrays are decoded
//! straight into the tensor's buffer by the `.npy` reader, so memory holds each array once.

mod format;
mod read;
mod write;

pub use read::{list_npz, read_npz};
pub use write::{write_npz, write_npz_to};

#[cfg(test)]
mod tests;
