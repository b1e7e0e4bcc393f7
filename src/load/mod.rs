//! Loading model files safely, before tract sees them: the file itself ([`read_model_file`]: a regular
//! file, at most protobuf's 2 GiB), then the decoded model ([`prepare_for_tract`]): every tensor's
//! external data checked and read by us into `raw_data`, so tract never opens a file, and
//! `uint64_data` moved into `raw_data` where tract cannot read it, and sparse initializers made dense
//! (tract reads only dense ones).

mod external;
mod sparse;
mod uint;
mod walk;

pub(crate) use external::inline_tensor;
pub(crate) use sparse::densify_sparse_initializers;
pub(crate) use uint::uint64_data_to_raw;
pub(crate) use walk::for_each_tensor;

use std::path::Path;
use tract_onnx::pb;

/// The largest model file read: protobuf messages cannot exceed 2 GiB.
pub(crate) const MAX_MODEL_BYTES: u64 = i32::MAX as u64;

/// Reads a model file: only a regular file (FIFOs, devices and directories are refused by name), at
/// most 2 GiB (`MAX_MODEL_BYTES`), checked before reading.
pub fn read_model_file(path: &Path) -> anyhow::Result<Vec<u8>> {
    crate::io::regular::read_regular(path, MAX_MODEL_BYTES, "an ONNX model is at most 2 GiB (protobuf's limit)")
}

/// Prepares a decoded model for tract: external data read (and checked) from `dir`, the model's
/// folder, into `raw_data`; `uint64_data` moved into `raw_data`; sparse initializers made dense.
pub(crate) fn prepare_for_tract(model: &mut pb::ModelProto, dir: Option<&Path>) -> anyhow::Result<()> {
    for_each_tensor(model, &mut |t| {
        inline_tensor(t, dir)?;
        uint64_data_to_raw(t)
    })?;
    densify_sparse_initializers(model)
}
