//! What a node becomes when tract cannot translate it: its inference rules' check, an [`Opaque`]
//! node with the facts its rules still give, and the stand-ins for dims too wide for tract or values
//! over the analysis's budget.

use super::*;

impl Translator<'_> {
    /// The node's inference rules on its inputs' full facts: their error, if they refuse them.
    pub(super) fn rules_check(&self, node: &InferenceNode) -> TractResult<()> {
        let ins: TVec<InferenceFact> = node
            .inputs
            .iter()
            .map(|o| self.target.outlet_fact(self.mapping[o]).map(InferenceFact::from))
            .collect::<TractResult<_>>()?;
        let outs: TVec<InferenceFact> = node.outputs.iter().map(|o| o.fact.clone()).collect();
        let mut op: Box<dyn InferenceOp> = node.op.clone();
        guard("inferring facts", || op.infer_facts(ins.iter().collect(), outs.iter().collect(), tvec![]))?;
        Ok(())
    }

    /// The node as an [`Opaque`], if its rules still give each output's type and rank.
    pub(super) fn opaque(
        &mut self,
        node: &InferenceNode,
        op_type: &str,
        reason: &str,
    ) -> TractResult<Option<TVec<OutletId>>> {
        // An `If` that `if_node` could not type has branches returning other types or ranks, or none
        // it can tell: tract's rules would pick one branch's, wrong whenever the other is taken.
        if node.op_is::<tract_onnx::ops::logic::If>() || node.op_is::<LoopBody>() {
            return Ok(None);
        }
        // A `Scan` whose body cannot be translated has nothing to run it: its outputs are unknown.
        if node.op_is::<crate::ops::ScanInference>() {
            return Ok(None);
        }
        let (inputs, facts) = self.typed_inputs(node)?;
        let observed: Vec<InferenceFact> = node
            .op
            .observe_outlets(self.source, node)
            .unwrap_or_default()
            .iter()
            .map(|o| {
                self.mapping
                    .get(o)
                    .and_then(|t| self.target.outlet_fact(*t).ok())
                    .map(InferenceFact::from)
                    .unwrap_or_default()
            })
            .collect();
        let outputs = local_rules(node, &facts, &observed).map_err(|e| attributed(e, &node.name, op_type))?;
        let Some(outputs) = outputs else { return Ok(None) };
        // What a Conv's (ConvTranspose's) attributes and kernel decide of its output, whatever its input
        // channels.
        let proto = self.nodes.get(node.name.as_str()).copied();
        let decided = match (op_type, proto, facts.first(), facts.get(1)) {
            ("Conv", Some(p), Some(x), Some(w)) => conv_dims::conv_dims(p, x, w),
            ("ConvTranspose", Some(p), Some(x), Some(w)) => conv_dims::conv_transpose_dims(p, x, w),
            _ => None,
        };
        let prefix = crate::symbolic::symbol_name(&node.name);
        let mut typed = tvec![];
        for (slot, fact) in outputs.iter().enumerate() {
            let (Some(dt), Some(rank)) = (fact.datum_type.concretize(), fact.shape.rank().concretize()) else {
                return Ok(None);
            };
            let Ok(rank) = usize::try_from(rank) else { return Ok(None) };
            let mut dims = tvec![];
            for axis in 0..rank {
                let known = fact.shape.dim(axis).and_then(|d| d.concretize()).or_else(|| {
                    let d = decided.as_ref().filter(|d| d.len() == rank && slot == 0)?;
                    d[axis].clone()
                });
                dims.push(match known {
                    Some(d) => d,
                    None => {
                        let name = if outputs.len() == 1 {
                            format!("{prefix}_{axis}")
                        } else {
                            format!("{prefix}_{slot}_{axis}")
                        };
                        TDim::Sym(self.target.symbols.new_with_prefix(&name))
                    }
                });
            }
            typed.push(dt.fact(&*dims));
        }
        let op = Opaque {
            op: node.op.clone(),
            node: node.name.clone(),
            facts: typed,
            reason: reason.to_string(),
            deferred: false,
        };
        Ok(Some(self.add_opaque(op, &inputs)?))
    }

    /// Adds `op` reading `inputs`; its outlets.
    pub(super) fn add_opaque(&mut self, op: Opaque, inputs: &[OutletId]) -> TractResult<TVec<OutletId>> {
        let name = self.target.unique_name(&op.node);
        let id = self.target.add_node(name, op.clone(), op.facts.clone())?;
        for (ix, input) in inputs.iter().enumerate() {
            self.target.add_edge(*input, InletId::new(id, ix))?;
        }
        Ok((0..op.facts.len()).map(|slot| OutletId::new(id, slot)).collect())
    }

    /// A node whose dims come as constant values outside `i32`, which tract would misread (see
    /// [`crate::analysis::wide_dims`]): deferred with its exact output shape; an error when it has none.
    pub(super) fn wide_dims(
        &mut self,
        node: &InferenceNode,
        op_type: &str,
    ) -> TractResult<Option<(TVec<OutletId>, String)>> {
        let Some(ix) = crate::analysis::wide_dims::dims_input(op_type, node.inputs.len()) else { return Ok(None) };
        if node.outputs.len() != 1 {
            return Ok(None);
        }
        let (inputs, facts) = self.typed_inputs(node)?;
        let Some(values) = facts[ix].konst.as_ref().and_then(|k| crate::analysis::wide_dims::wide_values(k)) else {
            return Ok(None);
        };
        let invalid = |why: String| crate::error::NodeError::invalid(&node.name, op_type, why);
        let input: TVec<TDim> = facts[0].shape.iter().cloned().collect();
        let shape = crate::analysis::wide_dims::output_shape(op_type, &input, &values).map_err(invalid)?;
        let dt = if op_type == "ConstantOfShape" {
            // The value's type, from the rules given the shape's type alone.
            let unvalued: Vec<TypedFact> = facts.iter().map(|f| f.without_value()).collect();
            match local_rules(node, &unvalued, &[])?.and_then(|o| o.first()?.datum_type.concretize()) {
                Some(dt) => dt,
                None => return Ok(None),
            }
        } else {
            facts[0].datum_type
        };
        let dims: Option<Vec<usize>> = shape.iter().map(|d| d.as_i64().and_then(|v| usize::try_from(v).ok())).collect();
        if let Some(dims) = &dims {
            if crate::analysis::budget::elements_of(dims).is_none() {
                return Err(invalid(crate::analysis::budget::uncountable(dims)));
            }
        }
        let shown: Vec<String> = shape.iter().map(crate::dims::format_dim).collect();
        let reason = format!(
            "its output (shape [{}]) has a dim past 32 bits, which tract's own rules misread: it is not computed \
             before the model runs",
            shown.join(", ")
        );
        let op = Opaque {
            op: node.op.clone(),
            node: node.name.clone(),
            facts: tvec![dt.fact(shape)],
            reason: reason.clone(),
            deferred: true,
        };
        Ok(Some((self.add_opaque(op, &inputs)?, reason)))
    }

    /// A node over constants whose outputs would take more than the folding budget becomes a
    /// deferred [`Opaque`] (see [`crate::analysis::budget`]): its outlets and the reason.
    /// Our slicing ops are left out: they check what they allocate themselves, with their own errors.
    pub(super) fn over_budget(&mut self, node: &InferenceNode) -> TractResult<Option<(TVec<OutletId>, String)>> {
        if node.inputs.is_empty() || node.op_is::<crate::slicing::SliceInference>() {
            return Ok(None);
        }
        let (inputs, facts) = self.typed_inputs(node)?;
        if facts.iter().any(|f| f.konst.is_none()) {
            return Ok(None);
        }
        let Ok(Some(outputs)) = local_rules(node, &facts, &[]) else { return Ok(None) };
        let (facts, reason) = match crate::analysis::budget::oversized(&outputs, self.fold_bytes) {
            crate::analysis::budget::Weighed::Fits => return Ok(None),
            crate::analysis::budget::Weighed::Over(facts, reason) => (facts.into_iter().collect(), reason),
            crate::analysis::budget::Weighed::Uncountable(why) => {
                return Err(crate::error::NodeError::invalid(&node.name, self.op_type(node), why))
            }
        };
        let op = Opaque { op: node.op.clone(), node: node.name.clone(), facts, reason: reason.clone(), deferred: true };
        Ok(Some((self.add_opaque(op, &inputs)?, reason)))
    }
}
