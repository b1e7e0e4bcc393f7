//! Sparse initializers (`GraphProto.sparse_initializer`) made dense, for tract, which reads only
//! `initializer`.
//!
//! A `SparseTensorProto` holds `dims` (the dense shape), `values` (a 1-D tensor of the `NNZ` values
//! kept, named as the initializer) and `indices` (int64: `[NNZ]` positions in the flattened tensor,
//! or `[NNZ, rank]` coordinates). Each becomes a dense initializer of the same name and element type,
//! zero everywhere else, in the graph that held it (subgraphs too). Sizes are checked before any
//! allocation; an index out of the shape, a shape that does not hold the values, or a size past
//! [`MAX_DENSE_BYTES`] is an error naming the initializer.

use anyhow::{bail, ensure, Context};
use tract_onnx::pb;
use tract_onnx::prelude::*;

/// The largest dense tensor a sparse initializer may become: a model's own size limit.
pub(super) const MAX_DENSE_BYTES: u64 = super::MAX_MODEL_BYTES;

/// Every sparse initializer of `model`'s graphs (subgraphs included) moved into `initializer`, dense.
pub(crate) fn densify_sparse_initializers(model: &mut pb::ModelProto) -> anyhow::Result<()> {
    // An explicit stack: nesting depth cannot overflow the thread's stack.
    let mut graphs: Vec<&mut pb::GraphProto> = model.graph.iter_mut().collect();
    while let Some(g) = graphs.pop() {
        for sparse in std::mem::take(&mut g.sparse_initializer) {
            g.initializer.push(dense(&sparse)?);
        }
        for a in g.node.iter_mut().flat_map(|n| n.attribute.iter_mut()) {
            graphs.extend(a.g.iter_mut().chain(a.graphs.iter_mut()));
        }
    }
    Ok(())
}

/// A tensor as tract reads it (the model's external data is already inline).
fn load(t: &pb::TensorProto, what: &str) -> anyhow::Result<Tensor> {
    let resolver = tract_onnx::data_resolver::FopenDataResolver;
    crate::guard::guard(what, || tract_onnx::tensor::load_tensor(&resolver, t, None))
}

/// One sparse initializer as a dense one.
fn dense(sparse: &pb::SparseTensorProto) -> anyhow::Result<pb::TensorProto> {
    let values = sparse.values.as_ref().context("a sparse initializer has no values")?;
    let name = &values.name;
    dense_named(sparse, values).with_context(|| format!("sparse initializer '{name}'"))
}

fn dense_named(sparse: &pb::SparseTensorProto, values: &pb::TensorProto) -> anyhow::Result<pb::TensorProto> {
    let shape: Vec<usize> = sparse
        .dims
        .iter()
        .map(|&d| usize::try_from(d).map_err(|_| anyhow::anyhow!("a negative dim in its shape {:?}", sparse.dims)))
        .collect::<anyhow::Result<_>>()?;
    let kept = load(values, "reading a sparse initializer's values")?;
    let dt = kept.datum_type();
    ensure!(dt != DatumType::String, "string sparse initializers are not supported");
    ensure!(kept.rank() == 1, "its values have shape {:?}, not one dim", kept.shape());
    let nnz = kept.len();
    let volume = shape.iter().try_fold(1usize, |acc, &d| acc.checked_mul(d));
    let bytes = volume.and_then(|v| v.checked_mul(dt.size_of())).and_then(|b| u64::try_from(b).ok());
    match bytes {
        Some(b) if b <= MAX_DENSE_BYTES => {}
        _ => bail!("its dense shape {:?} of {dt:?} is past {MAX_DENSE_BYTES} bytes", sparse.dims),
    }
    let volume = volume.unwrap_or(0);
    let positions = match &sparse.indices {
        Some(indices) => {
            let indices = load(indices, "reading a sparse initializer's indices")?;
            ensure!(indices.datum_type() == i64::datum_type(), "its indices are {:?}, not int64", indices.datum_type());
            linear_positions(indices.try_as_plain_ram()?.as_slice::<i64>()?, indices.shape(), &shape, nnz)?
        }
        None => {
            ensure!(nnz == 0, "it has {nnz} values and no indices");
            vec![]
        }
    };
    let size = dt.size_of();
    let mut data = vec![0u8; volume * size];
    let src = kept.try_as_plain_ram()?;
    let src = src.as_bytes();
    for (k, &p) in positions.iter().enumerate() {
        data[p * size..(p + 1) * size].copy_from_slice(&src[k * size..(k + 1) * size]);
    }
    // tract's raw data is little-endian, as ONNX's.
    ensure!(cfg!(target_endian = "little"), "sparse initializers on a big-endian machine are not supported");
    Ok(pb::TensorProto {
        name: values.name.clone(),
        data_type: values.data_type,
        dims: sparse.dims.clone(),
        raw_data: data,
        ..Default::default()
    })
}

/// The flattened position of each value: `indices` of shape `[nnz]` (positions) or `[nnz, rank]`
/// (coordinates), each checked against `shape`.
fn linear_positions(indices: &[i64], ishape: &[usize], shape: &[usize], nnz: usize) -> anyhow::Result<Vec<usize>> {
    let volume: usize = shape.iter().product();
    let out_of_range = |i: i64| anyhow::anyhow!("index {i} is outside its shape {shape:?}");
    match ishape {
        [n] if *n == nnz => indices
            .iter()
            .map(|&i| usize::try_from(i).ok().filter(|&p| p < volume).ok_or_else(|| out_of_range(i)))
            .collect(),
        [n, r] if *n == nnz && *r == shape.len() => indices
            .chunks(shape.len().max(1))
            .take(nnz)
            .map(|coords| {
                coords.iter().zip(shape).try_fold(0usize, |acc, (&c, &d)| {
                    let c = usize::try_from(c).ok().filter(|&c| c < d).ok_or_else(|| out_of_range(c))?;
                    Ok(acc * d + c)
                })
            })
            .collect(),
        _ => bail!("its indices have shape {ishape:?}: expected [{nnz}] or [{nnz}, {}]", shape.len()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn positions_from_linear_indices_and_coordinates() {
        assert_eq!(linear_positions(&[0, 5, 3], &[3], &[2, 3], 3).unwrap(), [0, 5, 3]);
        assert_eq!(linear_positions(&[0, 2, 1, 1], &[2, 2], &[2, 3], 2).unwrap(), [2, 4]);
        assert_eq!(
            linear_positions(&[6], &[1], &[2, 3], 1).unwrap_err().to_string(),
            "index 6 is outside its shape [2, 3]"
        );
        assert_eq!(
            linear_positions(&[0, 3], &[1, 2], &[2, 3], 1).unwrap_err().to_string(),
            "index 3 is outside its shape [2, 3]"
        );
        assert_eq!(
            linear_positions(&[-1], &[1], &[2, 3], 1).unwrap_err().to_string(),
            "index -1 is outside its shape [2, 3]"
        );
        assert_eq!(
            linear_positions(&[0, 1], &[2], &[2, 3], 3).unwrap_err().to_string(),
            "its indices have shape [2]: expected [3] or [3, 2]"
        );
    }
}
