//! The output dims of a `Conv` whose own translation failed (an input channel count known only at
//! run time): the batch is the input's, the channels the kernel's, and each spatial dim follows from
//! the input's, the kernel, pads, strides and dilations, whatever the channels are.

use tract_onnx::pb;
use tract_onnx::prelude::*;

/// The dims of a `Conv`'s output that its inputs `x` and `w` and its attributes decide (`None` for
/// the others).
pub(super) fn conv_dims(proto: &pb::NodeProto, x: &TypedFact, w: &TypedFact) -> Option<Vec<Option<TDim>>> {
    let rank = x.rank();
    if rank < 3 || w.rank() != rank {
        return None;
    }
    let spatial = rank - 2;
    let attr = |name: &str| proto.attribute.iter().find(|a| a.name == name);
    let ints = |name: &str, default: i64, len: usize| -> Option<Vec<i64>> {
        match attr(name) {
            Some(a) if a.ints.len() == len => Some(a.ints.clone()),
            Some(_) => None,
            None => Some(vec![default; len]),
        }
    };
    let kernel: Vec<i64> = match attr("kernel_shape") {
        Some(a) if a.ints.len() == spatial => a.ints.clone(),
        Some(_) => return None,
        None => w.shape.iter().skip(2).map(|d| d.as_i64()).collect::<Option<_>>()?,
    };
    let strides = ints("strides", 1, spatial)?;
    let dilations = ints("dilations", 1, spatial)?;
    let pads = ints("pads", 0, 2 * spatial)?;
    let auto_pad = attr("auto_pad").map(|a| String::from_utf8_lossy(&a.s).to_string()).unwrap_or_default();
    let mut out = vec![Some(x.shape[0].clone()), w.shape[0].as_i64().map(TDim::Val)];
    for i in 0..spatial {
        let (k, s, d) = (kernel[i], strides[i], dilations[i]);
        if k < 1 || s < 1 || d < 1 {
            return None;
        }
        let input = x.shape[i + 2].clone();
        let extent = d.checked_mul(k - 1)?.checked_add(1)?;
        let dim = match auto_pad.as_str() {
            "SAME_UPPER" | "SAME_LOWER" => (input + (s - 1)) / s as u64,
            "VALID" => (input - extent) / s as u64 + 1,
            "" | "NOTSET" => (input + pads[i].checked_add(pads[i + spatial])? - extent) / s as u64 + 1,
            _ => return None,
        };
        out.push(Some(dim.simplify()));
    }
    Some(out)
}
