//! The output dims of a `Conv` or `ConvTranspose` whose own translation failed (an input channel count
//! known only at run time): the batch is the input's, the channels the kernel's (times the groups for
//! a `ConvTranspose`), and each spatial dim follows from the input's, the kernel, pads, strides,
//! dilations (and output padding or output shape), whatever the channels are.

use tract_onnx::pb;
use tract_onnx::prelude::*;

/// The window attributes a `Conv` and a `ConvTranspose` share, read once: `None` when the ranks or an
/// attribute's length do not fit.
struct Window<'a> {
    spatial: usize,
    kernel: Vec<i64>,
    strides: Vec<i64>,
    dilations: Vec<i64>,
    pads: Vec<i64>,
    auto_pad: String,
    proto: &'a pb::NodeProto,
}

impl<'a> Window<'a> {
    fn read(proto: &'a pb::NodeProto, x: &TypedFact, w: &TypedFact) -> Option<Window<'a>> {
        let rank = x.rank();
        if rank < 3 || w.rank() != rank {
            return None;
        }
        let spatial = rank - 2;
        let attr = |name: &str| proto.attribute.iter().find(|a| a.name == name);
        let kernel: Vec<i64> = match attr("kernel_shape") {
            Some(a) if a.ints.len() == spatial => a.ints.clone(),
            Some(_) => return None,
            None => w.shape.iter().skip(2).map(|d| d.as_i64()).collect::<Option<_>>()?,
        };
        let mut window = Window {
            spatial,
            kernel,
            strides: vec![],
            dilations: vec![],
            pads: vec![],
            auto_pad: attr("auto_pad").map(|a| String::from_utf8_lossy(&a.s).to_string()).unwrap_or_default(),
            proto,
        };
        window.strides = window.ints("strides", 1, spatial)?;
        window.dilations = window.ints("dilations", 1, spatial)?;
        window.pads = window.ints("pads", 0, 2 * spatial)?;
        Some(window)
    }

    /// The attribute `name`, if present.
    fn attr(&self, name: &str) -> Option<&'a pb::AttributeProto> {
        self.proto.attribute.iter().find(|a| a.name == name)
    }

    /// An ints attribute of `len` values, `default` for each when absent.
    fn ints(&self, name: &str, default: i64, len: usize) -> Option<Vec<i64>> {
        match self.attr(name) {
            Some(a) if a.ints.len() == len => Some(a.ints.clone()),
            Some(_) => None,
            None => Some(vec![default; len]),
        }
    }

    /// Kernel, stride and dilation of spatial axis `i`, each at least 1.
    fn axis(&self, i: usize) -> Option<(i64, i64, i64)> {
        let (k, s, d) = (self.kernel[i], self.strides[i], self.dilations[i]);
        (k >= 1 && s >= 1 && d >= 1).then_some((k, s, d))
    }
}

/// The dims of a `Conv`'s output that its inputs `x` and `w` and its attributes decide (`None` for
/// the others).
pub(super) fn conv_dims(proto: &pb::NodeProto, x: &TypedFact, w: &TypedFact) -> Option<Vec<Option<TDim>>> {
    let window = Window::read(proto, x, w)?;
    let spatial = window.spatial;
    let mut out = vec![Some(x.shape[0].clone()), w.shape[0].as_i64().map(TDim::Val)];
    for i in 0..spatial {
        let (k, s, d) = window.axis(i)?;
        let input = x.shape[i + 2].clone();
        let extent = d.checked_mul(k - 1)?.checked_add(1)?;
        let dim = match window.auto_pad.as_str() {
            "SAME_UPPER" | "SAME_LOWER" => (input + (s - 1)) / s as u64,
            "VALID" => (input - extent) / s as u64 + 1,
            "" | "NOTSET" => (input + window.pads[i].checked_add(window.pads[i + spatial])? - extent) / s as u64 + 1,
            _ => return None,
        };
        out.push(Some(dim.simplify()));
    }
    Some(out)
}

/// The dims of a `ConvTranspose`'s output that its inputs `x` and `w` and its attributes decide (`None`
/// for the others): `stride * (in - 1) + output_padding + (kernel - 1) * dilation + 1 - pads`, the
/// `output_shape` attribute when given, `in * stride` under `SAME_*` auto padding.
pub(super) fn conv_transpose_dims(proto: &pb::NodeProto, x: &TypedFact, w: &TypedFact) -> Option<Vec<Option<TDim>>> {
    let window = Window::read(proto, x, w)?;
    let (spatial, rank) = (window.spatial, x.rank());
    let output_padding = window.ints("output_padding", 0, spatial)?;
    let group = window.attr("group").map_or(1, |a| a.i);
    // output_shape: the spatial dims, or (as some exporters write it) the whole shape.
    let output_shape: Option<Vec<i64>> = match window.attr("output_shape") {
        Some(a) if a.ints.len() == spatial => Some(a.ints.clone()),
        Some(a) if a.ints.len() == rank => Some(a.ints[2..].to_vec()),
        Some(_) => return None,
        None => None,
    };
    let channels = w.shape[1].as_i64().and_then(|c| c.checked_mul(group)).filter(|_| group >= 1).map(TDim::Val);
    let mut out = vec![Some(x.shape[0].clone()), channels];
    for (i, &padding) in output_padding.iter().enumerate() {
        let (k, s, d) = window.axis(i)?;
        let input = x.shape[i + 2].clone();
        let dim = match (&output_shape, window.auto_pad.as_str()) {
            (Some(shape), _) => TDim::Val(*shape.get(i).filter(|v| **v >= 0)?),
            (None, "SAME_UPPER" | "SAME_LOWER") => input * s,
            (None, "VALID" | "" | "NOTSET") => {
                let (begin, end) =
                    if window.auto_pad == "VALID" { (0, 0) } else { (window.pads[i], window.pads[i + spatial]) };
                let extent = d.checked_mul(k - 1)?.checked_add(1)?;
                let constant = padding.checked_add(extent)?.checked_sub(begin)?.checked_sub(end)?;
                (input - 1) * s + constant
            }
            _ => return None,
        };
        out.push(Some(dim.simplify()));
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node(attrs: Vec<pb::AttributeProto>) -> pb::NodeProto {
        pb::NodeProto { op_type: "ConvTranspose".into(), attribute: attrs, ..Default::default() }
    }

    fn ints(name: &str, values: &[i64]) -> pb::AttributeProto {
        pb::AttributeProto { name: name.into(), ints: values.to_vec(), ..Default::default() }
    }

    fn text(dims: Option<Vec<Option<TDim>>>) -> Vec<String> {
        dims.unwrap().iter().map(|d| d.as_ref().map_or("?".to_string(), |d| d.to_string())).collect()
    }

    #[test]
    fn conv_transpose_dims_follow_the_onnx_formula() {
        let s = SymbolScope::default();
        let (n, c, h, w) = (s.sym("N"), s.sym("C"), s.sym("H"), s.sym("W"));
        let x = f32::fact([TDim::Sym(n), TDim::Sym(c), TDim::Sym(h), TDim::Sym(w)]);
        let k = f32::fact([4, 3, 3, 3]);
        // stride 2, pads 1, output padding 1: 2*(H-1) + 1 + 3 - 2 = 2*H; groups 2: 6 channels.
        let p = node(vec![
            ints("strides", &[2, 2]),
            ints("pads", &[1, 1, 1, 1]),
            ints("output_padding", &[1, 1]),
            pb::AttributeProto { name: "group".into(), i: 2, ..Default::default() },
        ]);
        assert_eq!(text(conv_transpose_dims(&p, &x, &k)), ["N", "6", "2*H", "2*W"]);
        // No attributes: H - 1 + 3 = H + 2.
        assert_eq!(text(conv_transpose_dims(&node(vec![]), &x, &k)), ["N", "3", "H+2", "W+2"]);
        // SAME_UPPER: H times the stride.
        let same = pb::AttributeProto { name: "auto_pad".into(), s: b"SAME_UPPER".to_vec(), ..Default::default() };
        let p = node(vec![ints("strides", &[3, 2]), same]);
        assert_eq!(text(conv_transpose_dims(&p, &x, &k)), ["N", "3", "3*H", "2*W"]);
        // output_shape, spatial only or the whole shape.
        let p = node(vec![ints("strides", &[2, 2]), ints("output_shape", &[9, 7])]);
        assert_eq!(text(conv_transpose_dims(&p, &x, &k)), ["N", "3", "9", "7"]);
        let p = node(vec![ints("output_shape", &[1, 3, 9, 7])]);
        assert_eq!(text(conv_transpose_dims(&p, &x, &k)), ["N", "3", "9", "7"]);
        // Attributes of the wrong length decide nothing.
        assert!(conv_transpose_dims(&node(vec![ints("strides", &[2])]), &x, &k).is_none());
    }
}
