//! `sliceops cost`: each op's multiply-add rule evaluated at several sizes against a count made here
//! by walking the op's loops; bytes, parameters, totals and the peak of live memory on small graphs;
//! `--at` and its errors on the command line.

mod common;

use common::cli::sliceops;
use common::onnx_build::{Builder, A, D};
use sliceops::cost::{Cost, Macs, Size};
use sliceops::Model;
use std::collections::HashMap;
use tract_onnx::pb::tensor_proto::DataType;

const F: DataType = DataType::Float;

fn cost_of(bytes: Vec<u8>) -> Cost {
    let m = Model::load_bytes(&bytes).unwrap();
    sliceops::cost::cost(&m).unwrap()
}

fn sizes(at: &[(&str, i64)]) -> HashMap<String, i64> {
    at.iter().map(|(k, v)| (k.to_string(), *v)).collect()
}

/// The multiply-adds of node `name` at the sizes `at`.
fn macs_at(cost: &Cost, name: &str, at: &[(&str, i64)]) -> i128 {
    let node = cost.nodes.iter().find(|n| n.name == name).unwrap_or_else(|| panic!("no node {name}"));
    match &node.macs {
        Macs::Counted(p) => p.at(&sizes(at)).unwrap().as_constant().unwrap_or_else(|| panic!("{name}: {p:?}")),
        other => panic!("{name}: {other:?}"),
    }
}

fn zeros(n: usize) -> Vec<f32> {
    vec![0.0; n]
}

/// Output length of a convolution or pooling axis.
fn conv_out(input: i64, kernel: i64, stride: i64, pad: i64, dilation: i64) -> i64 {
    (input + pad - dilation * (kernel - 1) - 1) / stride + 1
}

#[test]
fn conv_counts_every_tap_of_every_output_and_the_bias() {
    // groups 2 over 4 -> 6 channels, 3x3 kernel, stride (2,1), pads (1,0,1,0), dilation (1,2).
    let bytes = Builder::new(17)
        .input("x", F, &[D::S("N"), D::N(4), D::S("H"), D::S("W")])
        .init_f32("w", &[6, 2, 3, 3], &zeros(108))
        .init_f32("b", &[6], &zeros(6))
        .node(
            "Conv",
            "",
            "conv",
            &["x", "w", "b"],
            &["y"],
            vec![
                ("group", A::I(2)),
                ("kernel_shape", A::Is(vec![3, 3])),
                ("strides", A::Is(vec![2, 1])),
                ("pads", A::Is(vec![1, 0, 1, 0])),
                ("dilations", A::Is(vec![1, 2])),
            ],
        )
        .output("y")
        .bytes();
    let cost = cost_of(bytes);
    for (n, h, w) in [(1, 9, 9), (2, 12, 7), (3, 5, 6)] {
        let (ho, wo) = (conv_out(h, 3, 2, 2, 1), conv_out(w, 3, 1, 0, 2));
        let mut count = 0i128;
        for _ in 0..n {
            for co in 0..6 {
                let group = co / 3;
                for _ in 0..ho {
                    for _ in 0..wo {
                        for ci in 0..4 {
                            if ci / 2 == group {
                                count += 9; // the 3x3 taps of one input channel
                            }
                        }
                        count += 1; // the bias
                    }
                }
            }
        }
        assert_eq!(macs_at(&cost, "conv", &[("N", n), ("H", h), ("W", w)]), count, "N={n} H={h} W={w}");
    }
}

#[test]
fn conv_transpose_counts_each_input_element_times_its_taps() {
    let bytes = Builder::new(17)
        .input("x", F, &[D::S("N"), D::N(4), D::S("H"), D::S("W")])
        .init_f32("w", &[4, 3, 3, 3], &zeros(108))
        .init_f32("b", &[3], &zeros(3))
        .node("ConvTranspose", "", "deconv", &["x", "w", "b"], &["y"], vec![("strides", A::Is(vec![2, 2]))])
        .output("y")
        .bytes();
    let cost = cost_of(bytes);
    for (n, h, w) in [(1, 4, 4), (2, 5, 3)] {
        let mut count = 0i128;
        for _ in 0..n * 4 * h * w {
            count += 3 * 3 * 3; // scattered into every output channel through every tap
        }
        count += (n * 3 * (2 * (h - 1) + 3) * (2 * (w - 1) + 3)) as i128; // the bias, per output element
        assert_eq!(macs_at(&cost, "deconv", &[("N", n), ("H", h), ("W", w)]), count);
    }
}

#[test]
fn gemm_and_matmul_count_m_n_k() {
    let bytes = Builder::new(17)
        .input("a", F, &[D::S("K"), D::S("M")])
        .init_f32("b", &[5, 8], &zeros(40))
        .init_f32("c", &[5], &zeros(5))
        .node("Gemm", "", "gemm", &["a", "b", "c"], &["y"], vec![("transA", A::I(1)), ("transB", A::I(1))])
        .input("p", F, &[D::S("B"), D::N(1), D::S("M2"), D::N(8)])
        .input("q", F, &[D::N(3), D::N(8), D::S("P")])
        .node("MatMul", "", "batched", &["p", "q"], &["z"], vec![])
        .input("v", F, &[D::N(8)])
        .node("MatMul", "", "vector", &["p", "v"], &["u"], vec![])
        .output("y")
        .output("z")
        .output("u")
        .bytes();
    let cost = cost_of(bytes);
    // Gemm: A' is [M, K] with K = 8 here (a: [K, M] transposed), B' [K, 5].
    for m in [1, 7] {
        assert_eq!(macs_at(&cost, "gemm", &[("K", 8), ("M", m)]), (m * 5 * 8 + m * 5) as i128);
    }
    for (b, m2, p) in [(1, 1, 1), (2, 3, 4)] {
        let mut count = 0i128;
        for _ in 0..b * 3 * m2 * p {
            for _ in 0..8 {
                count += 1;
            }
        }
        assert_eq!(macs_at(&cost, "batched", &[("B", b), ("M2", m2), ("P", p)]), count);
        assert_eq!(macs_at(&cost, "vector", &[("B", b), ("M2", m2)]), (b * m2 * 8) as i128);
    }
}

#[test]
fn einsum_counts_its_loop_nest() {
    let bytes = Builder::new(17)
        .input("a", F, &[D::S("B"), D::S("I"), D::N(6)])
        .input("b", F, &[D::S("B"), D::N(6), D::N(5)])
        .node("Einsum", "", "bmm", &["a", "b"], &["y"], vec![("equation", A::S("bij,bjk->bik"))])
        .input("c", F, &[D::N(2), D::S("I"), D::N(6)])
        .input("d", F, &[D::N(1), D::N(6), D::N(3)])
        .node("Einsum", "", "ellipsis", &["c", "d"], &["z"], vec![("equation", A::S("...ij,...jk->...ik"))])
        .output("y")
        .output("z")
        .bytes();
    let cost = cost_of(bytes);
    for (b, i) in [(1, 1), (3, 4)] {
        let mut count = 0i128;
        for _ in 0..b {
            for _ in 0..i {
                for _ in 0..6 {
                    for _ in 0..5 {
                        count += 1;
                    }
                }
            }
        }
        assert_eq!(macs_at(&cost, "bmm", &[("B", b), ("I", i)]), count);
        // the broadcast batch of 2 (1 gives way), i, j = 6, k = 3
        assert_eq!(macs_at(&cost, "ellipsis", &[("I", i)]), (2 * i * 6 * 3) as i128);
    }
}

#[test]
fn recurrent_cells_count_gate_products_bias_and_gate_arithmetic() {
    let (h, i) = (4i64, 3i64);
    let bytes = Builder::new(17)
        .input("x", F, &[D::S("T"), D::S("N"), D::N(i)])
        .init_f32("w", &[2, 4 * h, i], &zeros((2 * 4 * h * i) as usize))
        .init_f32("r", &[2, 4 * h, h], &zeros((2 * 4 * h * h) as usize))
        .init_f32("bias", &[2, 8 * h], &zeros((2 * 8 * h) as usize))
        .node(
            "LSTM",
            "",
            "lstm",
            &["x", "w", "r", "bias"],
            &["y"],
            vec![("hidden_size", A::I(h)), ("direction", A::S("bidirectional"))],
        )
        .init_f32("gw", &[1, 3 * h, i], &zeros((3 * h * i) as usize))
        .init_f32("gr", &[1, 3 * h, h], &zeros((3 * h * h) as usize))
        .node("GRU", "", "gru", &["x", "gw", "gr"], &["g"], vec![("hidden_size", A::I(h))])
        .output("y")
        .output("g")
        .bytes();
    let cost = cost_of(bytes);
    for (t, n) in [(1, 1), (5, 2)] {
        let steps = (t * n) as i128;
        let (h, i) = (h as i128, i as i128);
        // per step and row: the products with W and R, the bias, then per hidden value of each
        // direction: 4 gate sums, 3 sigmoids (32), 2 tanh (38), c = f*c + i*g, h = o*tanh(c) (4).
        let lstm = steps * (2 * 4 * h * i + 2 * 4 * h * h) + steps * 2 * 8 * h + steps * 2 * h * (4 + 96 + 76 + 4);
        assert_eq!(macs_at(&cost, "lstm", &[("T", t), ("N", n)]), lstm);
        let gru = steps * (3 * h * i + 3 * h * h) + steps * h * (3 + 64 + 38 + 5);
        assert_eq!(macs_at(&cost, "gru", &[("T", t), ("N", n)]), gru);
    }
}

#[test]
fn pools_norms_reductions_and_resize() {
    let bytes = Builder::new(18)
        .input("x", F, &[D::S("N"), D::N(3), D::S("H"), D::S("W")])
        .node(
            "MaxPool",
            "",
            "pool",
            &["x"],
            &["p"],
            vec![("kernel_shape", A::Is(vec![3, 2])), ("strides", A::Is(vec![2, 2]))],
        )
        .node("GlobalAveragePool", "", "gap", &["x"], &["g"], vec![])
        .init_f32("s", &[3], &zeros(3))
        .init_f32("bb", &[3], &zeros(3))
        .node("InstanceNormalization", "", "inorm", &["x", "s", "bb"], &["i"], vec![])
        .init_f32("ls", &[3], &zeros(3))
        .node("LayerNormalization", "", "lnorm", &["x", "ls"], &["l"], vec![("axis", A::I(1))])
        .init_i64("axes", &[2, 3])
        .node("ReduceL2", "", "l2", &["x", "axes"], &["r"], vec![])
        .init_f32("scales", &[4], &[1.0, 1.0, 2.0, 2.0])
        .node("Resize", "", "resize", &["x", "", "scales"], &["z"], vec![("mode", A::S("linear"))])
        .output("p")
        .output("g")
        .output("i")
        .output("l")
        .output("r")
        .output("z")
        .bytes();
    let cost = cost_of(bytes);
    for (n, h, w) in [(1, 5, 4), (2, 8, 9)] {
        let at = [("N", n), ("H", h), ("W", w)];
        let vol = (n * 3 * h * w) as i128;
        let (ph, pw) = (conv_out(h, 3, 2, 0, 1), conv_out(w, 2, 2, 0, 1));
        assert_eq!(macs_at(&cost, "pool", &at), (n * 3 * ph * pw * 6) as i128);
        assert_eq!(macs_at(&cost, "gap", &at), vol + (n * 3) as i128 * 4);
        // 7 per element, 29 per normalized row: (n, c) rows for InstanceNormalization, n rows for
        // LayerNormalization over axes 1.. .
        assert_eq!(macs_at(&cost, "inorm", &at), vol * 7 + (n * 3) as i128 * 29);
        assert_eq!(macs_at(&cost, "lnorm", &at), vol * 7 + n as i128 * 29);
        // a square and a sum per element, a square root per output element
        assert_eq!(macs_at(&cost, "l2", &at), vol * 2 + (n * 3) as i128 * 24);
        assert_eq!(macs_at(&cost, "resize", &at), vol * 4 * 4);
    }
}

#[test]
fn elementwise_weights_and_variadic_pairs() {
    let bytes = Builder::new(17)
        .input("x", F, &[D::S("N"), D::N(4)])
        .input("y", F, &[D::N(4)])
        .node("Add", "", "add", &["x", "y"], &["a"], vec![])
        .node("Sum", "", "sum3", &["x", "y", "a"], &["s"], vec![])
        .node("Tanh", "", "tanh", &["s"], &["t"], vec![])
        .node("Erf", "", "erf", &["t"], &["e"], vec![])
        .node("Softmax", "", "softmax", &["e"], &["m"], vec![])
        .node("Mean", "", "mean", &["x", "m"], &["o"], vec![])
        .node("Div", "", "div", &["o", "y"], &["d"], vec![])
        .output("d")
        .bytes();
    let cost = cost_of(bytes);
    for n in [1, 6] {
        let at = [("N", n)];
        let v = (n * 4) as i128;
        assert_eq!(macs_at(&cost, "add", &at), v);
        assert_eq!(macs_at(&cost, "sum3", &at), 2 * v);
        assert_eq!(macs_at(&cost, "tanh", &at), 38 * v);
        assert_eq!(macs_at(&cost, "erf", &at), (32 + 4 + 5 + 5) * v);
        assert_eq!(macs_at(&cost, "softmax", &at), 36 * v);
        assert_eq!(macs_at(&cost, "mean", &at), 5 * v);
        assert_eq!(macs_at(&cost, "div", &at), 4 * v);
    }
}

#[test]
fn bytes_params_totals_and_ops_without_a_rule() {
    let bytes = Builder::new(17)
        .input("x", F, &[D::S("N"), D::N(4)])
        .init_f32("w", &[4, 3], &zeros(12))
        .node("MatMul", "", "mm", &["x", "w"], &["y"], vec![])
        .init_i64("shape", &[-1])
        .node("Reshape", "", "flat", &["y", "shape"], &["f"], vec![])
        .init_i64("k", &[2])
        .node("TopK", "", "top", &["f", "k"], &["v", "i"], vec![])
        .output("v")
        .output("i")
        .bytes();
    let cost = cost_of(bytes);
    let at = sizes(&[("N", 5)]);
    let value = |s: &Size| s.known().unwrap().at(&at).unwrap().as_constant().unwrap();
    let mm = &cost.nodes[0];
    assert_eq!(mm.name, "mm");
    assert_eq!(mm.params.as_constant(), Some(12));
    assert_eq!(value(&mm.bytes_read), (5 * 4 + 12) * 4);
    assert_eq!(value(&mm.bytes_written), 5 * 3 * 4);
    let flat = &cost.nodes[1];
    assert_eq!(flat.macs, Macs::Counted(sliceops::cost::Poly::zero()));
    // the data and the int64 shape vector
    assert_eq!(value(&flat.bytes_read), 5 * 3 * 4 + 8);
    let top = &cost.nodes[2];
    assert!(matches!(&top.macs, Macs::NoRule(why) if why.contains("depends on the values")), "{:?}", top.macs);
    assert_eq!(value(&top.bytes_written), 2 * 4 + 2 * 8);
    assert_eq!(cost.total.nodes, 3);
    assert_eq!(cost.total.macs_left_out, 1);
    assert_eq!(cost.total.macs.at(&at).unwrap().as_constant(), Some(5 * 3 * 4));
    // each initializer once: w (12), shape (1), k (1)
    assert_eq!(cost.total.params.as_constant(), Some(14));
    assert_eq!(cost.initializer_bytes.as_constant(), Some(12 * 4 + 8 + 8));
    assert_eq!(value(&cost.input_bytes), 5 * 4 * 4);
}

#[test]
fn peak_counts_values_live_together_in_run_order() {
    // x -> a = Relu(x) -> b = Relu(a) -> c = Add(a, b): a lives until c; b and c are live with it.
    // y = Relu(x) [N,4] is a second output.
    let bytes = Builder::new(17)
        .input("x", F, &[D::S("N"), D::N(4)])
        .node("Relu", "", "ra", &["x"], &["a"], vec![])
        .node("Relu", "", "rb", &["a"], &["b"], vec![])
        .node("Add", "", "add", &["a", "b"], &["c"], vec![])
        .node("Sigmoid", "", "s", &["c"], &["d"], vec![])
        .output("d")
        .bytes();
    let cost = cost_of(bytes);
    let peak = cost.peak.single().expect("one peak");
    // a, b and c live at once after the Add: 3 values of 16*N bytes.
    assert_eq!(peak.0.at(&sizes(&[("N", 3)])).unwrap().as_constant(), Some(3 * 16 * 3));
    assert_eq!(peak.1, "add");
    assert_eq!(sliceops::report::figure_text(&peak.0), "48*N");
}

#[test]
fn data_dependent_sizes_keep_their_symbol() {
    let bytes = Builder::new(17)
        .input("x", F, &[D::S("N")])
        .node("NonZero", "", "nz", &["x"], &["idx"], vec![])
        .node("Transpose", "", "tr", &["idx"], &["t"], vec![])
        .output("t")
        .bytes();
    let cost = cost_of(bytes);
    let nz = &cost.nodes[0];
    assert_eq!(macs_at(&cost, "nz", &[("N", 7)]), 7);
    let written = sliceops::report::figure_text(nz.bytes_written.known().unwrap());
    let symbol = cost.symbols.iter().find(|s| s.name != "N").expect("NonZero's count");
    assert_eq!(written, format!("8*{}", symbol.name));
    let err = cost.check_sizes(&sizes(&[("N", 7), (&symbol.name, 8)])).unwrap_err();
    assert_eq!(err.to_string(), format!("{}=8 is more than its op allows (N = 7)", symbol.name));
    cost.check_sizes(&sizes(&[("N", 7), (&symbol.name, 7)])).unwrap();
    assert_eq!(macs_at(&cost, "tr", &[]), 0);
}

fn small_model(dir: &std::path::Path) -> std::path::PathBuf {
    let bytes = Builder::new(17)
        .input("x", F, &[D::S("batch"), D::N(8)])
        .init_f32("w", &[8, 2], &zeros(16))
        .node("MatMul", "", "mm", &["x", "w"], &["y"], vec![])
        .node("Relu", "", "relu", &["y"], &["z"], vec![])
        .output("z")
        .bytes();
    let path = dir.join("small.onnx");
    std::fs::write(&path, bytes).unwrap();
    path
}

#[test]
fn cli_table_and_json_with_and_without_sizes() {
    let dir = common::cli::scratch("cost", "cli_table");
    let model = small_model(&dir);
    let model = model.to_str().unwrap();
    let table = sliceops(&["cost", model]).ok().stdout.clone();
    let want = "\
node  op      macs      params  bytes read   bytes written
mm    MatMul  16*batch  16      32*batch+64  8*batch
relu  Relu    2*batch   0       8*batch      8*batch

op type  nodes  macs      params  bytes read   bytes written
MatMul   1      16*batch  16      32*batch+64  8*batch
Relu     1      2*batch   0       8*batch      8*batch
total    2      18*batch  16      40*batch+64  16*batch

peak of intermediate values: 16*batch bytes, after node 'relu'
graph inputs: 32*batch bytes; initializers: 64 bytes; constants computed before running: 0 bytes
";
    assert_eq!(table, want);
    let at = sliceops(&["cost", model, "--at", "batch=3"]).ok().stdout.clone();
    let totals = "\
op type  nodes  macs  params  bytes read  bytes written
MatMul   1      48    16      160         24
Relu     1      6     0       24          24
total    2      54    16      184         48

peak of intermediate values: 48 bytes, after node 'relu'
graph inputs: 96 bytes; initializers: 64 bytes; constants computed before running: 0 bytes
";
    assert!(at.ends_with(totals), "{at}");
    let json: serde_json::Value =
        serde_json::from_str(&sliceops(&["cost", model, "-f", "json", "-A", "batch=3"]).ok().stdout).unwrap();
    let macs = &json["total"]["macs"];
    assert_eq!(macs["expr"], "18*batch");
    assert_eq!(macs["tree"], serde_json::json!({"mul": [18, {"sym": "batch"}]}));
    assert_eq!(macs["at"], 54);
    assert_eq!(json["nodes"][0]["name"], "mm");
    assert_eq!(json["peak"]["candidates"][0]["bytes"]["expr"], 48);
    assert_eq!(json["at"]["batch"], 3);
}

#[test]
fn cli_errors_name_the_problem() {
    let dir = common::cli::scratch("cost", "cli_errors");
    let model = small_model(&dir);
    let model = model.to_str().unwrap();
    let r = sliceops(&["cost", model, "--at", "seq=3"]);
    assert_eq!(r.error(), "error: seq is not a symbol of this model's sizes (its symbols: batch)");
    let r = sliceops(&["cost", model, "--at", "batch=-1"]);
    assert_eq!(r.error(), "error: --at 'batch=-1': the value must be a size (an integer 0 or more)");
    let r = sliceops(&["cost", model, "--at", "batch"]);
    assert_eq!(r.error(), "error: --at 'batch' is not NAME=VALUE");
    let r = sliceops(&["cost", model, "--at", "batch=2,batch=3"]);
    assert_eq!(r.error(), "error: --at gives batch twice, with different values");
}

#[test]
fn sizes_past_64_bits_are_exact_not_wrapped() {
    // 2^31 x 2^31 times 2^31 x 2: 2^62 * ... the product past 64 bits is printed exactly.
    let bytes = Builder::new(17)
        .input("a", F, &[D::N(1 << 31), D::N(1 << 31)])
        .input("b", F, &[D::N(1 << 31), D::N(4)])
        .node("MatMul", "", "mm", &["a", "b"], &["y"], vec![])
        .output("y")
        .bytes();
    let cost = cost_of(bytes);
    assert_eq!(macs_at(&cost, "mm", &[]), (1i128 << 31) * 4 * (1i128 << 31));
    let dir = common::cli::scratch("cost", "wide");
    let path = dir.join("wide.onnx");
    std::fs::write(
        &path,
        Builder::new(17)
            .input("a", F, &[D::N(1 << 31), D::N(1 << 31)])
            .input("b", F, &[D::N(1 << 31), D::N(1 << 31)])
            .node("MatMul", "", "mm", &["a", "b"], &["y"], vec![])
            .output("y")
            .bytes(),
    )
    .unwrap();
    let json: serde_json::Value =
        serde_json::from_str(&sliceops(&["cost", path.to_str().unwrap(), "-f", "json"]).ok().stdout).unwrap();
    assert_eq!(json["nodes"][0]["macs"]["expr"], "9903520314283042199192993792");
}

#[test]
fn a_figure_of_too_many_terms_is_an_error_naming_the_node() {
    // Three axes, each the sum of 17 symbols (a Concat of 17 inputs per axis): the output's element
    // count expands to 17^3 = 4913 terms, more than a figure may hold.
    let leak = |s: String| -> &'static str { Box::leak(s.into_boxed_str()) };
    let mut b = Builder::new(17);
    for axis in 0..3 {
        let mut inputs = vec![];
        for i in 0..17 {
            let input = leak(format!("x{axis}_{i}"));
            let mut dims = vec![D::N(1), D::N(1), D::N(1)];
            dims[axis] = D::S(leak(format!("d{axis}_{i}")));
            b = b.input(input, F, &dims);
            inputs.push(input);
        }
        let out = leak(format!("c{axis}"));
        b = b.node("Concat", "", leak(format!("cat{axis}")), &inputs, &[out], vec![("axis", A::I(axis as i64))]);
    }
    let bytes = b
        .node("Add", "", "add01", &["c0", "c1"], &["a01"], vec![])
        .node("Add", "", "add", &["a01", "c2"], &["y"], vec![])
        .output("y")
        .bytes();
    let dir = common::cli::scratch("cost", "terms");
    let path = dir.join("terms.onnx");
    std::fs::write(&path, bytes).unwrap();
    let r = sliceops(&["cost", path.to_str().unwrap()]);
    assert_eq!(r.error(), "error: node 'add' (Add): a cost figure has more than 4096 terms");
}

#[test]
fn attention_rnn_and_batch_norm() {
    // Attention (opset 23), 4-D: Q [B, 2, S, 8], K [B, 2, T, 8], V [B, 2, T, 4] -> Y [B, 2, S, 4].
    let bytes = Builder::new(23)
        .input("q", F, &[D::S("B"), D::N(2), D::S("S"), D::N(8)])
        .input("k", F, &[D::S("B"), D::N(2), D::S("T"), D::N(8)])
        .input("v", F, &[D::S("B"), D::N(2), D::S("T"), D::N(4)])
        .node("Attention", "", "attn", &["q", "k", "v"], &["y"], vec![])
        .input("x", F, &[D::S("L"), D::S("B"), D::N(3)])
        .init_f32("w", &[1, 5, 3], &zeros(15))
        .init_f32("r", &[1, 5, 5], &zeros(25))
        .node("RNN", "", "rnn", &["x", "w", "r"], &["h"], vec![("hidden_size", A::I(5))])
        .input("img", F, &[D::S("B"), D::N(3), D::S("S"), D::S("T")])
        .init_f32("g", &[3], &zeros(3))
        .init_f32("bb", &[3], &zeros(3))
        .init_f32("m", &[3], &zeros(3))
        .init_f32("var", &[3], &zeros(3))
        .node("BatchNormalization", "", "bn", &["img", "g", "bb", "m", "var"], &["n"], vec![])
        .output("y")
        .output("h")
        .output("n")
        .bytes();
    let cost = cost_of(bytes);
    for (b, s, t, l) in [(1, 1, 1, 1), (2, 3, 5, 4)] {
        let at = [("B", b), ("S", s), ("T", t), ("L", l)];
        // per (batch, head, query, key): a dot of 8, the softmax's exp and division (36), 4 products with V
        let mut count = 0i128;
        for _ in 0..b * 2 * s * t {
            count += 8 + 36 + 4;
        }
        assert_eq!(macs_at(&cost, "attn", &at), count);
        // per step and row: W (5x3) and R (5x5) products, then an add and a tanh (38) per hidden value
        let steps = (l * b) as i128;
        assert_eq!(macs_at(&cost, "rnn", &at), steps * (15 + 25) + steps * 5 * 39);
        assert_eq!(macs_at(&cost, "bn", &at), (b * 3 * s * t) as i128 * 31);
    }
}

#[test]
fn figures_are_written_in_the_dim_grammar_and_read_back_to_their_values() {
    // The pools/norms model: divisions ((H-3)/2+1), products of several symbols.
    let bytes = Builder::new(18)
        .input("x", F, &[D::S("N"), D::N(3), D::S("H"), D::S("W")])
        .node(
            "MaxPool",
            "",
            "pool",
            &["x"],
            &["p"],
            vec![("kernel_shape", A::Is(vec![3, 2])), ("strides", A::Is(vec![2, 2]))],
        )
        .init_f32("w", &[4, 3, 3, 3], &zeros(108))
        .node("Conv", "", "conv", &["p", "w"], &["c"], vec![("pads", A::Is(vec![1, 1, 1, 1]))])
        .output("c")
        .bytes();
    let cost = cost_of(bytes);
    let mut figures = vec![];
    for n in &cost.nodes {
        if let Macs::Counted(p) = &n.macs {
            figures.push(p.clone());
        }
        figures.extend([&n.bytes_read, &n.bytes_written].into_iter().filter_map(|s| s.known().cloned()));
    }
    figures.push(cost.total.macs.clone());
    figures.extend(cost.peak.candidates.iter().map(|(p, _)| p.clone()));
    for p in figures {
        let text = p.text();
        let scope = tract_onnx::prelude::SymbolScope::default();
        let parsed = sliceops::symbolic::parse_dim(&scope, &text).unwrap_or_else(|e| panic!("{text}: {e}"));
        for (n, h, w) in [(1, 7, 6), (3, 12, 9)] {
            let values = tract_onnx::prelude::SymbolValues::default()
                .with(&scope.sym("N"), n)
                .with(&scope.sym("H"), h)
                .with(&scope.sym("W"), w);
            let read = parsed.eval(&values).to_i64().unwrap() as i128;
            let want = p.at(&sizes(&[("N", n), ("H", h), ("W", w)])).unwrap().as_constant().unwrap();
            assert_eq!(read, want, "{text} at N={n} H={h} W={w}");
        }
    }
}
