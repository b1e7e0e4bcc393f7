//! Initializers that are also graph inputs: defaults a caller may replace (ONNX IR 4 and later), as
//! onnxruntime lets `run` feed them.

use super::Model;
use anyhow::bail;

impl Model {
    /// The graph inputs that have an initializer: each has a default value, and a caller may feed it.
    pub fn overridable_inputs(&self) -> Vec<String> {
        let Some(graph) = self.proto.graph.as_ref() else { return vec![] };
        let listed: std::collections::HashSet<&str> = graph.input.iter().map(|i| i.name.as_str()).collect();
        graph.initializer.iter().filter(|t| listed.contains(t.name.as_str())).map(|t| t.name.clone()).collect()
    }

    /// The model with the default values of `names` (graph inputs that have an initializer) removed:
    /// they become ordinary inputs, fed like the others. Shapes and assumptions set on this model are
    /// not carried over.
    pub fn overriding(&self, names: &[String]) -> anyhow::Result<Model> {
        let overridable = self.overridable_inputs();
        for name in names {
            if !overridable.contains(name) {
                bail!("'{name}' is not a graph input with a default value (those are: {})", list(&overridable));
            }
        }
        let mut proto = self.proto.clone();
        if let Some(graph) = proto.graph.as_mut() {
            graph.initializer.retain(|t| !names.contains(&t.name));
        }
        // The stored model already holds its external data: nothing is read from disk again.
        Model::load_proto(proto, None)
    }
}

fn list(names: &[String]) -> String {
    if names.is_empty() {
        "none".into()
    } else {
        names.join(", ")
    }
}

impl Model {
    /// For tensors given under `names`: `None` when this model takes them as they are, or the model
    /// ([`Model::overriding`]) in which the given inputs that have a default value are plain inputs.
    pub fn feeding(&self, names: &[String]) -> anyhow::Result<Option<Model>> {
        let overridable = self.overridable_inputs();
        let replaced: Vec<String> = names.iter().filter(|n| overridable.contains(n)).cloned().collect();
        if replaced.is_empty() {
            return Ok(None);
        }
        self.overriding(&replaced).map(Some)
    }
}
