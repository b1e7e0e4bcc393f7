//! Property tests: random ranks 0-5, dims 0-7, specs and dtypes. The kernel's output equals the
//! index-by-index reference; composed views equal applying both; symbolic lengths equal concrete ones.

mod common;

use common::reference::{self, RefAxis};
use common::{arange, to_strided_slice};
use proptest::prelude::*;
use sliceops::semantics::{resolve_range, AsStrided, Clamp, Slice, SpecEntry};
use sliceops::view::{View, ViewAxis};
use tract_onnx::prelude::*;

fn shape_strategy() -> impl Strategy<Value = Vec<i64>> {
    prop::collection::vec(0i64..8, 0..=5)
}

fn bound() -> impl Strategy<Value = i64> {
    prop_oneof![8 => -10i64..10, 1 => Just(i64::MIN), 1 => Just(i64::MAX), 1 => Just(i64::MIN + 1), 1 => Just(i32::MAX as i64)]
}

fn step() -> impl Strategy<Value = i64> {
    prop_oneof![8 => 1i64..4, 8 => -4i64..=-1, 1 => Just(i64::MIN), 1 => Just(i64::MAX)]
}

fn entry() -> impl Strategy<Value = SpecEntry> {
    prop_oneof![
        1 => Just(SpecEntry::Ellipsis),
        1 => Just(SpecEntry::NewAxis),
        2 => (-8i64..8).prop_map(SpecEntry::Index),
        6 => (prop::option::of(bound()), prop::option::of(bound()), step()).prop_map(|(b, e, s)| SpecEntry::Range(b, e, s)),
    ]
}

const DTYPES: [DatumType; 12] = [
    DatumType::U8,
    DatumType::I8,
    DatumType::Bool,
    DatumType::U16,
    DatumType::F16,
    DatumType::I32,
    DatumType::F32,
    DatumType::U64,
    DatumType::I64,
    DatumType::F64,
    DatumType::U32,
    DatumType::String,
];

/// Runs `view` on `np.arange(numel).reshape(shape)` cast to `dt`, and checks the result element by
/// element against `expected_index` (the flat source index of each output element).
fn check_dtype(shape: &[i64], view: &View<i64>, dt: DatumType, want_shape: &[usize], expected_index: &[i64]) {
    let ushape: Vec<usize> = shape.iter().map(|d| *d as usize).collect();
    let base = tract_ndarray::ArrayD::from_shape_vec(ushape, arange(shape)).unwrap().into_tensor();
    let input = base.cast_to_dt(dt).unwrap().into_owned();
    let out = sliceops::kernel::execute(&input, view).unwrap();
    assert_eq!(out.shape(), want_shape);
    assert_eq!(out.datum_type(), dt);
    if dt == DatumType::String {
        let (src, got) = (
            input.try_as_plain_ram().unwrap().as_slice::<String>().unwrap(),
            out.try_as_plain_ram().unwrap().as_slice::<String>().unwrap(),
        );
        let want: Vec<&String> = expected_index.iter().map(|i| &src[*i as usize]).collect();
        assert_eq!(got.iter().collect::<Vec<_>>(), want);
    } else {
        let size = dt.size_of();
        let src = input.as_bytes();
        let want: Vec<u8> =
            expected_index.iter().flat_map(|i| &src[*i as usize * size..(*i as usize + 1) * size]).copied().collect();
        assert_eq!(out.as_bytes(), &want[..]);
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn strided_slice_equals_the_numpy_reference(
        shape in shape_strategy(),
        spec in prop::collection::vec(entry(), 0..=6),
        dt in prop::sample::select(DTYPES.to_vec()),
    ) {
        let reference_axes = reference::numpy_axes(&spec, &shape);
        let ours = to_strided_slice(&spec).resolve(&shape);
        match (ours, reference_axes) {
            (Ok(sel), Some(axes)) => {
                let data = arange(&shape);
                let (want_shape, want) = reference::gather(&data, &shape, &axes);
                prop_assert_eq!(sel.output_shape().iter().map(|d| *d as usize).collect::<Vec<_>>(), want_shape.clone());
                check_dtype(&shape, &sel.to_view().unwrap(), dt, &want_shape, &want);
            }
            (Err(_), None) => {}
            (ours, theirs) => prop_assert!(false, "ours {:?}, reference {:?}", ours, theirs.is_some()),
        }
    }

    #[test]
    fn onnx_slice_equals_the_onnx_reference(
        shape in prop::collection::vec(0i64..8, 1..=5),
        picks in prop::collection::vec((0usize..5, bound(), bound(), step()), 0..=5),
        dt in prop::sample::select(DTYPES.to_vec()),
    ) {
        let rank = shape.len();
        let mut seen = vec![false; rank];
        let picks: Vec<_> = picks.into_iter().filter(|p| p.0 < rank && !std::mem::replace(&mut seen[p.0], true)).collect();
        let slice = Slice {
            axes: Some(picks.iter().map(|p| p.0 as i64 - if p.0 % 2 == 1 { rank as i64 } else { 0 }).collect()),
            starts: picks.iter().map(|p| p.1).collect(),
            ends: picks.iter().map(|p| p.2).collect(),
            steps: Some(picks.iter().map(|p| p.3).collect()),
        };
        let axes: Vec<RefAxis> = (0..rank)
            .map(|a| match picks.iter().find(|p| p.0 == a) {
                Some(p) => RefAxis::Indices(a, reference::onnx_indices(shape[a], p.1, p.2, p.3)),
                None => RefAxis::Indices(a, (0..shape[a]).collect()),
            })
            .collect();
        let (want_shape, want) = reference::gather(&arange(&shape), &shape, &axes);
        let sel = slice.resolve(&shape).unwrap();
        check_dtype(&shape, &sel.to_view().unwrap(), dt, &want_shape, &want);
    }

    #[test]
    fn as_strided_equals_the_formula(
        shape in shape_strategy(),
        size in prop::collection::vec(0i64..5, 0..=4),
        strides in prop::collection::vec(0i64..6, 4),
        offset in 0i64..20,
        dt in prop::sample::select(DTYPES.to_vec()),
    ) {
        let stride = strides[..size.len()].to_vec();
        let data = arange(&shape);
        let op = AsStrided { size: size.clone(), stride: stride.clone(), offset };
        match (op.resolve(&shape), reference::as_strided(&data, &size, &stride, offset)) {
            (Ok(view), Some((want_shape, want))) => check_dtype(&shape, &view, dt, &want_shape, &want),
            (Err(_), None) => {}
            (ours, theirs) => prop_assert!(false, "ours {:?}, reference {:?}", ours, theirs.is_some()),
        }
    }

    #[test]
    fn a_selection_of_a_view_equals_applying_both(
        shape in shape_strategy(),
        first in prop::collection::vec(entry(), 0..=4),
        second in prop::collection::vec(entry(), 0..=4),
    ) {
        let data = arange(&shape);
        let Ok(sel1) = to_strided_slice(&first).resolve(&shape) else { return Ok(()) };
        let view1 = sel1.to_view().unwrap();
        let (mid_shape, mid) = common::run_view(&data, &shape, &view1);
        let mid_shape: Vec<i64> = mid_shape.iter().map(|d| *d as i64).collect();
        let Ok(sel2) = to_strided_slice(&second).resolve(&mid_shape) else { return Ok(()) };
        let two_steps = common::run_view(&mid, &mid_shape, &sel2.to_view().unwrap());
        let composed = view1.select(&sel2).unwrap();
        prop_assert_eq!(common::run_view(&data, &shape, &composed), two_steps.clone());
        // The flat composition agrees whenever it exists, and always exists after a contiguous view.
        match view1.then(&sel2.to_view().unwrap()) {
            Some(flat) => prop_assert_eq!(common::run_view(&data, &shape, &flat), two_steps),
            None => prop_assert!(!view1.is_contiguous()),
        }
    }

    #[test]
    fn as_strided_after_a_slice_composes_exactly_when_it_can(
        shape in prop::collection::vec(1i64..6, 1..=3),
        first in prop::collection::vec(entry(), 0..=3),
        size in prop::collection::vec(0i64..4, 0..=3),
        strides in prop::collection::vec(0i64..5, 3),
        offset in 0i64..6,
    ) {
        let data = arange(&shape);
        let Ok(sel1) = to_strided_slice(&first).resolve(&shape) else { return Ok(()) };
        let view1 = sel1.to_view().unwrap();
        let (mid_shape, mid) = common::run_view(&data, &shape, &view1);
        let mid_shape: Vec<i64> = mid_shape.iter().map(|d| *d as i64).collect();
        let op = AsStrided { size: size.clone(), stride: strides[..size.len()].to_vec(), offset };
        let Ok(view2) = op.resolve(&mid_shape) else { return Ok(()) };
        let two_steps = common::run_view(&mid, &mid_shape, &view2);
        if let Some(flat) = view1.then(&view2) {
            prop_assert_eq!(common::run_view(&data, &shape, &flat), two_steps);
        }
    }

    #[test]
    fn symbolic_ranges_evaluate_to_the_concrete_ones(
        d in 0i64..12,
        start in prop::option::of(bound()),
        end in prop::option::of(bound()),
        step in step(),
        onnx in any::<bool>(),
    ) {
        let rule = if onnx { Clamp::Onnx } else { Clamp::Python };
        let (start, end) = if onnx { (Some(start.unwrap_or(0)), Some(end.unwrap_or(0))) } else { (start, end) };
        let scope = SymbolScope::default();
        let n = scope.sym("N");
        let sym = resolve_range(&TDim::from(n.clone()), start, end, step, rule).unwrap();
        let conc = resolve_range(&d, start, end, step, rule).unwrap();
        let values = SymbolValues::default().with(&n, d);
        prop_assert_eq!(sym.len.eval_to_i64(&values).unwrap(), conc.len, "len of {:?}:{:?}:{} on {}: {}", start, end, step, d, sym.len);
        if conc.len > 0 {
            prop_assert_eq!(sym.start.eval_to_i64(&values).unwrap(), conc.start, "start {}", sym.start);
        }
    }
}

#[test]
fn composed_chain_of_three_is_one_view() {
    // x[1:, ::-1][..., 1:3][None, 0] == one view
    let shape = [4, 5];
    let data = arange(&shape);
    let parse = common::parse_spec;
    let v1 = to_strided_slice(&parse("1:, ::-1")).resolve(&shape).unwrap().to_view().unwrap();
    let s2 = to_strided_slice(&parse("..., 1:3")).resolve(&[3i64, 5]).unwrap();
    let v2 = v1.select(&s2).unwrap();
    let s3 = to_strided_slice(&parse("None, 0")).resolve(&[3i64, 2]).unwrap();
    let v3 = v2.select(&s3).unwrap();
    assert_eq!(common::run_view(&data, &shape, &v3), (vec![1, 2], vec![8, 7]));
}

/// Large outputs take the threaded paths (blocks of rows, and pieces of one long row); they must equal
/// the element-by-element answer.
#[test]
fn large_outputs_split_across_threads_equal_the_reference() {
    let n: usize = 3 << 20;
    let data: Vec<u32> = (0..n as u32).collect();
    let views = [
        // One long row with stride 2, one long reversed row, one long contiguous row.
        View { offset: 0, axes: vec![ViewAxis { len: (n / 2) as i64, stride: 2 }] },
        View { offset: n as i64 - 1, axes: vec![ViewAxis { len: n as i64, stride: -1 }] },
        View { offset: 7, axes: vec![ViewAxis { len: (n - 7) as i64, stride: 1 }] },
        // Many rows: a channel-style slice of a [64, 3<<14] tensor.
        View {
            offset: 5,
            axes: vec![ViewAxis { len: 64, stride: 3 << 14 }, ViewAxis { len: (3 << 14) - 9, stride: 1 }],
        },
        // Few rows of a strided inner axis.
        View {
            offset: 1,
            axes: vec![ViewAxis { len: 3, stride: 1 << 20 }, ViewAxis { len: (1 << 19) - 1, stride: 2 }],
        },
    ];
    for view in &views {
        let numel = view.numel().unwrap() as usize;
        let mut got = vec![0u32; numel];
        sliceops::kernel::copy_view(&data, view, &mut got).unwrap();
        let mut want = Vec::with_capacity(numel);
        let (outer, inner) = match &view.axes[..] {
            [a] => (ViewAxis { len: 1, stride: 0 }, a.clone()),
            [a, b] => (a.clone(), b.clone()),
            _ => unreachable!(),
        };
        for i in 0..outer.len {
            for j in 0..inner.len {
                want.push(data[(view.offset + i * outer.stride + j * inner.stride) as usize]);
            }
        }
        assert!(got == want, "{view:?}");
    }
}
