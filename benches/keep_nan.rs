//! Criterion benchmarks: the float32 ops that keep NaN in our plan (`Relu`, `Clip(0, 6)`,
//! `Max(x, 0)`, `Min(x, 0)`, `HardSigmoid`: `ScalarSteps`; `Sigmoid`, `Tanh`: `NanActivation`;
//! `Max(x, y)` of two tensors: `PairExtremum`) against
//! tract's own plan of the same model (tract's `into_optimized`, without our rewrites), which drops
//! NaN.
//!
//! Each group holds `sliceops` (the plan `sliceops::Model` runs) and `tract` (tract's own plan) for one
//! op on one shape: the ratio of the two times is what keeping NaN costs (or saves). Inputs are random
//! values in [-8, 8], no NaN (the common case), shared with the caller as `sliceops bench` feeds
//! them, so each op writes a new tensor.
//!
//! Run with `cargo bench --bench keep_nan` (filter: `cargo bench --bench keep_nan -- Sigmoid`); or,
//! reusing the test build, `cargo test --release --bench keep_nan --no-run` then the binary it names
//! with `--bench`.

use criterion::{criterion_group, criterion_main, Criterion};
use sliceops::Model;
use std::hint::black_box;
use std::time::Duration;

#[path = "../tests/common/onnx_build.rs"]
mod onnx_build;
use onnx_build::{Builder, D};
use tract_onnx::pb::tensor_proto::DataType;
use tract_onnx::prelude::*;

/// The ops, as the ONNX node that makes each.
const OPS: [&str; 8] = ["Relu", "Clip", "Max0", "Min0", "HardSigmoid", "Sigmoid", "Tanh", "MaxPair"];
/// The shapes: a mid-network activation, and a larger one.
const SHAPES: [[usize; 4]; 2] = [[1, 64, 28, 28], [1, 64, 112, 112]];

fn model(op: &str, shape: &[usize; 4]) -> Vec<u8> {
    let dims: Vec<D> = shape.iter().map(|&d| D::N(d as i64)).collect();
    let b = Builder::new(13).input("x", DataType::Float, &dims).init_f32("zero", &[], &[0.0]);
    let b = match op {
        "Relu" | "Sigmoid" | "Tanh" | "HardSigmoid" => b.node(op, "", "op", &["x"], &["y"], vec![]),
        // x against itself reversed by a Neg: two tensors of the same shape.
        "MaxPair" => {
            b.node("Neg", "", "neg", &["x"], &["n"], vec![]).node("Max", "", "op", &["x", "n"], &["y"], vec![])
        }
        "Clip" => b.init_f32("six", &[], &[6.0]).node("Clip", "", "op", &["x", "zero", "six"], &["y"], vec![]),
        "Max0" => b.node("Max", "", "op", &["x", "zero"], &["y"], vec![]),
        "Min0" => b.node("Min", "", "op", &["x", "zero"], &["y"], vec![]),
        other => panic!("no model for {other}"),
    };
    b.output("y").bytes()
}

/// Random values in [-8, 8] (a fixed xorshift sequence).
fn input(shape: &[usize; 4]) -> Tensor {
    let n: usize = shape.iter().product();
    let mut s = 0x9e37_79b9_7f4a_7c15u64;
    let values: Vec<f32> = (0..n)
        .map(|_| {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            (s >> 40) as f32 / (1u64 << 24) as f32 * 16.0 - 8.0
        })
        .collect();
    tract_ndarray::ArrayD::from_shape_vec(&shape[..], values).unwrap().into_tensor()
}

fn bench(c: &mut Criterion) {
    // As the command line does: freed large buffers kept for reuse, so that an output's page faults
    // (glibc returning and re-mapping it run after run) do not decide the times.
    sliceops::kernel::tune_allocator();
    for shape in &SHAPES {
        let x = input(shape);
        for op in OPS {
            let bytes = model(op, shape);
            let ours = Model::load_bytes(&bytes).unwrap().plan_for(std::slice::from_ref(&x)).unwrap();
            let theirs = tract_onnx::onnx()
                .model_for_read(&mut &bytes[..])
                .unwrap()
                .into_optimized()
                .unwrap()
                .into_runnable()
                .unwrap();
            // Shared, as `sliceops bench` feeds its inputs: each op copies it (tract's does too).
            let xv = x.clone().into_tvalue();
            let name = format!("{op} {shape:?}");
            let mut group = c.benchmark_group(&name);
            group.warm_up_time(Duration::from_millis(500)).measurement_time(Duration::from_secs(2));
            group.bench_function("sliceops", |b| b.iter(|| black_box(ours.run(tvec!(xv.clone())).unwrap())));
            group.bench_function("tract", |b| b.iter(|| black_box(theirs.run(tvec!(xv.clone())).unwrap())));
            group.finish();
        }
    }
}

criterion_group!(benches, bench);
criterion_main!(benches);
