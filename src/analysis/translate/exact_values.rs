//! Values of dims computed by arithmetic, kept exact: the rationals a float computation of sizes holds
//! ([`crate::analysis::rational`]), and integer reductions, comparisons, `Mod` and `Div` of symbolic
//! dims written as dims, each checked by evaluation where it cannot be proved.

use super::*;

impl Translator<'_> {
    /// The node's inputs in ONNX order, for [`crate::analysis::rational::eval`].
    pub(super) fn rational_args(
        &self,
        node: &InferenceNode,
        proto: Option<&pb::NodeProto>,
    ) -> TractResult<Vec<crate::analysis::rational::Arg>> {
        use crate::analysis::rational::{Arg, Rats};
        let names: Vec<bool> = match proto {
            Some(p) => p.input.iter().map(|n| !n.is_empty()).collect(),
            None => vec![true; node.inputs.len()],
        };
        let mut inlets = node.inputs.iter();
        let mut args = vec![];
        for present in names {
            if !present {
                args.push(Arg::Absent);
                continue;
            }
            let Some(o) = inlets.next() else { break };
            let outlet = self.mapping[o];
            let arg = match self.rationals.get(&outlet) {
                Some(r) => Arg::Known(r.clone()),
                None => match self.target.outlet_fact(outlet)?.konst.as_ref().and_then(|k| Rats::of_tensor(k)) {
                    Some(r) => Arg::Known(r),
                    None => Arg::Unknown,
                },
            };
            args.push(arg);
        }
        Ok(args)
    }

    /// Whether some input of the node is a float value followed from dims, or a symbolic dims constant
    /// cast to a float.
    pub(super) fn reads_rationals(
        &self,
        node: &InferenceNode,
        op_type: &str,
        proto: Option<&pb::NodeProto>,
    ) -> TractResult<bool> {
        let followed = node.inputs.iter().any(|o| self.rationals.contains_key(&self.mapping[o]));
        if followed || op_type != "Cast" {
            return Ok(followed);
        }
        let to_float = cast_target(proto).is_some_and(|dt| dt.is_float());
        let symbolic = match node.inputs.first() {
            Some(o) => self.target.outlet_fact(self.mapping[o])?.konst.as_ref().is_some_and(|k| {
                k.datum_type().is_tdim()
                    && crate::dims::dims_of(k).is_ok_and(|d| d.iter().any(|d| d.as_i64().is_none()))
            }),
            None => false,
        };
        Ok(to_float && symbolic)
    }

    /// Records the rational value of a node's output computed from followed float values.
    pub(super) fn follow_rationals(
        &mut self,
        node: &InferenceNode,
        op_type: &str,
        proto: Option<&pb::NodeProto>,
        outlets: &[OutletId],
    ) -> TractResult<()> {
        if outlets.len() != 1 || !self.reads_rationals(node, op_type, proto)? {
            return Ok(());
        }
        let args = self.rational_args(node, proto)?;
        let value = if op_type == "Cast" {
            match (args.first(), cast_target(proto)) {
                (Some(crate::analysis::rational::Arg::Known(r)), Some(dt)) if dt.is_float() => Some(r.clone()),
                _ => None,
            }
        } else {
            let attr_f = |name: &str| proto.and_then(|n| n.attribute.iter().find(|a| a.name == name)).map(|a| a.f);
            let attr_i = |name: &str| proto.and_then(|n| n.attribute.iter().find(|a| a.name == name)).map(|a| a.i);
            crate::analysis::rational::eval(op_type, &args, &attr_f, &attr_i, &self.dims)
        };
        if let Some(v) = value {
            self.rationals.insert(outlets[0], v);
        }
        Ok(())
    }

    /// A followed float value cast to an integer type: the dims it holds, as a constant (checked by
    /// evaluation, as other symbolic arithmetic).
    pub(super) fn rational_to_int(
        &mut self,
        node: &InferenceNode,
        op_type: &str,
        proto: Option<&pb::NodeProto>,
    ) -> TractResult<Option<OutletId>> {
        if op_type != "Cast" || node.inputs.len() != 1 {
            return Ok(None);
        }
        let Some(to) = cast_target(proto).filter(|dt| dt.is_integer()) else { return Ok(None) };
        let Some(r) = self.rationals.get(&self.mapping[&node.inputs[0]]) else { return Ok(None) };
        let Some(dims) = r.to_dims(&self.dims) else { return Ok(None) };
        let values = crate::dims::dims_of(&dims)?;
        let exact = r.values.iter().zip(&values).all(|(q, d)| crate::analysis::verify::floor_holds(&q.num, q.den, d));
        if !exact {
            return Ok(None);
        }
        let outlet = self.add_const(&node.name, dims)?;
        if to != DatumType::I64 {
            self.dtypes.insert(OutletId::new(node.id, 0), to);
        }
        Ok(Some(outlet))
    }

    /// A product, sum, minimum or maximum of a 1-D vector of symbolic dims (tf2onnx computes a
    /// flattened size with `ReduceProd` over a `Shape`): the dim itself. tract does not reduce dims.
    pub(super) fn symbolic_reduce(
        &mut self,
        node: &InferenceNode,
        op_type: &str,
        proto: Option<&pb::NodeProto>,
    ) -> TractResult<Option<OutletId>> {
        if !matches!(op_type, "ReduceProd" | "ReduceSum" | "ReduceMin" | "ReduceMax") || node.inputs.is_empty() {
            return Ok(None);
        }
        let Some(data) = self.target.outlet_fact(self.mapping[&node.inputs[0]])?.konst.clone() else { return Ok(None) };
        if !data.datum_type().is_tdim() || data.rank() != 1 {
            return Ok(None);
        }
        let attr = |name: &str| proto.and_then(|n| n.attribute.iter().find(|a| a.name == name));
        // Reducing the only axis: no axes, or axes [0] / [-1] (as an attribute or a constant input).
        let axes: Option<Vec<i64>> = match (attr("axes"), node.inputs.get(1)) {
            (Some(a), _) => Some(a.ints.clone()),
            (None, Some(o)) => match self.target.outlet_fact(self.mapping[o])?.konst.as_ref() {
                Some(k) => {
                    Some(crate::dims::dims_of(k)?.iter().map(|d| d.as_i64()).collect::<Option<_>>().unwrap_or_default())
                }
                None => return Ok(None),
            },
            (None, None) => None,
        };
        if axes.as_ref().is_some_and(|a| !a.is_empty() && a.iter().any(|&x| x != 0 && x != -1)) {
            return Ok(None);
        }
        let dims = crate::dims::dims_of(&data)?;
        if dims.is_empty() || dims.iter().all(|d| d.as_i64().is_some()) {
            return Ok(None);
        }
        let value = match op_type {
            "ReduceProd" => dims.iter().fold(TDim::Val(1), |a, d| a * d.clone()),
            "ReduceSum" => dims.iter().fold(TDim::Val(0), |a, d| a + d.clone()),
            "ReduceMin" => TDim::Min(dims.clone()),
            _ => TDim::Max(dims.clone()),
        }
        .simplify();
        let keep = attr("keepdims").is_none_or(|a| a.i != 0);
        let shape: Vec<usize> = if keep { vec![1] } else { vec![] };
        let t = tract_ndarray::ArrayD::from_shape_vec(shape, vec![value])?.into_tensor();
        Ok(Some(self.add_const(&node.name, t)?))
    }

    /// `Equal` over constant dims ([`crate::analysis::equality`]): a constant where a proof decides it; else
    /// `undecided` is set, and the comparison is left to run time.
    pub(super) fn symbolic_equal(
        &mut self,
        node: &InferenceNode,
        op_type: &str,
        undecided: &mut bool,
    ) -> TractResult<Option<OutletId>> {
        if op_type != "Equal" || node.inputs.len() != 2 {
            return Ok(None);
        }
        let konst = |o: &OutletId| self.target.outlet_fact(self.mapping[o]).ok().and_then(|f| f.konst.clone());
        let (Some(a), Some(b)) = (konst(&node.inputs[0]), konst(&node.inputs[1])) else { return Ok(None) };
        let op =
            tract_onnx::tract_core::ops::binary::TypedBinOp(Box::new(tract_onnx::tract_core::ops::logic::CompEq), None);
        match crate::analysis::equality::symbolic_equality(&op, &[a.into_tvalue(), b.into_tvalue()]) {
            Some(Some(value)) => Ok(Some(self.add_const(&node.name, value)?)),
            Some(None) => {
                *undecided = true;
                Ok(None)
            }
            None => Ok(None),
        }
    }

    /// `Mod` of symbolic dims by an integer, written exactly ([`crate::dims::modulo`]): tract's own
    /// (`a - k*(a/k)`, simplified) is wrong for the pads exporters compute, `(w - x % w) % w`.
    pub(super) fn symbolic_mod(
        &mut self,
        node: &InferenceNode,
        op_type: &str,
        fmod: bool,
    ) -> TractResult<Option<OutletId>> {
        if op_type != "Mod" || fmod || node.inputs.len() != 2 {
            return Ok(None);
        }
        let konst = |o: &OutletId| self.target.outlet_fact(self.mapping[o]).ok().and_then(|f| f.konst.clone());
        let (Some(a), Some(b)) = (konst(&node.inputs[0]), konst(&node.inputs[1])) else { return Ok(None) };
        if !a.datum_type().is_tdim() || a.rank() > 1 || b.rank() > 1 {
            return Ok(None);
        }
        let (Ok(a_dims), Ok(b_dims)) = (crate::dims::dims_of(&a), crate::dims::dims_of(&b)) else { return Ok(None) };
        if a_dims.iter().all(|d| d.as_i64().is_some()) {
            return Ok(None);
        }
        let len = a_dims.len().max(b_dims.len());
        let at = |v: &[TDim], i: usize| if v.len() == 1 { v[0].clone() } else { v[i].clone() };
        let mut out = Vec::with_capacity(len);
        for i in 0..len {
            let Some(k) = at(&b_dims, i).as_i64() else { return Ok(None) };
            let Some(m) = crate::dims::modulo(&at(&a_dims, i), k) else { return Ok(None) };
            out.push(m);
        }
        let shape: Vec<usize> = if a.rank() == 1 || b.rank() == 1 { vec![len] } else { vec![] };
        let t = tract_ndarray::ArrayD::from_shape_vec(shape, out)?.into_tensor();
        Ok(Some(self.add_const(&node.name, t)?))
    }

    /// Integer `Div` of symbolic dims, written exactly: by a positive constant
    /// ([`crate::dims::truncated_div`]; ONNX truncates toward zero where tract's dim division floors,
    /// so tract's value of `(height - 1) / 4` was wrong at `height = 0` and refused), or by a symbolic
    /// dim that divides it exactly ([`crate::dims::divide_exact`]: torch's dynamo exporter divides
    /// `8*batch*h*w` by `8*batch`). Checked by evaluation.
    pub(super) fn symbolic_div(&mut self, node: &InferenceNode, op_type: &str) -> TractResult<Option<OutletId>> {
        if op_type != "Div" || node.inputs.len() != 2 {
            return Ok(None);
        }
        let konst = |o: &OutletId| self.target.outlet_fact(self.mapping[o]).ok().and_then(|f| f.konst.clone());
        let (Some(a), Some(b)) = (konst(&node.inputs[0]), konst(&node.inputs[1])) else { return Ok(None) };
        if !a.datum_type().is_tdim()
            || !(b.datum_type().is_integer() || b.datum_type().is_tdim())
            || a.rank() > 1
            || b.rank() > 1
        {
            return Ok(None);
        }
        let (Ok(a_dims), Ok(b_dims)) = (crate::dims::dims_of(&a), crate::dims::dims_of(&b)) else { return Ok(None) };
        if a_dims.iter().all(|d| d.as_i64().is_some()) || (a_dims.len() != b_dims.len() && b_dims.len() != 1) {
            return Ok(None);
        }
        let len = a_dims.len().max(b_dims.len());
        let at = |v: &[TDim], i: usize| if v.len() == 1 { v[0].clone() } else { v[i].clone() };
        let mut out = Vec::with_capacity(len);
        for i in 0..len {
            let (num, den) = (at(&a_dims, i), at(&b_dims, i));
            // A symbolic divisor: only an exact quotient (`8*B*X / (8*B)`), the same truncated or floored.
            let q = match den.as_i64() {
                Some(k) => crate::dims::truncated_div(&num, k),
                None => crate::dims::divide_exact(&num, &den),
            };
            let Some(q) = q else { return Ok(None) };
            out.push(q);
        }
        let shape: Vec<usize> = if a.rank() == 1 || b.rank() == 1 { vec![len] } else { vec![] };
        let t = tract_ndarray::ArrayD::from_shape_vec(shape, out)?.into_tensor();
        if !crate::analysis::verify::holds("Div", false, &[&a, &b], &t) {
            return Ok(None);
        }
        let t = t.cast_to_dt(a.datum_type())?.into_owned();
        Ok(Some(self.add_const(&node.name, t)?))
    }

    /// Symbolic values computed by arithmetic (a `Mod` of dims) are checked by evaluation
    /// ([`crate::analysis::verify`]); tract's simplification is wrong on some, and a wrong one is refused.
    pub(super) fn check_symbolic_values(
        &self,
        node: &InferenceNode,
        op_type: &str,
        fmod: bool,
        outlets: &[OutletId],
    ) -> TractResult<()> {
        if !crate::analysis::verify::is_checked(op_type) {
            return Ok(());
        }
        let symbolic = |t: &Tensor| {
            t.datum_type().is_tdim()
                && t.try_as_plain_ram()
                    .ok()
                    .and_then(|p| p.as_slice::<TDim>().ok().map(|s| s.iter().any(|d| d.as_i64().is_none())))
                    == Some(true)
        };
        for outlet in outlets {
            let Some(out) = self.target.outlet_fact(*outlet)?.konst.clone() else { continue };
            if !symbolic(&out) {
                continue;
            }
            let inputs: Option<Vec<Arc<Tensor>>> = node
                .inputs
                .iter()
                .map(|i| self.target.outlet_fact(self.mapping[i]).ok().and_then(|f| f.konst.clone()))
                .collect();
            let refs: Vec<&Tensor> = inputs.iter().flatten().map(|t| &**t).collect();
            if inputs.is_none() || !crate::analysis::verify::holds(op_type, fmod, &refs, &out) {
                let values: Vec<String> = crate::dims::dims_of(&out)
                    .map(|d| d.iter().map(crate::dims::format_dim).collect())
                    .unwrap_or_default();
                return Err(crate::NodeError::not_static(
                    &node.name,
                    op_type,
                    format!("the symbolic value [{}] tract computes is not exact", values.join(", ")),
                ));
            }
        }
        Ok(())
    }
}
