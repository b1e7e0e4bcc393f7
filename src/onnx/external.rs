//! External data on write-back. `fold` and `lower` copy a model's external-data references as they
//! are: relative to the input's folder, they would dangle (or silently name another file) next to an
//! output written elsewhere. [`place_external_data`] reads them (checked as on loading) into
//! `raw_data`; if the model then exceeds protobuf's 2 GiB, the largest tensors go to
//! `<output file name>.data` next to the output instead, with their offsets. [`write_model_file`] does
//! that and writes the model, atomically, data file first.

use super::proto::{self, tensor_proto::DataLocation};
use crate::io::atomic::{AtomicFile, Staged};
use crate::load::{for_each_tensor, inline_tensor};
use anyhow::Context;
use prost::Message;
use std::io::Write;
use std::path::{Path, PathBuf};

/// The largest model protobuf can encode.
pub(crate) const PROTOBUF_LIMIT: u64 = i32::MAX as u64;
/// Tensors smaller than this stay in the model when others move to the data file.
const MIN_EXTERNAL: usize = 1024;
/// Offsets in the data file are multiples of this.
const ALIGN: u64 = 64;

/// What write-back did with external data.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Placement {
    /// The model had no external data and fits: written as it is.
    Unchanged,
    /// This many external tensors were read into the model.
    Inlined {
        /// How many.
        tensors: usize,
    },
    /// The model was over the limit: this many tensors were written to `file`.
    External {
        /// The data file, next to the output.
        file: PathBuf,
        /// How many tensors it holds.
        tensors: usize,
    },
}

/// Reads every external tensor of `model` from `input_dir` into the model; then, if the model encodes
/// to more than `limit` bytes, moves its largest tensors to `<output file name>.data` next to `output`
/// (staged, to be committed with the model) until it fits.
pub(crate) fn place_external_data(
    model: &mut proto::ModelProto,
    input_dir: Option<&Path>,
    output: &Path,
    limit: u64,
) -> anyhow::Result<(Placement, Option<Staged>)> {
    let mut inlined = 0;
    for_each_tensor(model, &mut |t| {
        inlined += usize::from(inline_tensor(t, input_dir)?);
        Ok(())
    })?;
    let size = model.encoded_len() as u64;
    if size <= limit {
        let placement = if inlined == 0 { Placement::Unchanged } else { Placement::Inlined { tensors: inlined } };
        return Ok((placement, None));
    }
    // The largest tensors first, until what stays fits.
    let mut sizes = vec![];
    for_each_tensor(model, &mut |t| {
        sizes.push(t.raw_data.as_ref().map_or(0, Vec::len));
        Ok(())
    })?;
    let mut order: Vec<usize> = (0..sizes.len()).filter(|&i| sizes[i] >= MIN_EXTERNAL).collect();
    order.sort_by_key(|&i| std::cmp::Reverse(sizes[i]));
    let mut remaining = size;
    let mut chosen = vec![false; sizes.len()];
    for &i in &order {
        if remaining <= limit {
            break;
        }
        chosen[i] = true;
        remaining = remaining.saturating_sub(sizes[i] as u64);
    }
    let name = output.file_name().with_context(|| format!("cannot write {}: it names no file", output.display()))?;
    let data_name = format!("{}.data", name.to_string_lossy());
    let data_path = output.with_file_name(&data_name);
    let mut data = AtomicFile::create(&data_path)?;
    let (mut index, mut offset, mut moved) = (0usize, 0u64, 0usize);
    for_each_tensor(model, &mut |t| {
        let take = chosen.get(index).copied().unwrap_or(false);
        index += 1;
        let Some(raw) = t.raw_data.take_if(|_| take) else { return Ok(()) };
        let padding = offset.next_multiple_of(ALIGN) - offset;
        data.write_all(&vec![0u8; padding as usize])
            .and_then(|_| data.write_all(&raw))
            .with_context(|| format!("cannot write {}", data_path.display()))?;
        offset += padding;
        let entry = |k: &str, v: String| proto::StringStringEntryProto { key: Some(k.into()), value: Some(v) };
        t.external_data = vec![
            entry("location", data_name.clone()),
            entry("offset", offset.to_string()),
            entry("length", raw.len().to_string()),
        ];
        t.data_location = Some(DataLocation::External as i32);
        offset += raw.len() as u64;
        moved += 1;
        Ok(())
    })?;
    let size = model.encoded_len() as u64;
    if size > limit {
        anyhow::bail!(
            "the model is {size} bytes even with its large tensors stored externally; protobuf's limit is {limit}"
        );
    }
    Ok((Placement::External { file: data_path, tensors: moved }, Some(data.finish()?)))
}

/// Writes a model produced by write-back (`bytes`, its external data relative to `input_dir`) to
/// `output`, with its external data placed by [`place_external_data`]; atomically, the data file (if
/// any) renamed into place before the model.
pub(crate) fn write_model_file(bytes: Vec<u8>, input_dir: Option<&Path>, output: &Path) -> anyhow::Result<Placement> {
    // Refused before anything is created next to it (the external data file comes first).
    crate::io::atomic::check_target(output)?;
    let mut model = proto::ModelProto::decode(&*bytes).map_err(|e| anyhow::anyhow!("not a valid ONNX model: {e}"))?;
    let (placement, data) = place_external_data(&mut model, input_dir, output, PROTOBUF_LIMIT)?;
    let encoded = if placement == Placement::Unchanged {
        drop(model);
        bytes
    } else {
        drop(bytes);
        model.encode_to_vec()
    };
    let mut file = AtomicFile::create(output)?;
    file.write_all(&encoded).with_context(|| format!("cannot write {}", output.display()))?;
    let staged = file.finish()?;
    if let Some(data) = data {
        data.commit()?;
    }
    staged.commit()?;
    Ok(placement)
}

#[cfg(test)]
mod tests;
