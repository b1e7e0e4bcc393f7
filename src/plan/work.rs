//! The work of a plan: the multiply-adds its nodes declare (tract's `TypedOp::cost`, ours for
//! `DirectConv` and `SmallMatMul`), which the default thread budget is chosen by
//! ([`crate::threads::default_budget`]).

use tract_onnx::prelude::*;
use tract_onnx::tract_core::internal::*;

/// The multiply-adds of one run of `model` (concrete shapes): the sum of its nodes' fused
/// multiply-add counts. Nodes whose count is not a number (symbolic sizes) or whose cost cannot be
/// computed count for nothing; the sum saturates.
pub(crate) fn macs(model: &TypedModel) -> u64 {
    let mut total = 0u64;
    for node in model.nodes() {
        let Ok(facts) = model.node_input_facts(node.id) else {
            continue;
        };
        let Ok(costs) = node.op.cost(&facts) else {
            continue;
        };
        for (cost, count) in costs {
            if let (Cost::FMA(_), Ok(n)) = (cost, count.to_i64()) {
                total = total.saturating_add(u64::try_from(n).unwrap_or(0));
            }
        }
    }
    total
}

#[cfg(test)]
mod tests {
    use super::*;
    use tract_onnx::tract_core::ops::einsum::EinSum;

    /// A matrix product declares its `m·k·n` multiply-adds; a model without one declares none.
    #[test]
    fn a_product_counts_its_multiply_adds() {
        let mut model = TypedModel::default();
        let a = model.add_source("a", f32::fact([3, 5])).unwrap();
        let b = model.add_source("b", f32::fact([5, 7])).unwrap();
        let op = EinSum::new("mk,kn->mn".parse().unwrap(), f32::datum_type());
        let c = model.wire_node("c", op, &[a, b]).unwrap();
        model.select_output_outlets(&c).unwrap();
        assert_eq!(macs(&model), 3 * 5 * 7);
        let mut empty = TypedModel::default();
        let x = empty.add_source("x", f32::fact([3, 5])).unwrap();
        empty.select_output_outlets(&[x]).unwrap();
        assert_eq!(macs(&empty), 0);
    }
}
