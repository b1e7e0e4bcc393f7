//! The zip records an `.npz` uses (PKWARE's APPNOTE: local file header, central directory header, end
//! of central directory, and their zip64 forms), and the typed errors of reading them.

/// Local file header signature (`PK\x03\x04`).
pub(crate) const LOCAL_SIG: u32 = 0x0403_4b50;
/// Central directory file header signature (`PK\x01\x02`).
pub(crate) const CENTRAL_SIG: u32 = 0x0201_4b50;
/// End of central directory record signature (`PK\x05\x06`).
pub(crate) const EOCD_SIG: u32 = 0x0605_4b50;
/// Zip64 end of central directory record signature (`PK\x06\x06`).
pub(crate) const ZIP64_EOCD_SIG: u32 = 0x0606_4b50;
/// Zip64 end of central directory locator signature (`PK\x06\x07`).
pub(crate) const ZIP64_LOCATOR_SIG: u32 = 0x0706_4b50;
/// The extra field holding zip64 sizes and offsets.
pub(crate) const ZIP64_EXTRA_ID: u16 = 0x0001;
/// Fixed sizes of the records (before their variable-length names, extras and comments).
pub(crate) const LOCAL_LEN: usize = 30;
pub(crate) const CENTRAL_LEN: usize = 46;
pub(crate) const EOCD_LEN: usize = 22;
pub(crate) const ZIP64_EOCD_LEN: usize = 56;
pub(crate) const ZIP64_LOCATOR_LEN: usize = 20;
/// Compression methods numpy writes: stored (`np.savez`) and deflate (`np.savez_compressed`).
pub(crate) const STORED: u16 = 0;
pub(crate) const DEFLATED: u16 = 8;
/// General purpose flags: encrypted, and names in UTF-8.
pub(crate) const FLAG_ENCRYPTED: u16 = 1;
pub(crate) const FLAG_UTF8: u16 = 1 << 11;
/// DEFLATE expands at most 1032 to 1 (a 258-byte match in under two bits, over 32 KiB blocks): a larger
/// uncompressed size claimed for a deflated entry is false and would make us allocate for nothing.
pub(crate) const MAX_DEFLATE_RATIO: u64 = 1032;

/// What is wrong with a zip archive, as read.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub(crate) enum ZipError {
    /// No end of central directory record: not a zip file, or truncated.
    #[error("not a zip archive (.npz): no end of central directory record in its last bytes")]
    NoEndRecord,
    /// The archive spans several disks.
    #[error("a zip archive split over several files (disks) is not supported")]
    MultiDisk,
    /// A zip64 record that is missing, malformed or out of the file.
    #[error("malformed zip64 end of central directory: {0}")]
    Zip64(&'static str),
    /// The central directory does not fit where the end record says.
    #[error("the central directory (offset {offset}, {size} bytes, {entries} entries) does not fit in the file ({file} bytes)")]
    CentralOutOfFile {
        /// Its claimed offset.
        offset: u64,
        /// Its claimed size.
        size: u64,
        /// Its claimed number of entries.
        entries: u64,
        /// The file's size.
        file: u64,
    },
    /// A central directory header is malformed.
    #[error("central directory entry #{index}: {why}")]
    BadCentral {
        /// The entry's position in the directory.
        index: u64,
        /// What is wrong.
        why: String,
    },
    /// An entry's local header is malformed or out of the file.
    #[error("entry '{name}': {why}")]
    BadEntry {
        /// The entry's name.
        name: String,
        /// What is wrong.
        why: String,
    },
}

/// Little-endian field reads from a record already checked to be long enough.
pub(crate) fn u16_at(b: &[u8], at: usize) -> u16 {
    u16::from_le_bytes([b[at], b[at + 1]])
}

/// See [`u16_at`].
pub(crate) fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}

/// See [`u16_at`].
pub(crate) fn u64_at(b: &[u8], at: usize) -> u64 {
    let mut v = [0u8; 8];
    v.copy_from_slice(&b[at..at + 8]);
    u64::from_le_bytes(v)
}
