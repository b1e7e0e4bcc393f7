//! Ops that generate a tensor whose size is the value of an input: the window functions
//! (`HannWindow`, `HammingWindow`, `BlackmanWindow`: `size` values) and `MelWeightMatrix`
//! (`[dft_length / 2 + 1, num_mel_bins]`).
//!
//! tract computes them from the input values read as `usize` with no check: a negative size became
//! a length near 2^64 (an allocation that aborts the process), and a size of 2^31 was computed for
//! as long as it took. [`Generated`] checks the values, wherever tract reads them (constants when
//! the node is typed, run-time values before tract's op runs): sizes are non-negative and the output
//! fits in memory ([`check_allocation`]); `MelWeightMatrix` also needs a positive sample rate. What
//! else goes wrong inside tract's op (band edges past the output's bins) is caught as an error.

use crate::kernel::check_allocation;
use crate::ops::stock_node::{Fix, StockNode};
use std::collections::HashMap;
use tract_onnx::model::ParsingContext;
use tract_onnx::pb::NodeProto;
use tract_onnx::prelude::*;
use tract_onnx::tract_hir::internal::*;

/// Which generated tensor.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Generated {
    /// A window of `size` values (input 0).
    Window,
    /// The mel filter bank (inputs: num_mel_bins, dft_length, sample_rate, lower and upper edge).
    MelWeightMatrix,
}

/// The builder of the window functions and `MelWeightMatrix`: tract's op, with [`Generated`].
pub(crate) fn generated(ctx: &ParsingContext, node: &NodeProto) -> TractResult<(Box<dyn InferenceOp>, Vec<String>)> {
    let (stock, kind): (&'static str, Generated) = match node.op_type.as_str() {
        "HannWindow" => ("HannWindow", Generated::Window),
        "HammingWindow" => ("HammingWindow", Generated::Window),
        "BlackmanWindow" => ("BlackmanWindow", Generated::Window),
        _ => ("MelWeightMatrix", Generated::MelWeightMatrix),
    };
    Ok(StockNode::wrap(crate::ops::stock(stock)(ctx, node)?, kind, node))
}

impl Generated {
    /// Checks the input values against the rules in the module docs.
    fn check_values(self, node: &StockNode<Self>, inputs: &[&Tensor]) -> TractResult<()> {
        let invalid = |m: String| crate::NodeError::invalid(&node.node, &node.op, m);
        let scalar = |ix: usize, name: &str| -> TractResult<f64> {
            let t = inputs.get(ix).ok_or_else(|| invalid(format!("the input {name} is missing")))?;
            if t.len() != 1 {
                return Err(invalid(format!("{name} must hold one value, it holds {}", t.len())));
            }
            Ok(t.cast_to::<f64>()?.try_as_plain_ram()?.as_slice::<f64>()?[0])
        };
        let count = |ix: usize, name: &str| -> TractResult<u64> {
            let v = scalar(ix, name)?;
            if !(v >= 0.0 && v < 2f64.powi(53)) {
                return Err(invalid(format!("{name} is {v}: it must be a non-negative integer")));
            }
            Ok(v as u64)
        };
        let numel = match self {
            Generated::Window => count(0, "size")?,
            Generated::MelWeightMatrix => {
                let bins = count(0, "num_mel_bins")?;
                let dft = count(1, "dft_length")?;
                let rate = scalar(2, "sample_rate")?;
                if !(rate.is_finite() && rate >= 1.0) {
                    return Err(invalid(format!("sample_rate is {rate}: it must be a positive integer")));
                }
                (dft / 2 + 1).saturating_mul(bins)
            }
        };
        check_allocation(numel, 8).map_err(|e| invalid(e.to_string()))
    }
}

impl Fix for Generated {
    fn check(this: &StockNode<Self>, inputs: &[TValue]) -> Option<TractResult<()>> {
        let inputs: Vec<&Tensor> = inputs.iter().map(|t| &**t).collect();
        Some(this.fix.check_values(this, &inputs))
    }

    fn to_typed(
        this: &StockNode<Self>,
        source: &InferenceModel,
        node: &InferenceNode,
        target: &mut TypedModel,
        mapping: &HashMap<OutletId, OutletId>,
    ) -> TractResult<TVec<OutletId>> {
        // tract's typing computes the tensor from constant inputs: check them first.
        let facts: Vec<TypedFact> = node
            .inputs
            .iter()
            .map(|o| mapping.get(o).context("a mapped input").and_then(|o| target.outlet_fact(*o).cloned()))
            .collect::<TractResult<_>>()?;
        let constants: Option<Vec<&Tensor>> = facts.iter().map(|f| f.konst.as_deref()).collect();
        if let Some(constants) = constants {
            this.fix.check_values(this, &constants)?;
        }
        this.stock.to_typed(source, node, target, mapping)
    }
}
