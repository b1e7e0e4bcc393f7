//! Dims past 32 bits given as values: tract reads an integer tensor as dims through an `i32` cast
//! (`Tensor::cast_to::<TDim>`), so `ConstantOfShape([2^32])` was typed `[0]`, `[2^62]` likewise and
//! `[2^31]` negative; `Shape` of it then gave `[0]` and `fold` wrote an empty initializer in its
//! place. For the ops whose output shape is such a value (`ConstantOfShape`, `Expand`, `Tile`,
//! `Resize` by `sizes`), when that input is a constant holding a value outside `i32`, the output
//! shape is computed here exactly, in checked arithmetic: more elements than `i64` counts is an
//! error naming the node; otherwise the node is deferred with that exact shape (its value is never
//! computed while analysing; when the model runs, the memory check refuses what cannot be held, and
//! the node's output must have the shape analysis gave it).

use tract_onnx::prelude::*;

/// The input of `op_type` whose values are read as dims, with the op's inputs counted.
pub(crate) fn dims_input(op_type: &str, inputs: usize) -> Option<usize> {
    match (op_type, inputs) {
        ("ConstantOfShape", 1) => Some(0),
        ("Expand" | "Tile", 2) => Some(1),
        // The last: `sizes` when it is an integer tensor (tract leaves out the empty optional inputs).
        ("Resize", n) if n >= 2 => Some(n - 1),
        _ => None,
    }
}

/// The values of an integer tensor when one of them is outside `i32` (what tract would misread).
pub(crate) fn wide_values(t: &Tensor) -> Option<Vec<i64>> {
    if !t.datum_type().is_integer() || t.rank() != 1 {
        return None;
    }
    let values = t.cast_to::<i64>().ok()?.try_as_plain_ram().ok()?.as_slice::<i64>().ok()?.to_vec();
    values.iter().any(|&v| i32::try_from(v).is_err()).then_some(values)
}

/// The output shape of `op_type` over `input` (its first input's shape, unused by
/// `ConstantOfShape`) and the dim `values`; an error says why it has none.
pub(crate) fn output_shape(op_type: &str, input: &[TDim], values: &[i64]) -> Result<TVec<TDim>, String> {
    let dim = |v: i64| -> Result<TDim, String> {
        if v < 0 {
            return Err(format!("a negative dim, {v}"));
        }
        Ok(v.to_dim())
    };
    let shape: TVec<TDim> = match op_type {
        "ConstantOfShape" | "Resize" => {
            if op_type == "Resize" && values.len() != input.len() {
                return Err(format!("{} sizes for an input of rank {}", values.len(), input.len()));
            }
            values.iter().map(|&v| dim(v)).collect::<Result<_, _>>()?
        }
        "Tile" => {
            if values.len() != input.len() {
                return Err(format!("{} repeats for an input of rank {}", values.len(), input.len()));
            }
            let mut out = tvec![];
            for (d, &r) in input.iter().zip(values) {
                let r = dim(r)?;
                out.push(match (d.as_i64(), r.as_i64()) {
                    (Some(a), Some(b)) => a.checked_mul(b).map(|n| n.to_dim()).ok_or_else(|| {
                        format!("a dim of {a} repeated {b} times is more than 64-bit sizes can count")
                    })?,
                    _ => d.clone() * r,
                });
            }
            out
        }
        "Expand" => {
            let rank = input.len().max(values.len());
            let mut out = tvec![];
            for k in 0..rank {
                let a = (k + input.len()).checked_sub(rank).map_or(1.to_dim(), |i| input[i].clone());
                let b = (k + values.len()).checked_sub(rank).map_or(Ok(1.to_dim()), |i| dim(values[i]))?;
                out.push(if b.as_i64() == Some(1) || a == b {
                    a
                } else if a.as_i64() == Some(1) || a.as_i64().is_none() {
                    b
                } else {
                    return Err(format!("dims {a} and {b} do not broadcast"));
                });
            }
            out
        }
        _ => return Err(format!("{op_type} takes no dims as values")),
    };
    Ok(shape)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dims(v: &[i64]) -> Vec<TDim> {
        v.iter().map(|&d| d.to_dim()).collect()
    }

    #[test]
    fn only_values_outside_i32_are_wide() {
        assert_eq!(wide_values(&tensor1(&[1i64 << 62])), Some(vec![1 << 62]));
        assert_eq!(wide_values(&tensor1(&[3i64, 1 << 31])), Some(vec![3, 1 << 31]));
        assert_eq!(wide_values(&tensor1(&[3i64, i32::MAX as i64])), None);
        assert_eq!(wide_values(&tensor1(&[2.5f32])), None);
    }

    #[test]
    fn shapes_are_exact() {
        let e62 = 1i64 << 62;
        assert_eq!(output_shape("ConstantOfShape", &[], &[e62, 0]).unwrap().to_vec(), dims(&[e62, 0]));
        assert_eq!(output_shape("Expand", &dims(&[3, 1]), &[e62]).unwrap().to_vec(), dims(&[3, e62]));
        assert_eq!(output_shape("Tile", &dims(&[2, 3]), &[1 << 33, 1]).unwrap().to_vec(), dims(&[1 << 34, 3]));
        assert_eq!(output_shape("Resize", &dims(&[1, 1]), &[1, e62]).unwrap().to_vec(), dims(&[1, e62]));
        let n = TDim::Sym(SymbolScope::default().sym("N"));
        assert_eq!(output_shape("Expand", &[n], &[e62]).unwrap().to_vec(), dims(&[e62]));
    }

    #[test]
    fn impossible_shapes_say_why() {
        assert_eq!(output_shape("ConstantOfShape", &[], &[-(1 << 40)]).unwrap_err(), "a negative dim, -1099511627776");
        assert_eq!(
            output_shape("Tile", &dims(&[1 << 40]), &[1 << 40]).unwrap_err(),
            "a dim of 1099511627776 repeated 1099511627776 times is more than 64-bit sizes can count"
        );
        assert_eq!(
            output_shape("Expand", &dims(&[3]), &[1 << 40]).unwrap_err(),
            "dims 3 and 1099511627776 do not broadcast"
        );
        assert_eq!(output_shape("Tile", &dims(&[1]), &[1, 1]).unwrap_err(), "2 repeats for an input of rank 1");
    }
}
