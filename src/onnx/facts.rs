//! What analysis knows of each value of the graph being folded, by name.

use crate::analysis::{Analysis, IfOp};
use crate::Model;
use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use tract_onnx::prelude::*;

/// Outputs up to this size always fold (shape vectors, scalars, small tables).
pub(crate) const SMALL: u64 = 1024;

/// The type, shape and (when constant) value of one value.
#[derive(Debug, Clone)]
pub(crate) struct Fact {
    /// The element type tract holds it as.
    pub datum_type: DatumType,
    /// The type's name as the model declares it (`int64` for dims, `bfloat16` for its proxy...).
    pub dtype_name: String,
    /// The shape, symbolic dims as expressions.
    pub shape: Vec<TDim>,
    /// The value, when analysis computed it.
    pub konst: Option<Arc<Tensor>>,
}

impl Fact {
    /// The value as a tensor ONNX can hold (dims as int64), if it is constant and concrete.
    pub(crate) fn concrete(&self) -> Option<Tensor> {
        let k = self.konst.as_ref()?;
        if k.datum_type().is_tdim() {
            let dims = crate::dims::dims_of(k).ok()?;
            let values: Vec<i64> = dims.iter().map(TDim::as_i64).collect::<Option<_>>()?;
            let t = tract_ndarray::ArrayD::from_shape_vec(k.shape(), values).ok()?.into_tensor();
            return Some(if self.dtype_name == "int32" { t.cast_to::<i32>().ok()?.into_owned() } else { t });
        }
        Some((**k).clone())
    }

    /// The value's dims when it is a constant integer vector (a shape), symbolic ones included.
    pub(crate) fn dims(&self) -> Option<Vec<TDim>> {
        let k = self.konst.as_ref()?;
        if k.rank() > 1 || !(k.datum_type().is_integer() || k.datum_type().is_tdim()) {
            return None;
        }
        crate::dims::dims_of(k).ok()
    }

    /// Its size in bytes, if its shape is concrete.
    pub(crate) fn bytes(&self) -> Option<u64> {
        let size = if self.datum_type.is_tdim() { 8 } else { self.datum_type.size_of() as u64 };
        self.shape.iter().try_fold(size, |acc, d| acc.checked_mul(u64::try_from(d.as_i64()?).ok()?))
    }
}

/// The facts of every value analysis typed; the analysis is kept so symbols print by name.
pub(crate) struct Facts {
    /// By value name.
    pub by_name: HashMap<String, Fact>,
    /// The analysis they come from, held so that the facts' symbols print by name (their scope
    /// lives as long as the analysis).
    #[allow(dead_code, reason = "held for the symbols' scope, never read")]
    pub analysis: Arc<Analysis>,
}

impl Facts {
    /// The facts of `model` under its input shapes and assumptions, with values of at most
    /// `fold_bytes` computed.
    ///
    /// Values whose facts rest on an assumption (an `If` whose other branch could not be analysed
    /// and declares nothing, see [`crate::analysis::IfOp`]) and every value computed from them are
    /// left out: to `fold` they are unknown, as rewriting with them could change what the model
    /// computes when that branch is taken.
    pub(crate) fn of(model: &Model, fold_bytes: u64) -> anyhow::Result<Facts> {
        let analysis = Arc::new(model.analyse_with(crate::analysis::Options { fold_bytes })?);
        let assumed = assumed_outlets(&analysis.typed);
        let mut by_name = HashMap::new();
        for (name, outlet) in &analysis.outlets {
            if assumed.contains(outlet) {
                continue;
            }
            let f = analysis.typed.outlet_fact(*outlet)?;
            let dtype = analysis.dtype(name)?;
            by_name.insert(
                name.clone(),
                Fact {
                    datum_type: f.datum_type,
                    dtype_name: analysis.dtype_name(dtype),
                    shape: f.shape.iter().map(|d| analysis.shown_dim(d)).collect(),
                    konst: f.konst.clone(),
                },
            );
        }
        Ok(Facts { by_name, analysis })
    }

    /// The fact of a value (none for a value whose facts rest on an assumption).
    pub(crate) fn get(&self, name: &str) -> Option<&Fact> {
        self.by_name.get(name)
    }
}

/// The outlets of `If`s whose facts rest on an assumption, and every outlet computed from them (node
/// ids are in topological order: a node is added after its inputs).
fn assumed_outlets(model: &TypedModel) -> HashSet<OutletId> {
    let mut assumed: HashSet<OutletId> = HashSet::new();
    for node in model.nodes() {
        let own = node.op_as::<IfOp>().is_some_and(IfOp::rests_on_assumption);
        if own || node.inputs.iter().any(|i| assumed.contains(i)) {
            assumed.extend((0..node.outputs.len()).map(|slot| OutletId::new(node.id, slot)));
        }
    }
    assumed
}
