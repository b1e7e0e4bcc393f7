//! Raising a model below opset 13: the standard nodes whose form changed by 13 rewritten, the others
//! checked to mean the same.

use super::emit::Lowering;
use crate::onnx::node::{attr_ints_or_int, is_onnx, op_type};
use crate::schema::proto::NodeProto;
use anyhow::{bail, Context};

/// Standard ops whose meaning is the same from opset 1 to 13 for every attribute they carry (13 only
/// added types): a model using only these (and Slice, Squeeze, Unsqueeze) can be raised to opset 13.
const STABLE_TO_13: &[&str] = &[
    "Abs",
    "Add",
    "And",
    "ArgMax",
    "ArgMin",
    "Cast",
    "Ceil",
    "Concat",
    "Constant",
    "ConstantOfShape",
    "Div",
    "Equal",
    "Exp",
    "Expand",
    "Flatten",
    "Floor",
    "Gather",
    "Greater",
    "Identity",
    "Less",
    "Log",
    "MatMul",
    "Max",
    "Min",
    "Mul",
    "Neg",
    "Not",
    "Or",
    "Pad",
    "Pow",
    "Range",
    "Reciprocal",
    "Relu",
    "Reshape",
    "Shape",
    "Sigmoid",
    "Sign",
    "Size",
    "Sqrt",
    "Sub",
    "Sum",
    "Tanh",
    "Tile",
    "Transpose",
    "Where",
];

impl Lowering<'_> {
    /// A standard node of a model below opset 13, in its opset-13 form.
    pub(super) fn raise_opset(&mut self, mut node: NodeProto, opset: i64) -> anyhow::Result<Vec<NodeProto>> {
        if !is_onnx(&node) {
            return Ok(vec![node]);
        }
        let op = op_type(&node).to_string();
        match op.as_str() {
            "Slice" if opset < 10 => {
                let take = |n: &mut NodeProto, name: &str| {
                    let v = attr_ints_or_int(n, name);
                    n.attribute.retain(|a| a.name.as_deref() != Some(name));
                    v
                };
                let starts = take(&mut node, "starts").context("attribute starts is missing")?;
                let ends = take(&mut node, "ends").context("attribute ends is missing")?;
                let axes = take(&mut node, "axes").unwrap_or_else(|| (0..starts.len() as i64).collect());
                let (s, e, a) = (
                    self.init_i64(&node, "starts", &starts)?,
                    self.init_i64(&node, "ends", &ends)?,
                    self.init_i64(&node, "axes", &axes)?,
                );
                node.input.extend([s, e, a]);
                Ok(vec![node])
            }
            "Squeeze" | "Unsqueeze" => {
                if let Some(axes) = attr_ints_or_int(&node, "axes") {
                    node.attribute.retain(|a| a.name.as_deref() != Some("axes"));
                    let a = self.init_i64(&node, "axes", &axes)?;
                    node.input.push(a);
                }
                Ok(vec![node])
            }
            "Slice" => Ok(vec![node]),
            other if STABLE_TO_13.contains(&other) => Ok(vec![node]),
            other => bail!(
                "the model's opset {opset} is below 13 and {other} may mean something else at opset 13; \
                 lowering would change it"
            ),
        }
    }
}
