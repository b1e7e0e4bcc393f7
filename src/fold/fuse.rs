//! Fusions that change floating-point rounding (off with `--exact`), as onnxsim does them:
//! a `BatchNormalization` after a `Conv` is folded into the convolution's weights and bias, and a
//! 2-D `MatMul` by a constant followed by the `Add` of a constant bias becomes one `Gemm`, and the
//! `Add` of a per-channel constant after a `Conv` goes into its bias.

use super::graph::{producers, readers};
use super::Report;
use crate::onnx::node::{attr, is_onnx, op_type};
use crate::onnx::Facts;
use crate::schema::proto::{self, GraphProto};
use tract_onnx::prelude::*;

fn initializer<'a>(graph: &'a GraphProto, name: &str) -> Option<&'a proto::TensorProto> {
    graph.initializer.iter().find(|t| t.name.as_deref() == Some(name))
}

fn f32_init(graph: &GraphProto, name: Option<&String>) -> Option<(Vec<i64>, Vec<f32>)> {
    let t = initializer(graph, name.filter(|n| !n.is_empty())?)?;
    Some((t.dims.clone(), crate::onnx::f32s_of(t)?))
}

fn f32_tensor(name: &str, dims: &[i64], values: Vec<f32>) -> anyhow::Result<proto::TensorProto> {
    let shape: Vec<usize> = dims.iter().map(|&d| d as usize).collect();
    let t = tract_ndarray::ArrayD::from_shape_vec(shape, values)?.into_tensor();
    crate::onnx::tensor_to_proto(name, &t)
}

/// Each standard two-input `Add` with an input made by a standard `kind` node that nothing else
/// reads, as `(add, producer, which input of the Add it feeds)`: input 0 first, then input 1.
fn adds_after(graph: &GraphProto, kind: &str) -> Vec<(usize, usize, usize)> {
    let producers = producers(graph);
    let readers = readers(graph);
    let mut found = vec![];
    for (ix, add) in graph.node.iter().enumerate() {
        if op_type(add) != "Add" || !is_onnx(add) || add.input.len() != 2 {
            continue;
        }
        for side in [0, 1] {
            let value = &add.input[side];
            let Some(&p) = producers.get(value) else { continue };
            let node = &graph.node[p];
            if op_type(node) == kind && is_onnx(node) && readers.get(value).copied() == Some(1) {
                found.push((ix, p, side));
            }
        }
    }
    found
}

/// Folds `BatchNormalization(Conv(x, W, B))` into `Conv(x, W', B')`; returns whether anything changed.
pub(crate) fn batchnorm_into_conv(graph: &mut GraphProto, report: &mut Report) -> anyhow::Result<bool> {
    let producers = producers(graph);
    let readers = readers(graph);
    let mut plans = vec![];
    for (ix, bn) in graph.node.iter().enumerate() {
        if op_type(bn) != "BatchNormalization" || !is_onnx(bn) || bn.output.iter().skip(1).any(|o| !o.is_empty()) {
            continue;
        }
        let Some(&c) = bn.input.first().and_then(|i| producers.get(i)) else { continue };
        let conv = &graph.node[c];
        if op_type(conv) != "Conv" || !is_onnx(conv) || readers.get(&bn.input[0]).copied() != Some(1) {
            continue;
        }
        let params: Option<Vec<(Vec<i64>, Vec<f32>)>> = (1..5).map(|i| f32_init(graph, bn.input.get(i))).collect();
        let (Some(params), Some((wdims, w))) = (params, f32_init(graph, conv.input.get(1))) else { continue };
        let m = *wdims.first().unwrap_or(&0) as usize;
        if m == 0 || params.iter().any(|(_, v)| v.len() != m) || w.len() % m != 0 {
            continue;
        }
        let bias = match conv.input.get(2).filter(|b| !b.is_empty()) {
            Some(_) => match f32_init(graph, conv.input.get(2)) {
                Some((_, b)) if b.len() == m => b,
                _ => continue,
            },
            None => vec![0.0; m],
        };
        let eps = attr(bn, "epsilon").and_then(|a| a.f).unwrap_or(1e-5);
        let (scale, shift, mean, var) = (&params[0].1, &params[1].1, &params[2].1, &params[3].1);
        let per = w.len() / m;
        let mut w2 = w.clone();
        let mut b2 = vec![0f32; m];
        for o in 0..m {
            let k = f64::from(scale[o]) / (f64::from(var[o]) + f64::from(eps)).sqrt();
            for v in &mut w2[o * per..(o + 1) * per] {
                *v = (f64::from(*v) * k) as f32;
            }
            b2[o] = ((f64::from(bias[o]) - f64::from(mean[o])) * k + f64::from(shift[o])) as f32;
        }
        plans.push((ix, c, wdims, w2, b2));
    }
    if plans.is_empty() {
        return Ok(false);
    }
    let mut remove = std::collections::HashSet::new();
    for (bn_ix, conv_ix, wdims, w2, b2) in plans {
        let out = graph.node[bn_ix].output[0].clone();
        let wname = format!("{out}_fused_weight");
        let bname = format!("{out}_fused_bias");
        graph.initializer.push(f32_tensor(&wname, &wdims, w2)?);
        graph.initializer.push(f32_tensor(&bname, &[b2.len() as i64], b2)?);
        let conv = &mut graph.node[conv_ix];
        conv.input.truncate(1);
        conv.input.push(wname);
        conv.input.push(bname);
        conv.output[0] = out;
        remove.insert(bn_ix);
        report.count("BatchNormalization folded into Conv (not bit-exact)", 1);
    }
    super::graph::remove_nodes(graph, &remove);
    Ok(true)
}

/// Turns `Add(MatMul(a, B), C)` into `Gemm(a, B, C)` for a 2-D `a`, constant `B` [K, N] and a constant
/// bias `C` of shape [N] or [1, N]; returns whether anything changed.
pub(crate) fn matmul_add_into_gemm(graph: &mut GraphProto, facts: &Facts, report: &mut Report) -> anyhow::Result<bool> {
    let mut plans: Vec<(usize, usize, String, String, String)> = vec![];
    for (ix, m, mm_in) in adds_after(graph, "MatMul") {
        if plans.last().is_some_and(|p| p.0 == ix) {
            continue;
        }
        let (add, mm) = (&graph.node[ix], &graph.node[m]);
        let bias_in = 1 - mm_in;
        let a_rank = facts.get(&mm.input[0]).map(|f| f.shape.len());
        let b = initializer(graph, &mm.input[1]);
        let c = initializer(graph, &add.input[bias_in]);
        let (Some(2), Some(b), Some(c)) = (a_rank, b, c) else { continue };
        let float = |t: &proto::TensorProto| t.data_type == Some(proto::tensor_proto::DataType::Float as i32);
        let n = b.dims.get(1).copied();
        let bias_ok = matches!(c.dims.as_slice(), [x] | [1, x] if Some(*x) == n);
        if b.dims.len() != 2 || !float(b) || !float(c) || !bias_ok {
            continue;
        }
        plans.push((ix, m, mm.input[0].clone(), mm.input[1].clone(), add.input[bias_in].clone()));
    }
    if plans.is_empty() {
        return Ok(false);
    }
    let mut remove = std::collections::HashSet::new();
    for (add_ix, mm_ix, a, b, c) in plans {
        let out = graph.node[add_ix].output[0].clone();
        let mm = &mut graph.node[mm_ix];
        mm.op_type = Some("Gemm".into());
        mm.input = vec![a, b, c];
        mm.output = vec![out];
        remove.insert(add_ix);
        report.count("MatMul + Add made a Gemm (not bit-exact)", 1);
    }
    super::graph::remove_nodes(graph, &remove);
    Ok(true)
}

/// Folds `Add(Conv(x, W, B?), C)` with a constant per-channel `C` (shape `[M]`, `[M, 1, 1]` or
/// `[1, M, 1, 1]` for a 2-D convolution) into the convolution's bias; returns whether anything changed.
pub(crate) fn add_into_conv_bias(graph: &mut GraphProto, facts: &Facts, report: &mut Report) -> anyhow::Result<bool> {
    let mut plans: Vec<(usize, usize, Vec<f32>)> = vec![];
    for (ix, c, conv_in) in adds_after(graph, "Conv") {
        if plans.last().is_some_and(|p| p.0 == ix) {
            continue;
        }
        let (add, conv) = (&graph.node[ix], &graph.node[c]);
        let c_in = 1 - conv_in;
        let Some((wdims, _)) = f32_init(graph, conv.input.get(1)) else { continue };
        let m = *wdims.first().unwrap_or(&0);
        let rank = wdims.len();
        let Some((cdims, cvals)) = f32_init(graph, add.input.get(c_in)) else { continue };
        // Per output channel, broadcasting onto [N, M, spatial...] and nothing more.
        let per_channel = cvals.len() as i64 == m
            && (cdims == [m] && rank == 2
                || cdims.len() + 1 == rank && cdims.first() == Some(&m) && cdims[1..].iter().all(|&d| d == 1)
                || cdims.len() == rank
                    && cdims.first() == Some(&1)
                    && cdims.get(1) == Some(&m)
                    && cdims[2..].iter().all(|&d| d == 1));
        let out_rank = facts.get(&add.input[conv_in]).map(|f| f.shape.len());
        if !per_channel || out_rank != Some(rank) {
            continue;
        }
        let bias = match conv.input.get(2).filter(|b| !b.is_empty()) {
            Some(_) => match f32_init(graph, conv.input.get(2)) {
                Some((_, b)) if b.len() as i64 == m => b,
                _ => continue,
            },
            None => vec![0.0; m as usize],
        };
        let sum: Vec<f32> = bias.iter().zip(&cvals).map(|(b, c)| b + c).collect();
        plans.push((ix, c, sum));
    }
    if plans.is_empty() {
        return Ok(false);
    }
    let mut remove = std::collections::HashSet::new();
    for (add_ix, conv_ix, sum) in plans {
        let out = graph.node[add_ix].output[0].clone();
        let bname = super::graph::fresh_name(graph, &format!("{out}_fused_bias"));
        graph.initializer.push(f32_tensor(&bname, &[sum.len() as i64], sum)?);
        let conv = &mut graph.node[conv_ix];
        conv.input.truncate(2);
        conv.input.push(bname);
        conv.output[0] = out;
        remove.insert(add_ix);
        report.count("Add of a per-channel constant folded into the Conv bias (not bit-exact)", 1);
    }
    super::graph::remove_nodes(graph, &remove);
    Ok(true)
}
