//! Criterion benchmarks: every case is timed next to a plain copy of the same number of output bytes.
//!
//! For each case, one criterion group holds:
//! - `plain_copy`: `copy_from_slice` between two preallocated buffers of exactly the output's byte count
//!   (one thread, no allocation, no page faults): the floor any slicing op is measured against;
//! - `kernel_execute`: `sliceops::kernel::execute` with a view resolved outside the timed loop (allocates
//!   the output tensor on every call, as the graph op does);
//! - `kernel_copy_view`: `sliceops::kernel::copy_view` into a preallocated buffer (the copy loop alone);
//! - `model_plan`: an ONNX model of the case, loaded with `sliceops::Model`, run through its optimized
//!   plan (`plan.run`), which is what users see.
//!
//! Every group reports throughput in output bytes, so the ratio to `plain_copy` is the ratio of the
//! times. Inputs are f32 tensors of about 50 MB (the AsStrided case reads a 16 MB signal).
//!
//! Run with `cargo bench --bench slicing` (filter with `cargo bench --bench slicing -- channel`).

use criterion::{criterion_group, criterion_main, measurement::WallTime, BenchmarkGroup, Criterion, Throughput};
use sliceops::semantics::{AsStrided, Slice, StridedSlice};
use sliceops::view::View;
use sliceops::{kernel, Model};
use std::hint::black_box;
use std::sync::Arc;
use std::time::Duration;

#[path = "../tests/common/onnx_build.rs"]
mod onnx_build;
use onnx_build::{Builder, A, D};
use tract_onnx::pb::tensor_proto::DataType;
use tract_onnx::prelude::*;

/// The activation-like input of the big cases: [32, 128, 56, 56] f32, 51.4 MB.
const NCHW: [usize; 4] = [32, 128, 56, 56];
/// Same element count, shaped for the StridedSlice case (a small innermost axis to shrink).
const SS_SHAPE: [usize; 4] = [32, 128, 784, 4];
/// The AsStrided signal: 4M f32, 16 MB.
const SIGNAL_LEN: usize = 1 << 22;
/// Sliding windows over the signal: 16384 windows of 512, hop 64 (32 MB of output).
const WINDOWS: [i64; 2] = [16384, 512];
const WINDOW_STRIDE: [i64; 2] = [64, 1];
/// The per-call overhead case.
const TINY: [usize; 4] = [1, 3, 8, 8];

// ---------------------------------------------------------------------------------------------------
// ONNX models built in code, with the integration tests' builder.
// ---------------------------------------------------------------------------------------------------

/// A model of one f32 input `x` of `shape` (opset 13 and `ai.sliceops` 1); [`Plan::plan`] adds output `y`.
fn model(shape: &[usize]) -> Builder {
    let dims: Vec<D> = shape.iter().map(|&d| D::N(d as i64)).collect();
    Builder::new(13).input("x", DataType::Float, &dims)
}

/// The optimized plan of a bench model.
trait Plan {
    fn plan(self) -> Arc<TypedRunnableModel>;
}

impl Plan for Builder {
    fn plan(self) -> Arc<TypedRunnableModel> {
        let bytes = self.output("y").bytes();
        Model::load_bytes(&bytes).expect("bench model loads").plan().expect("bench model plans")
    }
}

/// The same model run by tract-onnx alone, without sliceops' ops and patterns: the "before". `None` (with
/// the reason printed) if stock tract cannot load, optimize or run it.
fn stock_tract_plan(b: Builder) -> Option<Arc<TypedRunnableModel>> {
    let bytes = b.output("y").bytes();
    let plan = tract_onnx::onnx()
        .model_for_read(&mut bytes.as_slice())
        .and_then(|m| m.into_optimized())
        .and_then(|m| m.into_runnable());
    plan.map_err(|e| eprintln!("stock tract cannot run this model: {e:#}")).ok()
}

/// `Slice(x, starts, ends, axes, steps) -> y` (standard ONNX, opset 13).
fn slice_plan(shape: &[usize], s: &Slice) -> Arc<TypedRunnableModel> {
    let axes = s.axes.clone().unwrap_or_else(|| (0..s.starts.len() as i64).collect());
    let steps = s.steps.clone().unwrap_or_else(|| vec![1; s.starts.len()]);
    model(shape)
        .init_i64("starts", &s.starts)
        .init_i64("ends", &s.ends)
        .init_i64("axes", &axes)
        .init_i64("steps", &steps)
        .node("Slice", "", "slice_y", &["x", "starts", "ends", "axes", "steps"], &["y"], vec![])
        .plan()
}

// ---------------------------------------------------------------------------------------------------
// Inputs and the timed functions.
// ---------------------------------------------------------------------------------------------------

/// A tensor of `shape` holding `0, 1, 2, ..` (exact in f32 up to 2^24, distinct enough beyond).
fn ramp(shape: &[usize]) -> Tensor {
    let n: usize = shape.iter().product();
    let data: Vec<f32> = (0..n).map(|i| i as f32).collect();
    Tensor::from_shape(shape, &data).expect("ramp tensor")
}

fn as_f32(t: &Tensor) -> &[f32] {
    t.try_as_plain_ram().and_then(|p| p.as_slice::<f32>()).expect("plain f32 tensor")
}

fn shape_i64(shape: &[usize]) -> Vec<i64> {
    shape.iter().map(|&d| d as i64).collect()
}

fn slice_view(shape: &[usize], s: &Slice) -> View<i64> {
    s.resolve(&shape_i64(shape)).and_then(|sel| sel.to_view()).expect("slice resolves")
}

/// One case's group: throughput in output bytes, the plain-copy baseline first.
fn group<'a>(c: &'a mut Criterion, name: &str, out_elems: usize) -> BenchmarkGroup<'a, WallTime> {
    // As `sliceops run` and `bench` do: large outputs reuse heap memory instead of fresh mappings.
    sliceops::kernel::tune_allocator();
    let mut g = c.benchmark_group(name);
    g.throughput(Throughput::Bytes((out_elems * std::mem::size_of::<f32>()) as u64));
    g
}

/// One pass reading all of `input` (a wrapping sum, one thread): the floor for cases that must read
/// every cache line of their input however little they write.
fn bench_read_input(g: &mut BenchmarkGroup<WallTime>, input: &Tensor) {
    let words: Vec<u64> =
        as_f32(input).chunks_exact(2).map(|p| u64::from(p[0].to_bits()) | u64::from(p[1].to_bits()) << 32).collect();
    g.bench_function("read_input", |b| b.iter(|| black_box(&words).iter().fold(0u64, |acc, &w| acc.wrapping_add(w))));
}

/// `copy_from_slice` of `out_elems` f32 between two preallocated buffers (both touched beforehand).
fn bench_plain_copy(g: &mut BenchmarkGroup<WallTime>, out_elems: usize) {
    let src = vec![1f32; out_elems];
    let mut dst = vec![0f32; out_elems];
    g.bench_function("plain_copy", |b| {
        b.iter(|| {
            dst.copy_from_slice(black_box(&src));
            black_box(&mut dst);
        })
    });
}

/// `kernel::execute` (allocating) and `kernel::copy_view` (preallocated) with a prebuilt view.
fn bench_kernel(g: &mut BenchmarkGroup<WallTime>, input: &Tensor, view: &View<i64>) {
    g.bench_function("kernel_execute", |b| b.iter(|| kernel::execute(black_box(input), black_box(view)).unwrap()));
    let src = as_f32(input);
    let mut dst = vec![0f32; view.numel().unwrap() as usize];
    g.bench_function("kernel_copy_view", |b| {
        b.iter(|| {
            kernel::copy_view(black_box(src), black_box(view), &mut dst).unwrap();
            black_box(&mut dst);
        })
    });
}

/// `plan.run` on a prepared input (the input is shared, never copied).
fn bench_plan(g: &mut BenchmarkGroup<WallTime>, id: &str, plan: &Arc<TypedRunnableModel>, input: &TValue) {
    g.bench_function(id, |b| b.iter(|| plan.run(tvec![input.clone()]).unwrap()));
}

/// Checks once, outside the timing, that the plan computes what the kernel computes.
fn check_same(plan: &Arc<TypedRunnableModel>, input: &TValue, expected: &Tensor, case: &str) {
    let out = plan.run(tvec![input.clone()]).expect("plan runs");
    assert_eq!(out[0].shape(), expected.shape(), "{case}: model and kernel shapes differ");
    assert!(as_f32(&out[0]) == as_f32(expected), "{case}: model and kernel outputs differ");
}

/// A big slicing case: plain copy, kernel (allocating and preallocated), model plan.
fn big_case(c: &mut Criterion, name: &str, input: &Tensor, view: &View<i64>, plan: Option<&Arc<TypedRunnableModel>>) {
    let out_elems = view.numel().unwrap() as usize;
    let tv = input.clone().into_tvalue();
    if let Some(plan) = plan {
        check_same(plan, &tv, &kernel::execute(input, view).unwrap(), name);
    }
    let mut g = group(c, name, out_elems);
    bench_plain_copy(&mut g, out_elems);
    bench_kernel(&mut g, input, view);
    if let Some(plan) = plan {
        bench_plan(&mut g, "model_plan", plan, &tv);
    }
    g.finish();
}

// ---------------------------------------------------------------------------------------------------
// The cases.
// ---------------------------------------------------------------------------------------------------

fn onnx_slice(starts: &[i64], ends: &[i64], axes: &[i64], steps: &[i64]) -> Slice {
    Slice { starts: starts.to_vec(), ends: ends.to_vec(), axes: Some(axes.to_vec()), steps: Some(steps.to_vec()) }
}

/// x[8:24], x[:, 16:112], x[..., ::2], x[..., ::-1] on [32, 128, 56, 56].
fn slices(c: &mut Criterion) {
    let x = ramp(&NCHW);
    let cases = [
        ("outer_slice x[8:24]", onnx_slice(&[8], &[24], &[0], &[1])),
        ("channel_slice x[:,16:112]", onnx_slice(&[16], &[112], &[1], &[1])),
        ("inner_step x[...,::2]", onnx_slice(&[0], &[i64::MAX], &[3], &[2])),
        ("reverse x[...,::-1]", onnx_slice(&[-1], &[i64::MIN], &[3], &[-1])),
    ];
    for (name, s) in cases {
        let view = slice_view(&NCHW, &s);
        let plan = slice_plan(&NCHW, &s);
        big_case(c, name, &x, &view, Some(&plan));
    }
}

/// x[1:, ..., None, ::-2, 3] on [32, 128, 784, 4]: begin mask, ellipsis, new axis, negative step, shrink.
fn strided_slice(c: &mut Criterion) {
    let x = ramp(&SS_SHAPE);
    let ss = StridedSlice {
        begin: vec![1, 0, 0, 0, 3],
        end: vec![0, 0, 0, 0, 0],
        strides: Some(vec![1, 1, 1, -2, 1]),
        begin_mask: 1 << 3,
        end_mask: (1 << 0) | (1 << 3),
        ellipsis_mask: 1 << 1,
        new_axis_mask: 1 << 2,
        shrink_axis_mask: 1 << 4,
    };
    let view = ss.resolve(&shape_i64(&SS_SHAPE)).and_then(|s| s.to_view()).expect("strided slice resolves");
    assert_eq!(view.shape(), vec![31, 128, 1, 392]);
    let plan = model(&SS_SHAPE)
        .init_i64("begin", &ss.begin)
        .init_i64("end", &ss.end)
        .init_i64("strides", ss.strides.as_ref().unwrap())
        .node(
            "StridedSlice",
            "ai.sliceops",
            "stridedslice_y",
            &["x", "begin", "end", "strides"],
            &["y"],
            vec![
                ("begin_mask", A::I(ss.begin_mask)),
                ("end_mask", A::I(ss.end_mask)),
                ("ellipsis_mask", A::I(ss.ellipsis_mask)),
                ("new_axis_mask", A::I(ss.new_axis_mask)),
                ("shrink_axis_mask", A::I(ss.shrink_axis_mask)),
            ],
        )
        .plan();
    // tf2onnx's export of the same: one Slice over the real axes, Squeeze the shrunk axis, Unsqueeze the
    // new one. sliceops runs it as one view; stock tract runs the three ops.
    let tf2onnx = || {
        model(&SS_SHAPE)
            .init_i64("starts", &[1, -1, 3])
            .init_i64("ends", &[i64::MAX, i64::MIN, 4])
            .init_i64("axes", &[0, 2, 3])
            .init_i64("steps", &[1, -2, 1])
            .init_i64("squeeze_axes", &[3])
            .init_i64("unsqueeze_axes", &[2])
            .node("Slice", "", "slice", &["x", "starts", "ends", "axes", "steps"], &["s"], vec![])
            .node("Squeeze", "", "squeeze", &["s", "squeeze_axes"], &["q"], vec![])
            .node("Unsqueeze", "", "unsqueeze", &["q", "unsqueeze_axes"], &["y"], vec![])
    };
    let tf2onnx_plan = tf2onnx().plan();
    let stock = stock_tract_plan(tf2onnx());
    let name = "strided_slice x[1:,...,None,::-2,3]";
    let tv = x.clone().into_tvalue();
    let expected = kernel::execute(&x, &view).unwrap();
    for p in [Some(&plan), Some(&tf2onnx_plan), stock.as_ref()].into_iter().flatten() {
        check_same(p, &tv, &expected, name);
    }
    let mut g = group(c, name, expected.len());
    bench_plain_copy(&mut g, expected.len());
    bench_read_input(&mut g, &x);
    bench_kernel(&mut g, &x, &view);
    bench_plan(&mut g, "model_plan", &plan, &tv);
    bench_plan(&mut g, "model_plan_tf2onnx", &tf2onnx_plan, &tv);
    if let Some(stock) = &stock {
        bench_plan(&mut g, "stock_tract_tf2onnx", stock, &tv);
    }
    g.finish();
}

/// Sliding windows: size [16384, 512], stride [64, 1] over a 4M-element signal. The model runs both our
/// `AsStrided` op and torch's export of the same thing (`Reshape(x, [-1])` + `Gather` over a constant
/// table of 8M indices).
fn as_strided(c: &mut Criterion) {
    let x = ramp(&[SIGNAL_LEN]);
    let op = AsStrided { size: WINDOWS.to_vec(), stride: WINDOW_STRIDE.to_vec(), offset: 0 };
    let view = op.resolve(&[SIGNAL_LEN as i64]).expect("as_strided resolves");
    let custom = model(&[SIGNAL_LEN])
        .node(
            "AsStrided",
            "ai.sliceops",
            "asstrided_y",
            &["x"],
            &["y"],
            vec![("size", A::Is(op.size.clone())), ("stride", A::Is(op.stride.clone())), ("offset", A::I(0))],
        )
        .plan();
    let table: Vec<i64> = (0..WINDOWS[0])
        .flat_map(|w| (0..WINDOWS[1]).map(move |j| w * WINDOW_STRIDE[0] + j * WINDOW_STRIDE[1]))
        .collect();
    let gather = || {
        model(&[SIGNAL_LEN])
            .init_i64("flat_shape", &[-1])
            .init("index", DataType::Int64, &WINDOWS, table.iter().flat_map(|v| v.to_le_bytes()).collect())
            .node("Reshape", "", "reshape_flat", &["x", "flat_shape"], &["flat"], vec![])
            .node("Gather", "", "gather_y", &["flat", "index"], &["y"], vec![("axis", A::I(0))])
    };
    let stock = stock_tract_plan(gather());
    let gather = gather().plan();
    drop(table);
    let tv = x.clone().into_tvalue();
    check_same(&gather, &tv, &kernel::execute(&x, &view).unwrap(), "as_strided (gather)");
    if let Some(stock) = &stock {
        check_same(stock, &tv, &kernel::execute(&x, &view).unwrap(), "as_strided (gather, stock tract)");
    }
    let out_elems = view.numel().unwrap() as usize;
    let mut g = group(c, "as_strided windows[16384,512]/[64,1]", out_elems);
    bench_plain_copy(&mut g, out_elems);
    bench_kernel(&mut g, &x, &view);
    check_same(&custom, &tv, &kernel::execute(&x, &view).unwrap(), "as_strided (custom op)");
    bench_plan(&mut g, "model_plan", &custom, &tv);
    bench_plan(&mut g, "model_plan_reshape_gather", &gather, &tv);
    if let Some(stock) = &stock {
        bench_plan(&mut g, "stock_tract_reshape_gather", stock, &tv);
    }
    g.finish();
}

/// Slice x[4:28] -> StridedSlice [:, 16:112] -> AsStrided (every other row of each 56x56 plane) on
/// [32, 128, 56, 56]: the same as the single Slice x[4:28, 16:112, ::2]; should cost one copy.
fn chain(c: &mut Criterion) {
    let x = ramp(&NCHW);
    let mid = [24i64, 96, 56, 56];
    let size = vec![24, 96, 28, 56];
    let stride = vec![mid[1] * mid[2] * mid[3], mid[2] * mid[3], 2 * mid[3], 1];
    let chained = model(&NCHW)
        .init_i64("starts", &[4])
        .init_i64("ends", &[28])
        .init_i64("axes", &[0])
        .node("Slice", "", "slice_a", &["x", "starts", "ends", "axes"], &["a"], vec![])
        .init_i64("begin", &[0, 16])
        .init_i64("end", &[0, 112])
        .init_i64("strides", &[1, 1])
        .node(
            "StridedSlice",
            "ai.sliceops",
            "stridedslice_b",
            &["a", "begin", "end", "strides"],
            &["b"],
            vec![("begin_mask", A::I(1)), ("end_mask", A::I(1))],
        )
        .node(
            "AsStrided",
            "ai.sliceops",
            "asstrided_y",
            &["b"],
            &["y"],
            vec![("size", A::Is(size)), ("stride", A::Is(stride)), ("offset", A::I(0))],
        )
        .plan();
    let single = onnx_slice(&[4, 16, 0], &[28, 112, i64::MAX], &[0, 1, 2], &[1, 1, 2]);
    let view = slice_view(&NCHW, &single);
    let single_plan = slice_plan(&NCHW, &single);
    let tv = x.clone().into_tvalue();
    let expected = kernel::execute(&x, &view).unwrap();
    check_same(&chained, &tv, &expected, "chain");
    check_same(&single_plan, &tv, &expected, "chain (single slice)");
    let out_elems = view.numel().unwrap() as usize;
    let mut g = group(c, "chain slice>strided_slice>as_strided", out_elems);
    bench_plain_copy(&mut g, out_elems);
    bench_kernel(&mut g, &x, &view);
    bench_plan(&mut g, "model_plan_chain", &chained, &tv);
    bench_plan(&mut g, "model_plan_single_slice", &single_plan, &tv);
    g.finish();
}

/// x[:, :, 1:7, 1:7] on [1, 3, 8, 8]: what one call costs when there is almost nothing to copy.
fn tiny(c: &mut Criterion) {
    let x = ramp(&TINY);
    let s = onnx_slice(&[1, 1], &[7, 7], &[2, 3], &[1, 1]);
    let view = slice_view(&TINY, &s);
    let plan = slice_plan(&TINY, &s);
    let tv = x.clone().into_tvalue();
    check_same(&plan, &tv, &kernel::execute(&x, &view).unwrap(), "tiny");
    let mut g = group(c, "tiny x[:,:,1:7,1:7] on [1,3,8,8]", view.numel().unwrap() as usize);
    g.measurement_time(Duration::from_secs(2));
    bench_plain_copy(&mut g, view.numel().unwrap() as usize);
    bench_kernel(&mut g, &x, &view);
    bench_plan(&mut g, "model_plan", &plan, &tv);
    // The same plan with its state spawned once: what is left once per-run setup is taken out.
    let mut state = plan.spawn().expect("plan spawns");
    g.bench_function("model_state_reused", |b| b.iter(|| state.run(tvec![tv.clone()]).unwrap()));
    g.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .sample_size(10)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3));
    targets = slices, strided_slice, as_strided, chain, tiny
}
criterion_main!(benches);
