//! Binding tensors given by name (`--input NAME=FILE.npy`, a Python `feeds` dict) to the model's
//! inputs, with the messages both front ends show.

use super::{declared_text, Model};
use anyhow::{bail, Context};
use tract_onnx::prelude::*;

impl Model {
    /// How input `ix` is declared, for messages: `x (float32 [N,3])`.
    pub(crate) fn describe_input(&self, ix: usize) -> String {
        let Some(decl) = self.declared.get(ix) else { return format!("input #{ix}") };
        let dt = crate::analysis::bind_datum_type(decl).map(crate::npy::numpy_name).unwrap_or_else(|_| "?".into());
        let shape = decl.dims.as_ref().map(|dims| dims.iter().map(declared_text).collect::<Vec<_>>().join(","));
        format!("{} ({dt} [{}])", decl.name, shape.unwrap_or_else(|| "?".into()))
    }

    /// The position of the graph input `name` among [`Model::input_names`].
    pub(crate) fn input_position(&self, name: &str) -> anyhow::Result<usize> {
        let names = self.input_names();
        names
            .iter()
            .position(|n| n == name)
            .with_context(|| format!("the model has no input named '{name}' (its inputs: {})", names.join(", ")))
    }

    /// Puts tensors given by name in the model's input order and checks their element types and shapes against the inputs'.
    /// A name given twice keeps its last tensor. A missing input is an error listing every missing one
    /// as declared, followed by `how` (how the caller passes inputs).
    pub fn order_inputs(&self, given: Vec<(String, Tensor)>, how: &str) -> anyhow::Result<Vec<Tensor>> {
        let mut slots: Vec<Option<Tensor>> = vec![None; self.declared.len()];
        for (name, tensor) in given {
            let ix = self.input_position(&name)?;
            slots[ix] = Some(tensor);
        }
        let missing: Vec<String> =
            slots.iter().enumerate().filter(|(_, t)| t.is_none()).map(|(i, _)| self.describe_input(i)).collect();
        if !missing.is_empty() {
            bail!("the model needs inputs: {}; {how}", missing.join(", "));
        }
        let inputs: Vec<Tensor> = slots.into_iter().flatten().collect();
        self.check_inputs(&inputs)?;
        Ok(inputs)
    }
}
