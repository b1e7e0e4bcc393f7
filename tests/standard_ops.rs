//! The standard ONNX ops sliceops adds to tract (src/ops/, listed in src/ops/added.rs): single-node models built here from
//! `tests/standard_ops/cases.json` (written by `tests/standard_ops/generate.py` with onnx's reference
//! implementation) must give the recorded outputs; symbolic dims must come out as exact
//! expressions; malformed nodes must be errors naming the node.

mod common;

use common::onnx_build::{Builder, A, D};
use common::{inferred, load_error};
use serde_json::Value;
use sliceops::Model;
use tract_onnx::pb::tensor_proto::DataType;
use tract_onnx::prelude::*;

fn cases() -> Vec<Value> {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/standard_ops/cases.json");
    let text = std::fs::read_to_string(path).unwrap();
    serde_json::from_str::<Value>(&text).unwrap().as_array().unwrap().clone()
}

fn data_type(name: &str) -> DataType {
    match name {
        "float16" => DataType::Float16,
        "float32" => DataType::Float,
        "float64" => DataType::Double,
        "bool" => DataType::Bool,
        "int8" => DataType::Int8,
        "uint8" => DataType::Uint8,
        "int16" => DataType::Int16,
        "uint16" => DataType::Uint16,
        "int32" => DataType::Int32,
        "uint32" => DataType::Uint32,
        "int64" => DataType::Int64,
        "uint64" => DataType::Uint64,
        other => panic!("dtype {other}"),
    }
}

fn float(v: &Value) -> f64 {
    match v {
        Value::String(s) if s == "nan" => f64::NAN,
        Value::String(s) if s == "inf" => f64::INFINITY,
        Value::String(s) if s == "-inf" => f64::NEG_INFINITY,
        v => v.as_f64().unwrap(),
    }
}

/// A tensor from its JSON record (`dtype`, `shape`, `values`).
fn tensor(record: &Value) -> Tensor {
    let shape: Vec<usize> = record["shape"].as_array().unwrap().iter().map(|d| d.as_u64().unwrap() as usize).collect();
    let values = record["values"].as_array().unwrap();
    fn build<T: Datum>(shape: &[usize], v: Vec<T>) -> Tensor {
        tract_ndarray::ArrayD::from_shape_vec(shape, v).unwrap().into_tensor()
    }
    let ints = || values.iter().map(|v| v.as_i64().unwrap());
    match record["dtype"].as_str().unwrap() {
        "float16" => build(&shape, values.iter().map(|v| half::f16::from_f64(float(v))).collect()),
        "float32" => build(&shape, values.iter().map(|v| float(v) as f32).collect()),
        "float64" => build(&shape, values.iter().map(float).collect()),
        "bool" => build(&shape, values.iter().map(|v| v.as_bool().unwrap()).collect()),
        "int8" => build(&shape, ints().map(|v| v as i8).collect()),
        "uint8" => build(&shape, ints().map(|v| v as u8).collect()),
        "int16" => build(&shape, ints().map(|v| v as i16).collect()),
        "uint16" => build(&shape, ints().map(|v| v as u16).collect()),
        "int32" => build(&shape, ints().map(|v| v as i32).collect()),
        "uint32" => build(&shape, ints().map(|v| v as u32).collect()),
        "int64" => build(&shape, ints().collect()),
        "uint64" => build(&shape, values.iter().map(|v| v.as_u64().unwrap()).collect()),
        other => panic!("dtype {other}"),
    }
}

/// A graph attribute from its serialized bytes written in hex.
fn graph_of_hex(hex: &str) -> tract_onnx::pb::GraphProto {
    use prost::Message;
    let bytes: Vec<u8> = (0..hex.len()).step_by(2).map(|i| u8::from_str_radix(&hex[i..i + 2], 16).unwrap()).collect();
    tract_onnx::pb::GraphProto::decode(&*bytes).unwrap()
}

/// The case's model: its given inputs as graph inputs of their exact shapes, one node.
fn model_of(case: &Value) -> Vec<u8> {
    let (opset, domain) = (case["opset"].as_i64().unwrap(), case["domain"].as_str().unwrap());
    // An op of another domain: that domain at the case's version, beside a recent default opset.
    let mut b = if domain.is_empty() { Builder::new(opset) } else { Builder::new(21).import(domain, opset) };
    let mut node_inputs = vec![];
    for i in case["inputs"].as_array().unwrap() {
        let name = i["name"].as_str().unwrap();
        node_inputs.push(name);
        if !name.is_empty() {
            // Dims the case declares symbolic by name, the others the values' own.
            let symbolic = case.get("symbolic").and_then(|s| s.get(name)).and_then(Value::as_array);
            let dims: Vec<D> = i["shape"]
                .as_array()
                .unwrap()
                .iter()
                .enumerate()
                .map(|(k, d)| match symbolic.and_then(|s| s[k].as_str()) {
                    Some(sym) => D::S(Box::leak(sym.to_string().into_boxed_str())),
                    None => D::N(d.as_i64().unwrap()),
                })
                .collect();
            b = b.input(name, data_type(i["dtype"].as_str().unwrap()), &dims);
        }
    }
    let attrs = case["attrs"]
        .as_object()
        .unwrap()
        .iter()
        .map(|(k, v)| {
            let a = match v {
                Value::Number(n) if n.is_f64() => A::F(n.as_f64().unwrap() as f32),
                Value::Number(n) => A::I(n.as_i64().unwrap()),
                Value::Array(list) if list.iter().any(Value::is_f64) => {
                    A::Fs(list.iter().map(|x| x.as_f64().unwrap() as f32).collect())
                }
                Value::Array(list) => A::Is(list.iter().map(|x| x.as_i64().unwrap()).collect()),
                Value::String(s) => A::S(Box::leak(s.clone().into_boxed_str())),
                Value::Object(o) if o.contains_key("graph") => A::G(graph_of_hex(o["graph"].as_str().unwrap())),
                other => panic!("attribute {k}: {other}"),
            };
            (k.as_str(), a)
        })
        .collect();
    let node_outputs: Vec<&str> =
        case["node_outputs"].as_array().unwrap().iter().map(|o| o.as_str().unwrap()).collect();
    let op = case["op"].as_str().unwrap();
    b = b.node(op, case["domain"].as_str().unwrap(), "node", &node_inputs, &node_outputs, attrs);
    for o in node_outputs.iter().filter(|o| !o.is_empty()) {
        b = b.output(o);
    }
    b.bytes()
}

/// Floats within 2 units in the last place of float32 (float16: of float16), relative to the larger
/// of the value and 1e-6, plus the case's `atol` (1e-7 by default): the reference and tract sum in
/// different orders. NaN only where expected.
fn close(got: f64, want: f64, dtype: &str, rtol: Option<f64>, atol: Option<f64>) -> bool {
    if want.is_nan() || got.is_nan() {
        return want.is_nan() && got.is_nan();
    }
    if want.is_infinite() {
        return got == want;
    }
    let ulp = match (rtol, dtype) {
        (Some(rtol), _) => rtol / 2.0,
        (None, "float16") => 1e-3,
        (None, "float64") => 1e-12,
        (None, _) => 1.2e-7,
    };
    (got - want).abs() <= 2.0 * ulp * want.abs().max(1e-6) + atol.unwrap_or(1e-7)
}

fn check_case(case: &Value) -> Result<(), String> {
    let name = case["name"].as_str().unwrap();
    let model = Model::load_bytes(&model_of(case)).map_err(|e| format!("{name}: load: {e:#}"))?;
    let inputs: Vec<Tensor> = case["inputs"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|i| !i["name"].as_str().unwrap().is_empty())
        .map(tensor)
        .collect();
    let outputs = model.run(inputs).map_err(|e| format!("{name}: run: {e:#}"))?;
    for (want, (out_name, got)) in case["outputs"].as_array().unwrap().iter().zip(&outputs) {
        let dtype = want["dtype"].as_str().unwrap();
        let want_t = tensor(want);
        if got.shape() != want_t.shape() || got.datum_type() != want_t.datum_type() {
            return Err(format!(
                "{name}: {out_name} is {:?} {:?}, expected {:?} {:?}",
                got.datum_type(),
                got.shape(),
                want_t.datum_type(),
                want_t.shape()
            ));
        }
        if dtype.starts_with("float") {
            let g = got.cast_to::<f64>().unwrap();
            let g = g.try_as_plain_ram().unwrap().as_slice::<f64>().unwrap().to_vec();
            let w: Vec<f64> = want["values"].as_array().unwrap().iter().map(float).collect();
            let (rtol, atol) = (case["rtol"].as_f64(), case["atol"].as_f64());
            // An exact case records its values' bits (a decimal in JSON may read back one ulp off).
            let bits: Option<Vec<u64>> =
                want["bits"].as_array().map(|b| b.iter().map(|v| v.as_u64().unwrap()).collect());
            let got_bits: Vec<u64> = match got.datum_type() {
                DatumType::F16 => got
                    .try_as_plain_ram()
                    .unwrap()
                    .as_slice::<half::f16>()
                    .unwrap()
                    .iter()
                    .map(|v| v.to_bits() as u64)
                    .collect(),
                DatumType::F32 => got
                    .try_as_plain_ram()
                    .unwrap()
                    .as_slice::<f32>()
                    .unwrap()
                    .iter()
                    .map(|v| v.to_bits() as u64)
                    .collect(),
                _ => got.try_as_plain_ram().unwrap().as_slice::<f64>().unwrap().iter().map(|v| v.to_bits()).collect(),
            };
            let ok = |i: usize| match &bits {
                Some(b) => got_bits[i] == b[i],
                None => close(g[i], w[i], dtype, rtol, atol),
            };
            if let Some(i) = (0..w.len()).find(|&i| !ok(i)) {
                return Err(format!("{name}: {out_name}[{i}] is {}, expected {}", g[i], w[i]));
            }
        } else if got != &want_t {
            return Err(format!("{name}: {out_name} is {got:?}, expected {want_t:?}"));
        }
    }
    Ok(())
}

fn check_op(op: &str) {
    let all = cases();
    let mine: Vec<&Value> = all.iter().filter(|c| c["op"] == op).collect();
    assert!(!mine.is_empty(), "no case of {op} in cases.json");
    let failures: Vec<String> = mine.iter().filter_map(|c| check_case(c).err()).collect();
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// The error loading or analysing a model, as text.
fn assert_error(bytes: &[u8], parts: &[&str]) {
    let e = load_error(bytes);
    for p in parts {
        assert!(e.contains(p), "{p:?} not in: {e}");
    }
}

mod attention {
    use super::*;

    #[test]
    fn reference_cases() {
        check_op("Attention");
    }

    fn attention(q: &[D], k: &[D], v: &[D], extra: &[(&str, DataType, Vec<D>)], attrs: Vec<(&str, A)>) -> Builder {
        let mut b = Builder::new(23).input("q", DataType::Float, q).input("k", DataType::Float, k).input(
            "v",
            DataType::Float,
            v,
        );
        let mut ins = vec!["q", "k", "v"];
        for (name, dt, dims) in extra {
            if name.is_empty() {
                ins.push("");
            } else {
                b = b.input(name, *dt, dims);
                ins.push(name);
            }
        }
        b.node("Attention", "", "attn", &ins, &["y", "present_key", "present_value", "qk"], attrs)
            .output("y")
            .output("present_key")
            .output("present_value")
            .output("qk")
    }

    #[test]
    fn symbolic_gqa_with_cache_and_mask() {
        use D::{N, S};
        let bytes = attention(
            &[S("batch"), N(8), S("seq"), N(16)],
            &[S("batch"), N(2), S("seq"), N(16)],
            &[S("batch"), N(2), S("seq"), N(4)],
            &[
                ("mask", DataType::Bool, vec![S("batch"), N(1), S("seq"), S("total")]),
                ("past_key", DataType::Float, vec![S("batch"), N(2), S("past"), N(16)]),
                ("past_value", DataType::Float, vec![S("batch"), N(2), S("past"), N(4)]),
            ],
            vec![("is_causal", A::I(1)), ("qk_matmul_output_mode", A::I(2))],
        )
        .bytes();
        assert_eq!(
            inferred(&bytes, &["y", "present_key", "present_value", "qk"]),
            [
                "F32 [batch, 8, seq, 4]",
                "F32 [batch, 2, seq+past, 16]",
                "F32 [batch, 2, seq+past, 4]",
                "F32 [batch, 8, seq, seq+past]"
            ]
        );
    }

    #[test]
    fn symbolic_head_size_with_the_default_scale() {
        use D::{N, S};
        // Typed here, run by the reference cases attention_symbolic_head_size_*.
        let bytes = attention(
            &[S("b"), N(2), S("l"), S("e")],
            &[S("b"), N(2), S("s"), S("e")],
            &[S("b"), N(2), S("s"), S("ev")],
            &[],
            vec![],
        )
        .bytes();
        assert_eq!(inferred(&bytes, &["y"]), ["F32 [b, 2, l, ev]"]);
    }

    #[test]
    fn symbolic_3d() {
        use D::{N, S};
        let bytes = attention(
            &[S("batch"), S("seq"), N(32)],
            &[S("batch"), S("kv"), N(16)],
            &[S("batch"), S("kv"), N(24)],
            &[],
            vec![("q_num_heads", A::I(4)), ("kv_num_heads", A::I(2))],
        )
        .bytes();
        assert_eq!(
            inferred(&bytes, &["y", "present_key", "present_value", "qk"]),
            ["F32 [batch, seq, 48]", "F32 [batch, 2, kv, 8]", "F32 [batch, 2, kv, 12]", "F32 [batch, 4, seq, kv]"]
        );
    }

    fn small(attrs: Vec<(&str, A)>) -> Vec<u8> {
        use D::N;
        attention(&[N(1), N(2), N(3), N(4)], &[N(1), N(2), N(5), N(4)], &[N(1), N(2), N(5), N(4)], &[], attrs).bytes()
    }

    #[test]
    fn malformed_attributes_are_errors() {
        assert_error(
            &small(vec![("qk_matmul_output_mode", A::I(4))]),
            &["node 'attn' (Attention)", "qk_matmul_output_mode is 4"],
        );
        assert_error(&small(vec![("scale", A::F(-1.0))]), &["'attn'", "scale is -1"]);
        assert_error(&small(vec![("softcap", A::F(f32::NAN))]), &["'attn'", "softcap is NaN"]);
        assert_error(&small(vec![("is_causal", A::I(2))]), &["'attn'", "is_causal is 2"]);
        assert_error(&small(vec![("left_window_size", A::I(-2))]), &["'attn'", "left_window_size is -2"]);
        assert_error(&small(vec![("softmax_precision", A::I(7))]), &["'attn'", "softmax_precision is 7"]);
        assert_error(&small(vec![("q_num_heads", A::I(0))]), &["'attn'", "q_num_heads is 0"]);
        assert_error(&small(vec![("q_num_heads", A::I(3))]), &["'attn'", "Q has 2 heads but the attributes say 3"]);
        assert_error(&small(vec![("scale", A::S("x"))]), &["'attn'", "scale must be Float"]);
    }

    #[test]
    fn malformed_inputs_are_errors() {
        use D::N;
        let f = DataType::Float;
        // 3D without head counts, and with a hidden size its heads do not divide.
        let no_heads = attention(&[N(1), N(3), N(8)], &[N(1), N(5), N(8)], &[N(1), N(5), N(8)], &[], vec![]);
        assert_error(&no_heads.bytes(), &["'attn'", "3D inputs need the attributes q_num_heads and kv_num_heads"]);
        let odd = attention(
            &[N(1), N(3), N(8)],
            &[N(1), N(5), N(8)],
            &[N(1), N(5), N(8)],
            &[],
            vec![("q_num_heads", A::I(3)), ("kv_num_heads", A::I(1))],
        );
        assert_error(&odd.bytes(), &["'attn'", "Q's hidden size 8 is not a multiple of its 3 heads"]);
        // Query heads not a multiple of key/value heads.
        let gqa =
            attention(&[N(1), N(3), N(2), N(4)], &[N(1), N(2), N(5), N(4)], &[N(1), N(2), N(5), N(4)], &[], vec![]);
        assert_error(&gqa.bytes(), &["'attn'", "Q has 3 heads, not a multiple of the 2 heads of K and V"]);
        // Head sizes of Q and K differ.
        let sizes =
            attention(&[N(1), N(2), N(3), N(4)], &[N(1), N(2), N(5), N(6)], &[N(1), N(2), N(5), N(4)], &[], vec![]);
        assert_error(&sizes.bytes(), &["'attn'", "Q's head size 4 differs from K's 6"]);
        // A mask longer than the keys, and one that does not broadcast.
        let four = [N(1), N(2), N(3), N(4)];
        let kv = [N(1), N(2), N(5), N(4)];
        let long = attention(&four, &kv, &kv, &[("m", f, vec![N(3), N(6)])], vec![]);
        assert_error(&long.bytes(), &["'attn'", "attn_mask has shape [3, 6], which does not broadcast"]);
        let wide = attention(&four, &kv, &kv, &[("m", f, vec![N(3), N(3), N(5)])], vec![]);
        assert_error(&wide.bytes(), &["'attn'", "attn_mask has shape [3, 3, 5]"]);
        // past_key without past_value, and a cache that does not extend the keys.
        let half = attention(&four, &kv, &kv, &[("", f, vec![]), ("pk", f, vec![N(1), N(2), N(2), N(4)])], vec![]);
        assert_error(&half.bytes(), &["'attn'", "past_key and past_value must be given together"]);
        let bad_cache = attention(
            &four,
            &kv,
            &kv,
            &[("", f, vec![]), ("pk", f, vec![N(1), N(2), N(2), N(3)]), ("pv", f, vec![N(1), N(2), N(2), N(4)])],
            vec![],
        );
        assert_error(&bad_cache.bytes(), &["'attn'", "past_key has shape [1, 2, 2, 3]"]);
        // nonpad_kv_seqlen of the wrong length.
        let nonpad = attention(
            &four,
            &kv,
            &kv,
            &[("", f, vec![]), ("", f, vec![]), ("", f, vec![]), ("n", DataType::Int64, vec![N(2)])],
            vec![],
        );
        assert_error(&nonpad.bytes(), &["'attn'", "nonpad_kv_seqlen has 2 entries for a batch of 1"]);
        // Integer Q.
        let ints = Builder::new(23)
            .input("q", DataType::Int32, &four)
            .input("k", DataType::Int32, &kv)
            .input("v", DataType::Int32, &kv)
            .node("Attention", "", "attn", &["q", "k", "v"], &["y"], vec![])
            .output("y");
        assert_error(&ints.bytes(), &["'attn'", "Q must be float16, float or double"]);
    }

    #[test]
    fn a_mask_that_breaks_at_run_time_is_an_error() {
        use D::{N, S};
        let bytes = attention(
            &[N(1), N(2), N(3), N(4)],
            &[N(1), N(2), N(5), N(4)],
            &[N(1), N(2), N(5), N(4)],
            &[("m", DataType::Float, vec![S("a"), S("b")])],
            vec![],
        )
        .bytes();
        let model = Model::load_bytes(&bytes).unwrap();
        let zeros = |s: &[usize]| Tensor::zero::<f32>(s).unwrap();
        let e = model
            .run(vec![zeros(&[1, 2, 3, 4]), zeros(&[1, 2, 5, 4]), zeros(&[1, 2, 5, 4]), zeros(&[2, 5])])
            .unwrap_err();
        let e = format!("{e:#}");
        assert!(e.contains("'attn'") && e.contains("attn_mask has shape [2, 5]"), "{e}");
    }
}

mod random {
    use super::*;
    use D::{N, S};

    #[test]
    fn seeded_cases_draw_the_reference_values_exactly() {
        for op in ["Dropout", "Bernoulli", "RandomUniform", "RandomNormal", "RandomUniformLike", "RandomNormalLike"] {
            check_op(op);
        }
    }

    fn values(t: &Tensor) -> Vec<f64> {
        t.cast_to::<f64>().unwrap().try_as_plain_ram().unwrap().as_slice::<f64>().unwrap().to_vec()
    }

    fn run(bytes: &[u8], inputs: Vec<Tensor>) -> Vec<Tensor> {
        let model = Model::load_bytes(bytes).unwrap();
        model.run(inputs).unwrap().into_iter().map(|(_, t)| t).collect()
    }

    #[test]
    fn unseeded_draws_differ_between_runs_and_stay_in_the_support() {
        let uniform = Builder::new(22)
            .node(
                "RandomUniform",
                "",
                "n",
                &[],
                &["y"],
                vec![("shape", A::Is(vec![64])), ("low", A::F(2.0)), ("high", A::F(3.0))],
            )
            .output("y")
            .bytes();
        let (a, b) = (values(&run(&uniform, vec![])[0]), values(&run(&uniform, vec![])[0]));
        assert_ne!(a, b);
        assert!(a.iter().chain(&b).all(|v| (2.0..3.0).contains(v)), "{a:?}");
        let bern = one_node(22, "Bernoulli", &[("x", DataType::Float, vec![N(200)])], vec![]).bytes();
        let p = tensor1(&[0.5f32; 200]);
        let (a, b) = (values(&run(&bern, vec![p.clone()])[0]), values(&run(&bern, vec![p])[0]));
        assert_ne!(a, b);
        assert!(a.iter().chain(&b).all(|&v| v == 0.0 || v == 1.0));
        let normal = one_node(22, "RandomNormalLike", &[("x", DataType::Double, vec![N(1000)])], vec![]).bytes();
        let g = values(&run(&normal, vec![Tensor::zero::<f64>(&[1000]).unwrap()])[0]);
        let mean = g.iter().sum::<f64>() / 1000.0;
        assert!(mean.abs() < 0.2, "mean {mean}");
    }

    #[test]
    fn a_seeded_node_gives_the_same_values_every_run() {
        let b =
            one_node(22, "RandomNormalLike", &[("x", DataType::Float, vec![N(9)])], vec![("seed", A::F(4.0))]).bytes();
        let x = Tensor::zero::<f32>(&[9]).unwrap();
        assert_eq!(run(&b, vec![x.clone()]), run(&b, vec![x]));
    }

    #[test]
    fn training_mode_is_read_at_run_time() {
        let b = Builder::new(22)
            .input("x", DataType::Float, &[N(50)])
            .input("t", DataType::Bool, &[])
            .node("Dropout", "", "n", &["x", "", "t"], &["y", "m"], vec![("seed", A::I(0))])
            .output("y")
            .output("m")
            .bytes();
        let x = tensor1(&[1f32; 50]);
        let off = run(&b, vec![x.clone(), tensor0(false)]);
        assert_eq!(off[0], x);
        assert!(values(&off[1]).iter().all(|&v| v == 1.0));
        let on = run(&b, vec![x, tensor0(true)]);
        let (y, m) = (values(&on[0]), values(&on[1]));
        // The default ratio 0.5: kept elements scaled by 2, the others 0, as the mask says.
        assert!(y.iter().zip(&m).all(|(&y, &m)| y == 2.0 * m));
        assert!(m.contains(&0.0) && m.contains(&1.0));
    }

    #[test]
    fn output_facts_are_exact() {
        let drop = Builder::new(22)
            .input("x", DataType::Float16, &[S("batch"), N(3)])
            .input("r", DataType::Float, &[])
            .input("t", DataType::Bool, &[])
            .node("Dropout", "", "n", &["x", "r", "t"], &["y", "m"], vec![])
            .output("y")
            .output("m")
            .bytes();
        assert_eq!(inferred(&drop, &["y", "m"]), ["F16 [batch, 3]", "Bool [batch, 3]"]);
        let like = one_node(
            22,
            "RandomUniformLike",
            &[("x", DataType::Int64, vec![S("batch"), N(3)])],
            vec![("dtype", A::I(11))],
        );
        assert_eq!(inferred(&like.bytes(), &["y"]), ["F64 [batch, 3]"]);
        let bern = one_node(22, "Bernoulli", &[("x", DataType::Double, vec![S("n")])], vec![("dtype", A::I(9))]);
        assert_eq!(inferred(&bern.bytes(), &["y"]), ["Bool [n]"]);
        let uniform = Builder::new(22)
            .node("RandomNormal", "", "n", &[], &["y"], vec![("shape", A::Is(vec![2, 0, 3]))])
            .output("y");
        assert_eq!(inferred(&uniform.bytes(), &["y"]), ["F32 [2, 0, 3]"]);
    }

    #[test]
    fn fold_keeps_random_nodes_over_constants() {
        use sliceops::fold::{fold, FoldOptions};
        let bytes = Builder::new(22)
            .init_f32("p", &[4], &[0.5; 4])
            .node("Bernoulli", "", "b", &["p"], &["y"], vec![("seed", A::F(1.0))])
            .node("RandomUniform", "", "u", &[], &["z"], vec![("shape", A::Is(vec![2]))])
            .node("RandomNormalLike", "", "g", &["p"], &["w"], vec![])
            .output("y")
            .output("z")
            .output("w")
            .bytes();
        let (model, _) = fold(&bytes, None, &FoldOptions::default()).expect("fold");
        let ops: Vec<String> =
            model.graph.as_ref().unwrap().node.iter().map(|n| n.op_type.clone().unwrap_or_default()).collect();
        assert_eq!(ops, ["Bernoulli", "RandomUniform", "RandomNormalLike"]);
    }

    #[test]
    fn errors() {
        let drop = |ratio: f32| {
            let b = Builder::new(22)
                .input("x", DataType::Float, &[N(4)])
                .input("r", DataType::Float, &[])
                .input("t", DataType::Bool, &[])
                .node("Dropout", "", "n", &["x", "r", "t"], &["y"], vec![])
                .output("y")
                .bytes();
            let model = Model::load_bytes(&b).unwrap();
            format!("{:#}", model.run(vec![tensor1(&[1f32; 4]), tensor0(ratio), tensor0(true)]).unwrap_err())
        };
        for r in [1.0, -0.1, f32::NAN] {
            let e = drop(r);
            assert!(e.contains("node 'n' (Dropout)") && e.contains("is outside [0, 1)"), "{e}");
        }
        let bern = one_node(22, "Bernoulli", &[("x", DataType::Float, vec![N(2)])], vec![]).bytes();
        let e = Model::load_bytes(&bern).unwrap().run(vec![tensor1(&[0.5f32, 1.5])]).unwrap_err();
        assert!(format!("{e:#}").contains("probability 1.5 is outside [0, 1]"), "{e:#}");
        let e = Model::load_bytes(&bern).unwrap().run(vec![tensor1(&[f32::NAN, 0.5])]).unwrap_err();
        assert!(format!("{e:#}").contains("probability NaN is outside [0, 1]"), "{e:#}");
        let seeded = |seed: f32| {
            one_node(22, "Bernoulli", &[("x", DataType::Float, vec![N(2)])], vec![("seed", A::F(seed))]).bytes()
        };
        assert_error(&seeded(-1.0), &["node 'n' (Bernoulli)", "seed -1 is outside [0, 2^32-1]"]);
        assert_error(&seeded(f32::INFINITY), &["seed inf is outside"]);
        assert_error(&seeded(5e9), &["seed 5000000000 is outside"]);
        let drop_seed = Builder::new(22)
            .input("x", DataType::Float, &[N(4)])
            .input("t", DataType::Bool, &[])
            .node("Dropout", "", "n", &["x", "", "t"], &["y"], vec![("seed", A::I(-3))])
            .output("y")
            .bytes();
        assert_error(&drop_seed, &["node 'n' (Dropout)", "seed -3 is outside"]);
        let uniform = |attrs| Builder::new(22).node("RandomUniform", "", "n", &[], &["y"], attrs).output("y").bytes();
        assert_error(&uniform(vec![]), &["node 'n' (RandomUniform)", "needs the attribute shape"]);
        assert_error(&uniform(vec![("shape", A::Is(vec![2, -1]))]), &["shape holds -1"]);
        assert_error(&uniform(vec![("shape", A::Is(vec![1 << 40, 1 << 40]))]), &["node 'n' (RandomUniform)"]);
        assert_error(&uniform(vec![("shape", A::Is(vec![2])), ("dtype", A::I(6))]), &["dtype must be float16"]);
        let like =
            one_node(22, "RandomUniformLike", &[("x", DataType::Float, vec![N(2)])], vec![("shape", A::Is(vec![2]))]);
        assert_error(&like.bytes(), &["takes its shape from its input"]);
        let like_int = one_node(22, "RandomNormalLike", &[("x", DataType::Int32, vec![N(2)])], vec![]);
        assert_error(&like_int.bytes(), &["node 'n' (RandomNormalLike)", "give dtype float16, float or double"]);
        let train_int = Builder::new(22)
            .input("x", DataType::Float, &[N(4)])
            .input("t", DataType::Int64, &[])
            .node("Dropout", "", "n", &["x", "", "t"], &["y"], vec![])
            .output("y")
            .bytes();
        assert_error(&train_int, &["training_mode must be bool"]);
    }
}

/// A one-node model over a float input `x` of `dims` (and more inputs as given).
fn one_node(opset: i64, op: &str, inputs: &[(&str, DataType, Vec<D>)], attrs: Vec<(&str, A)>) -> Builder {
    let mut b = Builder::new(opset);
    let mut names = vec![];
    for (name, dt, dims) in inputs {
        b = b.input(name, *dt, dims);
        names.push(*name);
    }
    b.node(op, "", "n", &names, &["y"], attrs).output("y")
}

mod cumprod {
    use super::*;
    use D::{N, S};

    #[test]
    fn reference_cases() {
        check_op("CumProd");
    }

    #[test]
    fn symbolic_shape_is_kept() {
        let b = one_node(
            26,
            "CumProd",
            &[("x", DataType::Float, vec![S("batch"), N(3)]), ("axis", DataType::Int64, vec![])],
            vec![],
        );
        assert_eq!(inferred(&b.bytes(), &["y"]), ["F32 [batch, 3]"]);
    }

    #[test]
    fn errors() {
        let b = |attrs| {
            one_node(26, "CumProd", &[("x", DataType::Float, vec![N(2)]), ("axis", DataType::Int64, vec![])], attrs)
                .bytes()
        };
        assert_error(&b(vec![("exclusive", A::I(2))]), &["node 'n' (CumProd)", "exclusive is 2: it must be 0 or 1"]);
        let far =
            one_node(26, "CumProd", &[("x", DataType::Float, vec![N(2)]), ("axis", DataType::Int64, vec![])], vec![]);
        let model = Model::load_bytes(&far.bytes()).unwrap();
        let e = model.run(vec![tensor1(&[1f32, 2.]), tensor0(3i64)]).unwrap_err();
        assert!(format!("{e:#}").contains("axis 3 is out of range for rank 1"), "{e:#}");
    }
}

mod reverse_sequence {
    use super::*;
    use D::{N, S};

    #[test]
    fn reference_cases() {
        check_op("ReverseSequence");
    }

    #[test]
    fn symbolic_shape_is_kept() {
        let b = one_node(
            10,
            "ReverseSequence",
            &[("x", DataType::Float, vec![S("time"), S("batch"), N(4)]), ("lens", DataType::Int64, vec![S("batch")])],
            vec![],
        );
        assert_eq!(inferred(&b.bytes(), &["y"]), ["F32 [time, batch, 4]"]);
    }

    #[test]
    fn errors() {
        let b = |attrs| {
            one_node(
                10,
                "ReverseSequence",
                &[("x", DataType::Float, vec![N(3), N(2)]), ("l", DataType::Int64, vec![N(2)])],
                attrs,
            )
            .bytes()
        };
        assert_error(
            &b(vec![("batch_axis", A::I(0)), ("time_axis", A::I(0))]),
            &["'n'", "batch_axis is 0 and time_axis 0"],
        );
        let model = Model::load_bytes(&b(vec![])).unwrap();
        let x = Tensor::zero::<f32>(&[3, 2]).unwrap();
        let e = model.run(vec![x, tensor1(&[1i64, 4])]).unwrap_err();
        assert!(format!("{e:#}").contains("sequence_lens[1] is 4, outside [0, 3]"), "{e:#}");
    }
}

mod bitcast {
    use super::*;
    use D::{N, S};

    #[test]
    fn reference_cases() {
        check_op("BitCast");
    }

    #[test]
    fn errors() {
        let b = |dt, to| one_node(26, "BitCast", &[("x", dt, vec![S("n"), N(2)])], vec![("to", A::I(to))]).bytes();
        assert_eq!(inferred(&b(DataType::Uint32, DataType::Float as i64), &["y"]), ["F32 [n, 2]"]);
        assert_error(&b(DataType::Float, DataType::Int64 as i64), &["'n'", "F32 is 32 bits wide but I64 is 64"]);
        assert_error(&b(DataType::Float, DataType::String as i64), &["'n'", "BitCast reads numbers and booleans only"]);
        let model = Model::load_bytes(&b(DataType::Uint8, DataType::Bool as i64)).unwrap();
        let e = model.run(vec![tensor2(&[[0u8, 2]])]).unwrap_err();
        assert!(format!("{e:#}").contains("the byte 2 is no boolean"), "{e:#}");
    }
}

mod center_crop_pad {
    use super::*;
    use D::{N, S};

    #[test]
    fn reference_cases() {
        check_op("CenterCropPad");
    }

    #[test]
    fn sizes_from_shape_arithmetic_are_exact_and_runtime_sizes_are_minted() {
        // shape = Shape(y)[0..1]: the crop follows another input's dims symbolically.
        let b = Builder::new(18)
            .input("x", DataType::Float, &[S("h"), N(4)])
            .input("like", DataType::Float, &[S("k")])
            .node("Shape", "", "s", &["like"], &["size"], vec![])
            .node("CenterCropPad", "", "n", &["x", "size"], &["y"], vec![("axes", A::Is(vec![0]))])
            .output("y");
        assert_eq!(inferred(&b.bytes(), &["y"]), ["F32 [k, 4]"]);
        let b = one_node(
            18,
            "CenterCropPad",
            &[("x", DataType::Float, vec![N(3), N(4)]), ("s", DataType::Int64, vec![N(1)])],
            vec![("axes", A::Is(vec![1]))],
        )
        .bytes();
        let shape = &inferred(&b, &["y"])[0];
        assert!(shape.starts_with("F32 [3, n_1"), "{shape}");
        let model = Model::load_bytes(&b).unwrap();
        let x = tract_ndarray::arr2(&[[1f32, 2., 3., 4.], [5., 6., 7., 8.], [9., 10., 11., 12.]]).into_tensor();
        let y = model.run(vec![x, tensor1(&[1i64])]).unwrap().remove(0).1;
        assert_eq!(y, tract_ndarray::arr2(&[[2f32], [6.], [10.]]).into_tensor());
    }

    #[test]
    fn errors() {
        let b = |axes: Vec<i64>, n| {
            one_node(
                18,
                "CenterCropPad",
                &[("x", DataType::Float, vec![N(3), N(4)]), ("s", DataType::Int64, vec![N(n)])],
                vec![("axes", A::Is(axes))],
            )
            .bytes()
        };
        assert_error(&b(vec![2], 1), &["'n'", "axis 2 is out of range for rank 2"]);
        assert_error(&b(vec![1, -1], 2), &["'n'", "axis 1 appears more than once"]);
        assert_error(&b(vec![0], 2), &["'n'", "shape has 2 entries for 1 axes"]);
        let model = Model::load_bytes(&b(vec![0], 1)).unwrap();
        let e = model.run(vec![Tensor::zero::<f32>(&[3, 4]).unwrap(), tensor1(&[-1i64])]).unwrap_err();
        assert!(format!("{e:#}").contains("sizes cannot be negative"), "{e:#}");
    }
}

mod det {
    use super::*;
    use D::{N, S};

    #[test]
    fn reference_cases() {
        check_op("Det");
    }

    #[test]
    fn symbolic_batch_and_errors() {
        let b = |dims| one_node(11, "Det", &[("x", DataType::Float, dims)], vec![]).bytes();
        assert_eq!(inferred(&b(vec![S("batch"), N(3), N(3)]), &["y"]), ["F32 [batch]"]);
        assert_error(&b(vec![N(2), N(3)]), &["'n'", "the matrices are 2x3: they must be square"]);
        assert_error(&b(vec![N(3)]), &["'n'", "X must have rank 2 or more, got 1"]);
    }
}

mod lp_pool {
    use super::*;
    use D::{N, S};

    #[test]
    fn reference_cases() {
        check_op("LpPool");
    }

    #[test]
    fn symbolic_batch_and_errors() {
        let b = |attrs| {
            one_node(18, "LpPool", &[("x", DataType::Float, vec![S("batch"), N(2), N(5), N(6)])], attrs).bytes()
        };
        assert_eq!(
            inferred(&b(vec![("kernel_shape", A::Is(vec![2, 2])), ("strides", A::Is(vec![2, 2]))]), &["y"]),
            ["F32 [batch, 2, 2, 3]"]
        );
        assert_error(&b(vec![]), &["'n'", "the attribute kernel_shape is required"]);
        assert_error(&b(vec![("kernel_shape", A::Is(vec![2, 2])), ("p", A::I(0))]), &["'n'", "p is 0"]);
        assert_error(
            &b(vec![("kernel_shape", A::Is(vec![2, 2])), ("strides", A::Is(vec![1]))]),
            &["'n'", "strides has 1 values, 2 expected"],
        );
        assert_error(
            &b(vec![("kernel_shape", A::Is(vec![2, 2])), ("auto_pad", A::S("SAME"))]),
            &["'n'", "auto_pad is \"SAME\""],
        );
        assert_error(&b(vec![("kernel_shape", A::Is(vec![2]))]), &["'n'", "X has rank 4 but the kernel has 1 dims"]);
    }
}

/// tract's own ops that sliceops fixes (src/ops/, listed in src/ops/replaced.rs), against onnx's reference too.
mod optional {
    use super::*;
    use D::{N, S};

    #[test]
    fn reference_cases() {
        check_op("OptionalHasElement");
        check_op("OptionalGetElement");
    }

    #[test]
    fn a_tensor_has_an_element_and_errors() {
        let b = one_node(18, "OptionalHasElement", &[("x", DataType::Float, vec![S("n"), N(2)])], vec![]).bytes();
        assert_eq!(inferred(&b, &["y"]), ["Bool []"]);
        let y = Model::load_bytes(&b).unwrap().run(vec![tensor2(&[[1f32, 2.]])]).unwrap().remove(0).1;
        assert_eq!(y, tensor0(true));
        let b = one_node(18, "OptionalGetElement", &[("x", DataType::Int64, vec![S("n")])], vec![]).bytes();
        assert_eq!(inferred(&b, &["y"]), ["I64 [n]"]);
        assert_error(&one_node(18, "OptionalGetElement", &[], vec![]).bytes(), &["'n'", "takes one input"]);
    }
}

mod quant {
    use super::*;
    use D::{N, S};

    #[test]
    fn reference_cases() {
        check_op("QuantizeLinear");
        check_op("DequantizeLinear");
    }

    fn node(op: &str, x: DataType, dims: Vec<D>, param: (DataType, Vec<D>), attrs: Vec<(&str, A)>) -> Vec<u8> {
        let again = |dims: &[D]| {
            dims.iter()
                .map(|d| {
                    if let S(s) = d {
                        S(s)
                    } else if let N(n) = d {
                        N(*n)
                    } else {
                        D::Unset
                    }
                })
                .collect()
        };
        let inputs = [("x", x, dims), ("s", DataType::Float, again(&param.1)), ("zp", param.0, param.1)];
        one_node(21, op, &inputs, attrs).bytes()
    }

    #[test]
    fn shapes_and_errors() {
        let b = node("QuantizeLinear", DataType::Float, vec![S("b"), N(4)], (DataType::Int16, vec![N(4)]), vec![]);
        assert_eq!(inferred(&b, &["y"]), ["I16 [b, 4]"]);
        let b = node("DequantizeLinear", DataType::Uint16, vec![S("b"), N(4)], (DataType::Uint16, vec![]), vec![]);
        assert_eq!(inferred(&b, &["y"]), ["F32 [b, 4]"]);
        let b = node("DequantizeLinear", DataType::Int16, vec![N(3), N(4)], (DataType::Int16, vec![N(5)]), vec![]);
        assert_error(&b, &["'n'", "5 values for 4 along axis 1"]);
        let blocked = vec![("axis", A::I(0)), ("block_size", A::I(2))];
        let b = node("QuantizeLinear", DataType::Float, vec![N(5), N(2)], (DataType::Int8, vec![N(2), N(2)]), blocked);
        assert_error(&b, &["'n'", "dim 0 should be 3"]);
        let b = node("QuantizeLinear", DataType::Float, vec![N(3)], (DataType::Int32, vec![]), vec![]);
        assert_error(&b, &["'n'", "int8, uint8, int16 and uint16 are supported"]);
        let b = node(
            "QuantizeLinear",
            DataType::Float,
            vec![N(3)],
            (DataType::Int8, vec![]),
            vec![("block_size", A::I(-1))],
        );
        assert_error(&b, &["'n'", "block_size is -1"]);
        // Per-axis parameters whose length is only known at run time.
        let b = node(
            "DequantizeLinear",
            DataType::Int16,
            vec![S("n")],
            (DataType::Int16, vec![S("m")]),
            vec![("axis", A::I(0))],
        );
        let model = Model::load_bytes(&b).unwrap();
        let e = model.run(vec![tensor1(&[1i16, 2]), tensor1(&[1f32, 2., 3.]), tensor1(&[0i16, 0, 0])]).unwrap_err();
        assert!(format!("{e:#}").contains("3 values for 2 along axis 0"), "{e:#}");
        let y = model.run(vec![tensor1(&[1i16, 2]), tensor1(&[0.5f32, 2.]), tensor1(&[-1i16, 1])]).unwrap().remove(0).1;
        assert_eq!(y, tensor1(&[1f32, 2.]));
    }
}

mod fixes {
    use super::*;
    use D::{N, S};

    #[test]
    fn plain_gru_has_exact_activations() {
        // The reference cases of the plain GRU kernel (the GRU cases above are checked with them).
        let all = cases();
        let plain: Vec<&Value> = all.iter().filter(|c| c["name"].as_str().unwrap().starts_with("gru_plain")).collect();
        assert_eq!(plain.len(), 3);
        let failures: Vec<String> = plain.iter().filter_map(|c| check_case(c).err()).collect();
        assert!(failures.is_empty(), "{}", failures.join("\n"));
    }

    #[test]
    fn recurrent_ops_in_reverse() {
        for op in ["RNN", "GRU", "LSTM"] {
            check_op(op);
        }
    }

    #[test]
    fn reverse_recurrence_over_a_symbolic_batch_and_errors() {
        let inputs = |batch: D| {
            vec![
                ("X", DataType::Float, vec![N(4), batch, N(3)]),
                ("W", DataType::Float, vec![N(1), N(15), N(3)]),
                ("R", DataType::Float, vec![N(1), N(15), N(5)]),
            ]
        };
        let attrs = |direction| vec![("direction", A::S(direction)), ("hidden_size", A::I(5))];
        let b = one_node(22, "GRU", &inputs(S("batch")), attrs("reverse")).bytes();
        assert_eq!(inferred(&b, &["y"]), ["F32 [4, 1, batch, 5]"]);
        let b = one_node(22, "GRU", &inputs(N(2)), attrs("backward")).bytes();
        assert_error(&b, &["'n'", "direction is \"backward\""]);
    }

    #[test]
    fn max_and_min_over_an_empty_set_and_booleans() {
        check_op("ReduceMax");
        check_op("ReduceMin");
    }

    #[test]
    fn matmul_of_two_vectors() {
        check_op("MatMul");
        let vectors = |a: D, b: D| {
            one_node(13, "MatMul", &[("a", DataType::Float, vec![a]), ("b", DataType::Float, vec![b])], vec![])
        };
        assert_eq!(inferred(&vectors(S("k"), S("k")).bytes(), &["y"]), ["F32 []"]);
        assert_error(&vectors(N(3), N(4)).bytes(), &["'n' (MatMul)", "A has 3 elements and B 4"]);
        let m = Model::load_bytes(&vectors(S("k"), S("k")).bytes()).unwrap();
        // Lengths that differ at run time break the symbol both share.
        let e = m.run(vec![tensor1(&[1f32, 2.]), tensor1(&[1f32, 2., 3.])]).unwrap_err();
        assert!(format!("{e:#}").contains("its dim k is 3"), "{e:#}");
        let scalar =
            one_node(13, "MatMul", &[("a", DataType::Float, vec![]), ("b", DataType::Float, vec![N(2)])], vec![]);
        assert_error(&scalar.bytes(), &["'n' (MatMul)", "got ranks 0 and 1"]);
    }

    #[test]
    fn pad_in_wrap_mode() {
        check_op("Pad");
        let wrap = |x: Vec<D>, pads: &[i64]| {
            Builder::new(19)
                .input("x", DataType::Float, &x)
                .init_i64("pads", pads)
                .node("Pad", "", "n", &["x", "pads"], &["y"], vec![("mode", A::S("wrap"))])
                .output("y")
                .bytes()
        };
        // Constant pads: exact dims, symbolic ones kept.
        assert_eq!(inferred(&wrap(vec![S("b"), N(3)], &[0, 4, 1, 2]), &["y"]), ["F32 [b+1, 9]"]);
        let m = Model::load_bytes(&wrap(vec![N(3)], &[4, 2])).unwrap();
        let y = m.run(vec![tensor1(&[1f32, 2., 3.])]).unwrap().remove(0).1;
        assert_eq!(y, tensor1(&[3f32, 1., 2., 3., 1., 2., 3., 1., 2.]));
        // Pads from the data's shape: dims as expressions, valued when the model runs.
        let b = Builder::new(19)
            .input("x", DataType::Float, &[S("w")])
            .node("Shape", "", "s", &["x"], &["shape"], vec![])
            .init_i64("zero", &[0])
            .node("Concat", "", "c", &["shape", "zero"], &["pads"], vec![("axis", A::I(0))])
            .node("Pad", "", "n", &["x", "pads"], &["y"], vec![("mode", A::S("wrap"))])
            .output("y")
            .bytes();
        assert_eq!(inferred(&b, &["y"]), ["F32 [2*w]"]);
        let y = Model::load_bytes(&b).unwrap().run(vec![tensor1(&[1f32, 2.])]).unwrap().remove(0).1;
        assert_eq!(y, tensor1(&[1f32, 2., 1., 2.]));
        assert_error(&wrap(vec![N(2), N(3)], &[0, -1, 1, 0]), &["'n'", "pads [-1, 0] on axis 1 are negative"]);
        assert_error(&wrap(vec![N(0), N(3)], &[1, 0, 0, 0]), &["'n'", "wrap pads [1, 0] on axis 0, which is empty"]);
        assert_error(&wrap(vec![N(2), N(3)], &[1, 0, 0]), &["'n'", "3 pads for 2 padded axes"]);
        // Pads known only at run time: checked when the node runs.
        let runtime = one_node(
            19,
            "Pad",
            &[("x", DataType::Float, vec![N(2)]), ("pads", DataType::Int64, vec![N(2)])],
            vec![("mode", A::S("wrap"))],
        );
        let m = Model::load_bytes(&runtime.bytes()).unwrap();
        let e = m.run(vec![tensor1(&[1f32, 2.]), tensor1(&[-1i64, 0])]).unwrap_err();
        assert!(format!("{e:#}").contains("'n'") && format!("{e:#}").contains("negative"), "{e:#}");
        let e = m.run(vec![tensor1(&[1f32, 2.]), tensor1(&[1i64 << 62, 1 << 62])]).unwrap_err();
        assert!(format!("{e:#}").contains("'n'"), "{e:#}");
    }

    #[test]
    fn max_and_min_of_booleans_typed_and_folded() {
        let b = one_node(
            20,
            "ReduceMin",
            &[("x", DataType::Bool, vec![S("batch"), N(3)]), ("axes", DataType::Int64, vec![N(1)])],
            vec![("keepdims", A::I(0))],
        );
        let shape = &inferred(&b.bytes(), &["y"])[0];
        assert!(shape.starts_with("Bool ["), "{shape}");
        // A constant input is reduced when the model is analysed.
        let b = Builder::new(20)
            .input("x", DataType::Float, &[N(1)])
            .init("flags", DataType::Bool, &[2, 2], vec![1, 0, 1, 1])
            .init_i64("axes", &[1])
            .node("ReduceMax", "", "n", &["flags"], &["m"], vec![("keepdims", A::I(0))])
            .node("ReduceMin", "", "k", &["flags", "axes"], &["y"], vec![])
            .output("m")
            .output("y")
            .bytes();
        assert_eq!(inferred(&b, &["m", "y"]), ["Bool []", "Bool [2, 1]"]);
        let out = Model::load_bytes(&b).unwrap().run(vec![tensor1(&[0f32])]).unwrap();
        assert_eq!(out[0].1, tensor0(true));
        assert_eq!(out[1].1, Tensor::from_shape(&[2, 1], &[false, true]).unwrap());
    }
}

mod fixes_elements {
    use super::*;
    use D::N;

    #[test]
    fn celu_with_alpha() {
        check_op("Celu");
        let b = one_node(12, "Celu", &[("x", DataType::Float, vec![N(2)])], vec![("alpha", A::F(0.0))]).bytes();
        assert_error(&b, &["'n'", "alpha is 0"]);
    }

    #[test]
    fn softmax_float16_as_numpy() {
        check_op("Softmax");
        let b = one_node(13, "Softmax", &[("x", DataType::Float16, vec![N(2), N(3)])], vec![]).bytes();
        assert_eq!(inferred(&b, &["y"]), ["F16 [2, 3]"]);
        for dt in [DataType::Float16, DataType::Float] {
            let b = one_node(13, "Softmax", &[("x", dt, vec![N(2), N(3)])], vec![("axis", A::I(2))]).bytes();
            assert_error(&b, &["node 'n' (Softmax)", "axis is 2 for an input of rank 2"]);
        }
    }

    #[test]
    fn conv_float16_summed_in_float32() {
        check_op("Conv");
        let x = || ("x", DataType::Float16, vec![N(1), N(2), N(5), N(5)]);
        let w = || ("w", DataType::Float16, vec![N(3), N(2), N(3), N(3)]);
        assert_eq!(inferred(&one_node(22, "Conv", &[x(), w()], vec![]).bytes(), &["y"]), ["F16 [1, 3, 3, 3]"]);
        // A bias of 4 values for 3 output channels: refused when run, naming the node.
        let bias = ("b", DataType::Float16, vec![N(4)]);
        let model = Model::load_bytes(&one_node(22, "Conv", &[x(), w(), bias], vec![]).bytes()).unwrap();
        let ones = |shape: &[usize]| Tensor::from_shape(shape, &vec![half::f16::ONE; shape.iter().product()]).unwrap();
        let e = model.run(vec![ones(&[1, 2, 5, 5]), ones(&[3, 2, 3, 3]), ones(&[4])]).unwrap_err();
        let e = format!("{e:#}");
        assert!(e.contains("\"n\"") && e.contains("Bias should be scalar or a vector"), "{e}");
    }

    #[test]
    fn gemm_float16() {
        check_op("Gemm");
        let ab = || [("a", DataType::Float16, vec![N(4), N(3)]), ("b", DataType::Float16, vec![N(3), N(6)])];
        let [a, b] = ab();
        assert_eq!(inferred(&one_node(13, "Gemm", &[a, b], vec![]).bytes(), &["y"]), ["F16 [4, 6]"]);
        let [a, b] = ab();
        let c = ("c", DataType::Float16, vec![N(5)]);
        assert_error(
            &one_node(13, "Gemm", &[a, b, c], vec![]).bytes(),
            &["node 'n' (Gemm)", "C has shape [5], which does not broadcast to the product's [4, 6]"],
        );
    }

    #[test]
    fn swish_with_alpha() {
        check_op("Swish");
        let b = one_node(24, "Swish", &[("x", DataType::Int32, vec![N(2)])], vec![]).bytes();
        assert_error(&b, &["'n'", "Swish is defined on floats, got I32"]);
    }

    #[test]
    fn space_to_depth_in_both_orders() {
        check_op("SpaceToDepth");
        let input = |h| vec![("x", DataType::Float, vec![N(1), N(2), N(h), N(4)])];
        let crd = |bs| vec![("blocksize", A::I(bs)), ("mode", A::S("CRD"))];
        assert_eq!(inferred(&one_node(28, "SpaceToDepth", &input(6), crd(2)).bytes(), &["y"]), ["F32 [1, 8, 3, 2]"]);
        assert_error(&one_node(28, "SpaceToDepth", &input(5), crd(2)).bytes(), &["'n'", "dim 2 is 5, not a multiple"]);
        assert_error(&one_node(28, "SpaceToDepth", &input(6), crd(0)).bytes(), &["'n'", "blocksize is 0"]);
        let bad = vec![("blocksize", A::I(2)), ("mode", A::S("RCD"))];
        assert_error(&one_node(28, "SpaceToDepth", &input(6), bad).bytes(), &["'n'", "mode is \"RCD\""]);
    }
}

mod swiglu {
    use super::*;
    use D::{N, S};

    #[test]
    fn reference_cases() {
        check_op("SwiGLU");
    }

    #[test]
    fn symbolic_shape_and_errors() {
        let two = |b: Vec<D>| vec![("a", DataType::Float, vec![S("batch"), N(4)]), ("b", DataType::Float, b)];
        let b = one_node(28, "SwiGLU", &two(vec![S("batch"), N(4)]), vec![]).bytes();
        assert_eq!(inferred(&b, &["y"]), ["F32 [batch, 4]"]);
        let b = one_node(28, "SwiGLU", &two(vec![N(1), N(4)]), vec![]).bytes();
        assert_error(&b, &["'n'", "A and B must have one shape and type"]);
    }
}

mod loss {
    use super::*;
    use D::{N, S};

    #[test]
    fn reference_cases() {
        check_op("NegativeLogLikelihoodLoss");
        check_op("SoftmaxCrossEntropyLoss");
    }

    fn nll(x: Vec<D>, t: Vec<D>, attrs: Vec<(&str, A)>) -> Vec<u8> {
        one_node(22, "NegativeLogLikelihoodLoss", &[("x", DataType::Float, x), ("t", DataType::Int64, t)], attrs)
            .bytes()
    }

    #[test]
    fn shapes_and_errors() {
        let none = vec![("reduction", A::S("none"))];
        assert_eq!(inferred(&nll(vec![S("n"), N(4), N(3)], vec![S("n"), N(3)], none), &["y"]), ["F32 [n, 3]"]);
        assert_eq!(inferred(&nll(vec![S("n"), N(4)], vec![S("n")], vec![]), &["y"]), ["F32 []"]);
        let bad = vec![("reduction", A::S("avg"))];
        assert_error(&nll(vec![N(2), N(4)], vec![N(2)], bad), &["'n'", "reduction is \"avg\""]);
        assert_error(
            &nll(vec![N(2), N(4)], vec![N(2), N(1)], vec![]),
            &["'n'", "the scores have rank 2 and the target rank 2"],
        );
        // A target out of [0, C) is an error when the model runs.
        let m = Model::load_bytes(&nll(vec![N(2), N(4)], vec![N(2)], vec![])).unwrap();
        let x = Tensor::zero::<f32>(&[2, 4]).unwrap();
        let t = tract_ndarray::arr1(&[1i64, 4]).into_tensor();
        let e = format!("{:#}", m.run(vec![x, t]).unwrap_err());
        assert!(e.contains("node 'n' (NegativeLogLikelihoodLoss): target 4 is out of [0, 4)"), "{e}");
    }
}

mod causal_conv {
    use super::*;
    use D::{N, S};

    #[test]
    fn reference_cases() {
        check_op("CausalConvWithState");
    }

    #[test]
    fn shapes_and_errors() {
        let inputs = |w: Vec<D>| vec![("x", DataType::Float, vec![S("b"), N(3), S("len")]), ("w", DataType::Float, w)];
        let b = one_node(27, "CausalConvWithState", &inputs(vec![N(3), N(1), N(4)]), vec![]).bytes();
        assert_eq!(inferred(&b, &["y"]), ["F32 [b, 3, len]"]);
        let bad = vec![("activation", A::S("relu"))];
        let b = one_node(27, "CausalConvWithState", &inputs(vec![N(3), N(1), N(4)]), bad).bytes();
        assert_error(&b, &["'n'", "activation is \"relu\""]);
        let b = one_node(27, "CausalConvWithState", &inputs(vec![N(3), N(4)]), vec![]).bytes();
        assert_error(&b, &["'n'", "input and weight must have rank 3, got 3 and 2"]);
    }

    #[test]
    fn states_too_large_are_refused_before_allocating() {
        // 2^20 batches of one channel and position, and a kernel of 2^20 (4 MB inputs): states of 2^40.
        let (b, c, k) = (1usize << 20, 1usize, 1usize << 20);
        let io = vec![
            ("x", DataType::Float, vec![N(b as i64), N(c as i64), N(1)]),
            ("w", DataType::Float, vec![N(c as i64), N(1), N(k as i64)]),
        ];
        let m = Model::load_bytes(&one_node(27, "CausalConvWithState", &io, vec![]).bytes()).unwrap();
        let (x, w) = (Tensor::zero::<f32>(&[b, c, 1]).unwrap(), Tensor::zero::<f32>(&[c, 1, k]).unwrap());
        let e = format!("{:#}", m.run(vec![x, w]).unwrap_err());
        assert!(e.contains("node 'n' (CausalConvWithState): output of"), "{e}");
    }
}

mod flex_attention {
    use super::*;
    use tract_onnx::pb::GraphProto;
    use D::{N, S};

    const PREVIEW: &str = "ai.onnx.preview";

    #[test]
    fn reference_cases() {
        check_op("FlexAttention");
    }

    /// A modifier graph `x -> y` of `dt` over `(B, H, L, S)` made of `nodes` (op, inputs, outputs).
    fn modifier(
        dt: DataType,
        nodes: &[(&str, &[&str], &[&str])],
        extra: impl FnOnce(Builder) -> Builder,
    ) -> GraphProto {
        let dims = [S("B"), S("H"), S("L"), S("S")];
        let mut b = extra(Builder::new(21).input("x", dt, &dims));
        for (i, (op, ins, outs)) in nodes.iter().enumerate() {
            b = b.node(op, "", &format!("m{i}"), ins, outs, vec![]);
        }
        b.output_typed("y", dt, &dims).graph("modifier")
    }

    /// One FlexAttention node `attn` over float inputs of these dims.
    fn flex(dt: DataType, q: &[D], k: &[D], v: &[D], attrs: Vec<(&str, A)>) -> Builder {
        Builder::new(21)
            .import(PREVIEW, 1)
            .input("q", dt, q)
            .input("k", dt, k)
            .input("v", dt, v)
            .node("FlexAttention", PREVIEW, "attn", &["q", "k", "v"], &["y"], attrs)
            .output("y")
    }

    /// A causal mask computed from the scores' own dims (Shape, Range), as exporters write it.
    fn causal(dt: DataType) -> GraphProto {
        modifier(
            dt,
            &[
                ("Shape", &["x"], &["shape"]),
                ("Gather", &["shape", "two"], &["l"]),
                ("Gather", &["shape", "three"], &["s"]),
                ("Range", &["zero", "l", "one"], &["i"]),
                ("Range", &["zero", "s", "one"], &["j"]),
                ("Unsqueeze", &["i", "axis"], &["column"]),
                ("LessOrEqual", &["j", "column"], &["mask"]),
                ("Where", &["mask", "x", "minus_inf"], &["y"]),
            ],
            |b| {
                b.init_i64("zero", &[0])
                    .init_i64("one", &[1])
                    .init_i64("two", &[2])
                    .init_i64("three", &[3])
                    .init_i64("axis", &[1])
                    .init_f32("minus_inf", &[], &[f32::NEG_INFINITY])
            },
        )
    }

    #[test]
    fn symbolic_batch_and_sequences() {
        let q = [S("batch"), N(8), S("seq"), N(16)];
        let k = [S("batch"), N(2), S("kv"), N(16)];
        let v = [S("batch"), N(2), S("kv"), N(4)];
        let plain = flex(DataType::Float, &q, &k, &v, vec![]).bytes();
        assert_eq!(inferred(&plain, &["y"]), ["F32 [batch, 8, seq, 4]"]);
        let half = flex(DataType::Float16, &q, &k, &v, vec![]).bytes();
        assert_eq!(inferred(&half, &["y"]), ["F16 [batch, 8, seq, 4]"]);
        // The modifier graph typed over the symbolic scores: its Shape/Range arithmetic stays exact.
        let masked = flex(DataType::Float, &q, &k, &v, vec![("score_mod", A::G(causal(DataType::Float)))]).bytes();
        assert_eq!(inferred(&masked, &["y"]), ["F32 [batch, 8, seq, 4]"]);
        // ... as the node's own translation, not a fallback typed from its rules.
        let analysis = Model::load_bytes(&masked).unwrap().analyse().unwrap();
        assert!(analysis.fallbacks.is_empty(), "{:?}", analysis.fallbacks);
        // A symbolic head size with the default scale: typed, and run (the reference cases
        // flex_attention_symbolic_head_size_*), the scale computed from Q's shape.
        let (qe, ke, ve) =
            ([S("b"), N(2), S("l"), S("e")], [S("b"), N(2), S("s"), S("e")], [S("b"), N(2), S("s"), S("ev")]);
        let sym = flex(DataType::Float, &qe, &ke, &ve, vec![]).bytes();
        assert_eq!(inferred(&sym, &["y"]), ["F32 [b, 2, l, ev]"]);
        let analysis = Model::load_bytes(&sym).unwrap().analyse().unwrap();
        assert!(analysis.fallbacks.is_empty(), "{:?}", analysis.fallbacks);
    }

    #[test]
    fn a_modifier_reads_outer_values() {
        // score_mod adds a bias that is a graph input; Q is zero, so row i's probabilities are
        // softmax(bias[i]) and Y = those times V.
        let score_mod = modifier(DataType::Float, &[("Add", &["x", "bias"], &["y"])], |b| b);
        let bytes = Builder::new(21)
            .import(PREVIEW, 1)
            .input("q", DataType::Float, &[N(1), N(1), N(2), N(3)])
            .input("k", DataType::Float, &[N(1), N(1), N(3), N(3)])
            .input("v", DataType::Float, &[N(1), N(1), N(3), N(2)])
            .input("bias", DataType::Float, &[N(2), N(3)])
            .node("FlexAttention", PREVIEW, "attn", &["q", "k", "v"], &["y"], vec![("score_mod", A::G(score_mod))])
            .output("y")
            .bytes();
        let model = Model::load_bytes(&bytes).unwrap();
        let bias = [0.5f32, -1.0, 2.0, 0.0, 0.0, -3.0];
        let vals = [1.0f32, -2.0, 0.5, 4.0, -1.5, 0.25];
        let t = |shape: &[usize], v: &[f32]| {
            tract_ndarray::ArrayD::from_shape_vec(shape, v.to_vec()).unwrap().into_tensor()
        };
        let out = model
            .run(vec![
                Tensor::zero::<f32>(&[1, 1, 2, 3]).unwrap(),
                t(&[1, 1, 3, 3], &[0.3; 9]),
                t(&[1, 1, 3, 2], &vals),
                t(&[2, 3], &bias),
            ])
            .unwrap();
        let y = out[0].1.to_plain_array_view::<f32>().unwrap().iter().copied().collect::<Vec<f32>>();
        for i in 0..2 {
            let row: Vec<f64> = bias[3 * i..3 * i + 3].iter().map(|&b| f64::from(b).exp()).collect();
            let sum: f64 = row.iter().sum();
            for c in 0..2 {
                let want: f64 = (0..3).map(|j| row[j] / sum * f64::from(vals[2 * j + c])).sum();
                assert!(
                    (f64::from(y[2 * i + c]) - want).abs() < 1e-6,
                    "y[{i}, {c}] = {}, expected {want}",
                    y[2 * i + c]
                );
            }
        }
    }

    #[test]
    fn scores_too_large_are_refused_before_allocating() {
        // 2^20 queries and keys of one dim from 4 MB inputs: scores of 2^40 values.
        let long = 1i64 << 20;
        let dims = [N(1), N(1), N(long), N(1)];
        let model = Model::load_bytes(&flex(DataType::Float, &dims, &dims, &dims, vec![]).bytes()).unwrap();
        let x = Tensor::zero::<f32>(&[1, 1, 1 << 20, 1]).unwrap();
        let e = format!("{:#}", model.run(vec![x.clone(), x.clone(), x]).unwrap_err());
        // Named after the node's own part (its Q·Kᵀ product, optimized into a matmul).
        assert!(e.contains("node 'attn.") && e.contains("would take 4398046511104 bytes"), "{e}");
    }

    fn small(attrs: Vec<(&str, A)>) -> Vec<u8> {
        let qkv = [N(1), N(2), N(3), N(4)];
        flex(DataType::Float, &qkv, &qkv, &qkv, attrs).bytes()
    }

    #[test]
    fn malformed_attributes_are_errors() {
        assert_error(
            &small(vec![("softmax_precision", A::I(7))]),
            &["node 'attn' (FlexAttention)", "softmax_precision is 7"],
        );
        assert_error(&small(vec![("softmax_precision", A::I(16))]), &["'attn'", "bfloat16"]);
        assert_error(&small(vec![("scale", A::F(-1.0))]), &["'attn'", "scale is -1"]);
        assert_error(&small(vec![("scale", A::F(f32::INFINITY))]), &["'attn'", "scale is inf"]);
        assert_error(&small(vec![("score_mod", A::I(1))]), &["'attn'", "score_mod must be a graph"]);
    }

    #[test]
    fn malformed_modifier_graphs_are_errors() {
        let f = DataType::Float;
        let dims = [S("B"), S("H"), S("L"), S("S")];
        let two_inputs = Builder::new(21)
            .input("x", f, &dims)
            .input("z", f, &dims)
            .node("Add", "", "m", &["x", "z"], &["y"], vec![])
            .output("y")
            .graph("two");
        assert_error(&small(vec![("score_mod", A::G(two_inputs))]), &["'attn'", "score_mod graph takes 2 inputs"]);
        let two_outputs = Builder::new(21)
            .input("x", f, &dims)
            .node("Relu", "", "m", &["x"], &["y"], vec![])
            .output("x")
            .output("y")
            .graph("two");
        assert_error(&small(vec![("prob_mod", A::G(two_outputs))]), &["'attn'", "prob_mod graph returns 2 outputs"]);
        let reduced = modifier(f, &[("ReduceSum", &["x", "last"], &["y"])], |b| b.init_i64("last", &[-1]));
        assert_error(
            &small(vec![("score_mod", A::G(reduced))]),
            &["'attn'", "the score_mod graph returns F32 [1, 2, 3, 1]: it must return its input's type and shape, F32 [1, 2, 3, 3]"],
        );
        let widened = Builder::new(21)
            .input("x", f, &dims)
            .node("Cast", "", "m", &["x"], &["y"], vec![("to", A::I(DataType::Double as i64))])
            .output("y")
            .graph("cast");
        assert_error(
            &small(vec![("prob_mod", A::G(widened))]),
            &["'attn'", "the prob_mod graph returns F64 [1, 2, 3, 3]"],
        );
    }

    #[test]
    fn malformed_inputs_are_errors() {
        let f = DataType::Float;
        let four = [N(1), N(2), N(3), N(4)];
        let three = flex(f, &[N(2), N(3), N(4)], &four, &four, vec![]);
        assert_error(&three.bytes(), &["'attn'", "Q has shape [2, 3, 4]: Q, K and V must have rank 4"]);
        let gqa = flex(f, &[N(1), N(3), N(2), N(4)], &four, &four, vec![]);
        assert_error(&gqa.bytes(), &["'attn'", "Q has 3 heads, not a multiple of the 2 heads of K and V"]);
        let sizes = flex(f, &four, &[N(1), N(2), N(3), N(6)], &four, vec![]);
        assert_error(&sizes.bytes(), &["'attn'", "Q's head size 4 differs from K's 6"]);
        let batch = flex(f, &four, &[N(2), N(2), N(3), N(4)], &[N(2), N(2), N(3), N(4)], vec![]);
        assert_error(&batch.bytes(), &["'attn'", "the batch sizes differ: Q has 1, K 2 and V 2"]);
        let kv = flex(f, &four, &four, &[N(1), N(2), N(5), N(4)], vec![]);
        assert_error(&kv.bytes(), &["'attn'", "K has 2 heads of 3 positions but V has 2 of 5"]);
        let ints = flex(DataType::Int32, &four, &four, &four, vec![]);
        assert_error(
            &ints.bytes(),
            &["'attn'", "Q is I32: inputs other than float16, float and double need softmax_precision"],
        );
        let ints = flex(DataType::Int32, &four, &four, &four, vec![("softmax_precision", A::I(1))]);
        assert_error(&ints.bytes(), &["'attn'", "FlexAttention takes float16, float or double inputs"]);
        let node = Builder::new(21)
            .import(PREVIEW, 1)
            .input("q", f, &four)
            .input("k", f, &four)
            .node("FlexAttention", PREVIEW, "attn", &["q", "k"], &["y"], vec![])
            .output("y");
        assert_error(&node.bytes(), &["'attn'", "takes the three inputs Q, K and V"]);
    }
}

mod linear_attention {
    use super::*;
    use D::{N, S};

    #[test]
    fn reference_cases() {
        check_op("LinearAttention");
    }

    #[test]
    fn shapes_and_errors() {
        let qkv = vec![
            ("q", DataType::Float, vec![S("b"), S("t"), N(8)]),
            ("k", DataType::Float, vec![S("b"), S("t"), N(4)]),
            ("v", DataType::Float, vec![S("b"), S("t"), N(6)]),
        ];
        let heads = |rule| vec![("q_num_heads", A::I(4)), ("kv_num_heads", A::I(2)), ("update_rule", A::S(rule))];
        let b = one_node(27, "LinearAttention", &qkv, heads("linear")).bytes();
        assert_eq!(inferred(&b, &["y"]), ["F32 [b, t, 12]"]);
        assert_error(&one_node(27, "LinearAttention", &qkv, heads("gated")).bytes(), &["'n'", "needs decay given"]);
        assert_error(
            &one_node(27, "LinearAttention", &qkv, heads("fast")).bytes(),
            &["'n'", "update_rule is \"fast\""],
        );
        let odd = vec![("q_num_heads", A::I(3)), ("kv_num_heads", A::I(2)), ("update_rule", A::S("linear"))];
        assert_error(&one_node(27, "LinearAttention", &qkv, odd).bytes(), &["'n'", "q_num_heads 3 is not a multiple"]);
    }

    #[test]
    fn a_state_too_large_is_refused_before_allocating() {
        // dk = dv = 2^20 from 4 MB inputs: a state of 2^40 values.
        let wide = 1usize << 20;
        let one = |name| (name, DataType::Float, vec![N(1), N(1), N(wide as i64)]);
        let heads = vec![("q_num_heads", A::I(1)), ("kv_num_heads", A::I(1)), ("update_rule", A::S("linear"))];
        let m = Model::load_bytes(&one_node(27, "LinearAttention", &[one("q"), one("k"), one("v")], heads).bytes());
        let x = Tensor::zero::<f32>(&[1, 1, wide]).unwrap();
        let e = format!("{:#}", m.unwrap().run(vec![x.clone(), x.clone(), x]).unwrap_err());
        assert!(e.contains("node 'n' (LinearAttention): output of 1099511627776 elements"), "{e}");
    }
}

mod tensor_scatter {
    use super::*;
    use D::{N, S};

    #[test]
    fn reference_cases() {
        check_op("TensorScatter");
    }

    #[test]
    fn shapes_and_errors() {
        let io = vec![
            ("c", DataType::Float, vec![S("b"), N(4), N(3)]),
            ("u", DataType::Float, vec![S("b"), N(1), N(3)]),
            ("w", DataType::Int64, vec![S("b")]),
        ];
        assert_eq!(inferred(&one_node(24, "TensorScatter", &io, vec![]).bytes(), &["y"]), ["F32 [b, 4, 3]"]);
        let first = vec![("axis", A::I(0))];
        assert_error(
            &one_node(24, "TensorScatter", &io, first).bytes(),
            &["'n'", "the batch axis must come before it"],
        );
        // A linear write past the end of the cache is an error when the model runs.
        let m = Model::load_bytes(&one_node(24, "TensorScatter", &io, vec![]).bytes()).unwrap();
        let (c, u) = (Tensor::zero::<f32>(&[1, 4, 3]).unwrap(), Tensor::zero::<f32>(&[1, 1, 3]).unwrap());
        let e = format!("{:#}", m.run(vec![c, u, tract_ndarray::arr1(&[4i64]).into_tensor()]).unwrap_err());
        assert!(e.contains("node 'n' (TensorScatter): write position 4 is outside the cache of length 4"), "{e}");
    }
}

mod affine_grid {
    use super::*;
    use D::{N, S};

    #[test]
    fn reference_cases() {
        check_op("AffineGrid");
    }

    #[test]
    fn size_as_a_parameter_and_errors() {
        let theta = |b: &'static str| Builder::new(20).input("theta", DataType::Float, &[S(b), N(2), N(3)]);
        // Size a constant: exact dims.
        let b = theta("n").init_i64("size", &[1, 3, 4, 5]);
        let b = b.node("AffineGrid", "", "n", &["theta", "size"], &["y"], vec![]).output("y").bytes();
        assert_eq!(inferred(&b, &["y"]), ["F32 [n, 4, 5, 2]"]);
        // Size a graph input: N and the last dim stay exact.
        let b = theta("n").input("size", DataType::Int64, &[N(4)]);
        let b = b.node("AffineGrid", "", "n", &["theta", "size"], &["y"], vec![]).output("y").bytes();
        assert_eq!(inferred(&b, &["y"]), ["F32 [n, n_1, n_2, 2]"]);
        let m = Model::load_bytes(&b).unwrap();
        let th = Tensor::zero::<f32>(&[1, 2, 3]).unwrap();
        let e =
            format!("{:#}", m.run(vec![th.clone(), tract_ndarray::arr1(&[1i64, 3, -4, 5]).into_tensor()]).unwrap_err());
        assert!(e.contains("node 'n' (AffineGrid): size holds -4"), "{e}");
        let e = format!("{:#}", m.run(vec![th, tract_ndarray::arr1(&[2i64, 3, 4, 5]).into_tensor()]).unwrap_err());
        assert!(e.contains("node 'n' (AffineGrid): size says N = 2, theta has 1"), "{e}");
    }
}

/// `Unique` with NaNs and signed zeros, as numpy's `unique` (which the reference calls) treats them:
/// `-0.0` equals `0.0` (the first kept), NaNs equal each other and sort last.
#[test]
fn unique_compares_as_numpy_and_its_length_is_bound_when_it_runs() {
    let nan = f32::NAN;
    let x = tensor1(&[2.0f32, nan, -0.0, 1.0, nan, 0.0, 2.0]);
    let model = |sorted: i64| {
        let bytes = Builder::new(11)
            .input("x", DataType::Float, &[D::S("n")])
            .node("Unique", "", "u", &["x"], &["y", "indices", "inverse", "counts"], vec![("sorted", A::I(sorted))])
            .output("y")
            .output("indices")
            .output("inverse")
            .output("counts")
            .bytes();
        Model::load_bytes(&bytes).unwrap()
    };
    let bits = |t: &Tensor| -> Vec<u32> {
        t.try_as_plain_ram().unwrap().as_slice::<f32>().unwrap().iter().map(|f| f.to_bits()).collect()
    };
    type Case = (i64, [f32; 4], [i64; 4], [i64; 7], [i64; 4]);
    let cases: [Case; 2] = [
        (1, [-0.0, 1.0, 2.0, nan], [2, 3, 0, 1], [2, 3, 0, 1, 3, 0, 2], [2, 1, 2, 2]),
        (0, [2.0, nan, -0.0, 1.0], [0, 1, 2, 3], [0, 1, 2, 3, 1, 2, 0], [2, 2, 2, 1]),
    ];
    for (sorted, y, indices, inverse, counts) in cases {
        let m = model(sorted);
        let facts = m.infer().unwrap();
        let shape = |name: &str| {
            let f = facts.iter().find(|f| f.name == name).unwrap();
            f.shape.iter().map(sliceops::format_dim).collect::<Vec<_>>()
        };
        assert_eq!(
            (shape("y"), shape("inverse"), shape("counts")),
            (vec!["u_0".into()], vec!["n".into()], vec!["u_0".into()])
        );
        let out = m.run(vec![x.clone()]).unwrap();
        let ints = |i: usize| out[i].1.try_as_plain_ram().unwrap().as_slice::<i64>().unwrap().to_vec();
        assert_eq!(bits(&out[0].1), y.map(f32::to_bits), "sorted={sorted}");
        assert_eq!(ints(1), indices, "sorted={sorted}");
        assert_eq!(ints(2), inverse, "sorted={sorted}");
        assert_eq!(ints(3), counts, "sorted={sorted}");
    }
    let bad_axis = Builder::new(11)
        .input("x", DataType::Float, &[D::N(2), D::N(3)])
        .node("Unique", "", "u", &["x"], &["y"], vec![("axis", A::I(2))])
        .output("y")
        .bytes();
    let e = format!("{:#}", Model::load_bytes(&bad_axis).unwrap().infer().unwrap_err());
    assert!(e.contains("node 'u' (Unique): axis 2 is out of range for rank 2"), "{e}");
}

mod roi_align {
    use super::*;

    #[test]
    fn reference_cases() {
        check_op("RoiAlign");
    }

    #[test]
    fn regions_it_cannot_pool_are_errors_naming_the_node() {
        let bytes = Builder::new(16)
            .input("x", DataType::Float, &[D::N(1), D::N(1), D::N(4), D::N(4)])
            .input("rois", DataType::Float, &[D::S("r"), D::N(4)])
            .input("b", DataType::Int64, &[D::S("r")])
            .node("RoiAlign", "", "ra", &["x", "rois", "b"], &["y"], vec![])
            .output("y")
            .bytes();
        let m = Model::load_bytes(&bytes).unwrap();
        let x = Tensor::zero::<f32>(&[1, 1, 4, 4]).unwrap();
        let run = |rois: [f32; 4], b: i64| {
            let rois = Tensor::from_shape(&[1, 4], &rois).unwrap();
            format!("{:#}", m.run(vec![x.clone(), rois, tensor1(&[b])]).unwrap_err())
        };
        let e = run([0.0, 0.0, 2.0, 2.0], 1);
        assert!(e.contains("node 'ra' (RoiAlign): batch_indices[0] is 1: the batch has 1 images"), "{e}");
        let e = run([0.0, 0.0, 1e30, 2.0], 0);
        assert!(e.contains("node 'ra' (RoiAlign): a region with corners"), "{e}");
        assert!(e.contains("samples per bin: too many"), "{e}");
        let e = run([0.0, f32::NAN, 2.0, 2.0], 0);
        assert!(e.contains("node 'ra' (RoiAlign): a region with corners") && e.contains("is not finite"), "{e}");
    }
}

mod unique {
    use super::*;

    #[test]
    fn reference_cases() {
        check_op("Unique");
    }
}

mod max_unpool {
    use super::*;
    use D::{N, S};

    #[test]
    fn reference_cases() {
        check_op("MaxUnpool");
    }

    fn unpool(x: fn() -> Vec<D>, shape: Option<D>, attrs: Vec<(&str, A)>) -> Builder {
        let mut inputs = vec![("x", DataType::Float, x()), ("i", DataType::Int64, x())];
        if let Some(len) = shape {
            inputs.push(("shape", DataType::Int64, vec![len]));
        }
        one_node(11, "MaxUnpool", &inputs, attrs)
    }

    fn k2s2() -> Vec<(&'static str, A)> {
        vec![("kernel_shape", A::Is(vec![2, 2])), ("strides", A::Is(vec![2, 2]))]
    }

    #[test]
    fn shapes_are_exact_or_minted() {
        let b = unpool(|| vec![S("batch"), N(3), S("h"), N(4)], None, k2s2());
        assert_eq!(inferred(&b.bytes(), &["y"]), ["F32 [batch, 3, 2*h, 8]"]);
        let pads = vec![("kernel_shape", A::Is(vec![3])), ("strides", A::Is(vec![2])), ("pads", A::Is(vec![1, 0]))];
        let b = unpool(|| vec![S("batch"), N(3), N(4)], None, pads);
        assert_eq!(inferred(&b.bytes(), &["y"]), ["F32 [batch, 3, 8]"]);
        // output_shape a constant: its values; a graph input: fresh dims bound by the run.
        let b = Builder::new(11)
            .input("x", DataType::Float, &[S("batch"), N(1), N(2), N(2)])
            .input("i", DataType::Int64, &[S("batch"), N(1), N(2), N(2)])
            .init_i64("shape", &[1, 1, 5, 6])
            .node("MaxUnpool", "", "n", &["x", "i", "shape"], &["y"], k2s2())
            .output("y");
        assert_eq!(inferred(&b.bytes(), &["y"]), ["F32 [1, 1, 5, 6]"]);
        let b = unpool(|| vec![N(1), N(1), N(2), N(2)], Some(S("k")), k2s2()).bytes();
        let shape = &inferred(&b, &["y"])[0];
        assert!(shape.starts_with("F32 [n_0"), "{shape}");
        let m = Model::load_bytes(&b).unwrap();
        let x = Tensor::from_shape(&[1, 1, 2, 2], &[1f32, 2., 3., 4.]).unwrap();
        let i = Tensor::from_shape(&[1, 1, 2, 2], &[0i64, 3, 9, 15]).unwrap();
        let y = m.run(vec![x.clone(), i.clone(), tensor1(&[1i64, 1, 4, 5])]).unwrap().remove(0).1;
        let mut want = vec![0f32; 20];
        (want[0], want[3], want[11], want[18]) = (1., 2., 3., 4.);
        assert_eq!(y, Tensor::from_shape(&[1, 1, 4, 5], &want).unwrap());
        let e = format!("{:#}", m.run(vec![x.clone(), i.clone(), tensor1(&[1i64, 1, 3, 5])]).unwrap_err());
        assert!(e.contains("'n'") && e.contains("output_shape[2] is 3: too small for the 4 positions unpooled"), "{e}");
        let e = format!("{:#}", m.run(vec![x.clone(), i, tensor1(&[1i64, 1, 4])]).unwrap_err());
        assert!(e.contains("'n'") && e.contains("output_shape has 3 values for X of rank 4"), "{e}");
        let far = Tensor::from_shape(&[1, 1, 2, 2], &[0i64, 3, 16, 1]).unwrap();
        let e = format!("{:#}", m.run(vec![x, far, tensor1(&[1i64, 1, 4, 5])]).unwrap_err());
        assert!(e.contains("'n'") && e.contains("I holds 16 at flat position 2: outside the 16 positions"), "{e}");
    }

    #[test]
    fn errors() {
        let b = |attrs| unpool(|| vec![N(1), N(1), N(2), N(2)], None, attrs).bytes();
        assert_error(&b(vec![]), &["'n'", "the attribute kernel_shape is required"]);
        assert_error(
            &b(vec![("kernel_shape", A::Is(vec![2, 2])), ("strides", A::Is(vec![1]))]),
            &["'n'", "strides has 1 values, 2 expected"],
        );
        assert_error(
            &b(vec![("kernel_shape", A::Is(vec![2, 2])), ("pads", A::Is(vec![1, 1]))]),
            &["'n'", "pads has 2 values, 4 expected"],
        );
        assert_error(
            &b(vec![("kernel_shape", A::Is(vec![2, 2])), ("strides", A::Is(vec![0, 1]))]),
            &["'n'", "strides holds 0: it must be at least 1"],
        );
        assert_error(&b(vec![("kernel_shape", A::Is(vec![2]))]), &["'n'", "X has rank 4 but the kernel has 1 dims"]);
        assert_error(
            &b(vec![("kernel_shape", A::Is(vec![1, 1])), ("pads", A::Is(vec![1, 0, 1, 0]))]),
            &["'n'", "spatial axis 0 of X has 2 positions: unpooled it would have 0"],
        );
        let small = Builder::new(11)
            .input("x", DataType::Float, &[N(1), N(1), N(2), N(2)])
            .input("i", DataType::Int64, &[N(1), N(1), N(2), N(2)])
            .init_i64("shape", &[1, 1, 3, 4])
            .node("MaxUnpool", "", "n", &["x", "i", "shape"], &["y"], k2s2())
            .output("y");
        assert_error(&small.bytes(), &["'n'", "output_shape[2] is 3: too small for the 4 positions unpooled"]);
        // Sizes beyond memory are refused before allocating.
        let huge = unpool(
            || vec![N(1), N(1), S("h"), N(2)],
            None,
            vec![("kernel_shape", A::Is(vec![2, 2])), ("strides", A::Is(vec![1 << 40, 1 << 40]))],
        );
        let m = Model::load_bytes(&huge.bytes()).unwrap();
        let x = Tensor::zero::<f32>(&[1, 1, 2, 2]).unwrap();
        let e = format!("{:#}", m.run(vec![x, Tensor::zero::<i64>(&[1, 1, 2, 2]).unwrap()]).unwrap_err());
        assert!(e.contains("'n'") && e.contains("more than this process can allocate"), "{e}");
    }
}

mod col2im {
    use super::*;
    use D::{N, S};

    #[test]
    fn reference_cases() {
        check_op("Col2Im");
    }

    /// Col2Im over `x` with constant image and block shapes.
    fn constant(x: &[D], image: &[i64], block: &[i64], attrs: Vec<(&str, A)>) -> Vec<u8> {
        Builder::new(18)
            .input("x", DataType::Float, x)
            .init_i64("image", image)
            .init_i64("block", block)
            .node("Col2Im", "", "n", &["x", "image", "block"], &["y"], attrs)
            .output("y")
            .bytes()
    }

    #[test]
    fn shapes_are_exact_or_minted() {
        let b = constant(&[S("batch"), N(12), N(16)], &[5, 6], &[2, 3], vec![]);
        assert_eq!(inferred(&b, &["y"]), ["F32 [batch, 2, 5, 6]"]);
        // The image dims from another tensor's shape: symbolic.
        let b = Builder::new(18)
            .input("x", DataType::Float, &[S("batch"), N(4), S("l")])
            .input("like", DataType::Float, &[S("h"), S("w")])
            .init_i64("block", &[1, 2])
            .node("Shape", "", "s", &["like"], &["image"], vec![])
            .node("Col2Im", "", "n", &["x", "image", "block"], &["y"], vec![])
            .output("y");
        assert_eq!(inferred(&b.bytes(), &["y"]), ["F32 [batch, 2, h, w]"]);
        // Both shapes at run time: C and the image dims minted, bound by the run.
        let b = one_node(
            18,
            "Col2Im",
            &[
                ("x", DataType::Float, vec![N(1), N(4), N(2)]),
                ("image", DataType::Int64, vec![N(2)]),
                ("block", DataType::Int64, vec![N(2)]),
            ],
            vec![],
        )
        .bytes();
        let shape = &inferred(&b, &["y"])[0];
        assert!(shape.starts_with("F32 [1, n_1") && shape.contains("n_2") && shape.contains("n_3"), "{shape}");
        let m = Model::load_bytes(&b).unwrap();
        let x = Tensor::from_shape(&[1, 4, 2], &[1f32, 2., 3., 4., 5., 6., 7., 8.]).unwrap();
        let y = m.run(vec![x.clone(), tensor1(&[2i64, 3]), tensor1(&[2i64, 2])]).unwrap().remove(0).1;
        let want = Tensor::from_shape(&[1, 1, 2, 3], &[1f32, 2. + 3., 4., 5., 6. + 7., 8.]).unwrap();
        assert_eq!(y, want);
        let e = format!("{:#}", m.run(vec![x.clone(), tensor1(&[2i64, 4]), tensor1(&[2i64, 2])]).unwrap_err());
        assert!(e.contains("'n'") && e.contains("input has 2 block positions") && e.contains("give 1 x 3"), "{e}");
        let e = format!("{:#}", m.run(vec![x.clone(), tensor1(&[2i64, 3]), tensor1(&[3i64, 1])]).unwrap_err());
        assert!(e.contains("'n'") && e.contains("input has 4 rows: not a multiple of the block size 3"), "{e}");
        let e = format!("{:#}", m.run(vec![x, tensor1(&[2i64, 3]), tensor1(&[0i64, 1])]).unwrap_err());
        assert!(e.contains("'n'") && e.contains("block_shape holds 0"), "{e}");
    }

    #[test]
    fn errors() {
        let x = [N(1), N(12), N(16)];
        assert_error(&constant(&x, &[5, 6], &[2, 3], vec![("pads", A::Is(vec![1, 1]))]), &["'n'", "pads has 2 values"]);
        assert_error(
            &constant(&x, &[5, 6], &[2, 3], vec![("strides", A::Is(vec![1, 0]))]),
            &["'n'", "strides holds 0: it must be at least 1"],
        );
        assert_error(&constant(&x, &[5, 7], &[2, 3], vec![]), &["'n'", "input has 16 block positions", "give 4 x 5"]);
        assert_error(&constant(&x, &[5, 6], &[5, 1], vec![]), &["'n'", "input has 12 rows: not a multiple"]);
        assert_error(&constant(&x, &[1, 6], &[2, 3], vec![]), &["'n'", "a block spans 2 positions on axis 0"]);
        assert_error(&constant(&x, &[5, 6], &[2, 3, 1], vec![]), &["'n'", "block_shape has 3 values, image_shape 2"]);
        assert_error(&constant(&[N(12), N(16)], &[5, 6], &[2, 3], vec![]), &["'n'", "input must have rank 3"]);
        assert_error(
            &constant(&x, &[5, 6], &[1 << 40, 1 << 40], vec![]),
            &["'n'", "block_shape [1099511627776, 1099511627776] is too large"],
        );
    }
}

mod deform_conv {
    use super::*;
    use D::{N, S};

    #[test]
    fn reference_cases() {
        check_op("DeformConv");
    }

    fn deform(x: Vec<D>, w: Vec<D>, offset: Vec<D>, more: Vec<(&str, Vec<D>)>, attrs: Vec<(&str, A)>) -> Vec<u8> {
        let mut inputs =
            vec![("x", DataType::Float, x), ("w", DataType::Float, w), ("offset", DataType::Float, offset)];
        inputs.extend(more.into_iter().map(|(name, dims)| (name, DataType::Float, dims)));
        one_node(19, "DeformConv", &inputs, attrs).bytes()
    }

    #[test]
    fn shapes_are_exact() {
        let attrs = vec![
            ("group", A::I(2)),
            ("offset_group", A::I(2)),
            ("pads", A::Is(vec![1, 0, 1, 1])),
            ("strides", A::Is(vec![2, 1])),
        ];
        let b = deform(
            vec![S("batch"), N(4), S("h"), N(6)],
            vec![N(6), N(2), N(3), N(2)],
            vec![S("batch"), N(24), S("oh"), N(6)],
            vec![("b", vec![N(6)])],
            attrs,
        );
        let shape = &inferred(&b, &["y"])[0];
        assert!(shape.starts_with("F32 [batch, 6, ") && shape.ends_with(", 6]") && shape.contains('h'), "{shape}");
        let b = deform(
            vec![N(1), N(2), N(7)],
            vec![N(3), N(2), N(3)],
            vec![N(1), N(3), N(4)],
            vec![],
            vec![("pads", A::Is(vec![1, 1])), ("strides", A::Is(vec![2]))],
        );
        assert_eq!(inferred(&b, &["y"]), ["F32 [1, 3, 4]"]);
    }

    #[test]
    fn errors() {
        let x = || vec![N(1), N(4), N(5), N(5)];
        let w = |m, c, k| vec![N(m), N(c), N(k), N(2)];
        let off = |c, h| vec![N(1), N(c), N(h), N(4)];
        let g = |g| vec![("group", A::I(g))];
        let ok = deform(x(), w(6, 2, 2), off(8, 4), vec![], g(2));
        assert_eq!(inferred(&ok, &["y"]), ["F32 [1, 6, 4, 4]"]);
        let cases: Vec<(Vec<u8>, &str)> = vec![
            (
                deform(x(), w(6, 2, 2), off(8, 4), vec![], g(3)),
                "X has 4 channels: group 3 and offset_group 1 must divide",
            ),
            (deform(x(), w(6, 2, 2), off(8, 4), vec![], g(0)), "attribute group is 0: it must be at least 1"),
            (
                deform(x(), w(6, 2, 2), off(7, 4), vec![], g(2)),
                "offset has 7 channels: offset_group 1 x 4 kernel taps x 2 axes",
            ),
            (
                deform(x(), w(6, 2, 2), off(8, 3), vec![], g(2)),
                "offset has 3 positions on spatial axis 0: the convolution gives 4",
            ),
            (
                deform(x(), w(6, 2, 2), off(8, 4), vec![], g(1)),
                "W has 2 channels per group: times group 1 is not X's 4",
            ),
            (deform(x(), w(5, 2, 2), off(8, 4), vec![], g(2)), "W has 5 output channels: group 2 does not divide them"),
            (deform(x(), w(6, 2, 7), off(28, 4), vec![], g(2)), "the kernel spans 7 positions on spatial axis 0"),
            (
                deform(x(), w(6, 2, 2), off(8, 4), vec![], vec![("group", A::I(2)), ("kernel_shape", A::Is(vec![2]))]),
                "kernel_shape has 1 values, 2 expected",
            ),
            (
                deform(
                    x(),
                    w(6, 2, 2),
                    off(8, 4),
                    vec![],
                    vec![("group", A::I(2)), ("kernel_shape", A::Is(vec![3, 2]))],
                ),
                "kernel_shape[0] is 3 but W's kernel has 2",
            ),
            (
                deform(x(), w(6, 2, 2), off(8, 4), vec![], vec![("group", A::I(2)), ("strides", A::Is(vec![0, 1]))]),
                "strides holds 0: it must be at least 1",
            ),
            (
                deform(
                    x(),
                    w(6, 2, 2),
                    off(8, 4),
                    vec![],
                    vec![("group", A::I(2)), ("dilations", A::Is(vec![1 << 40, 1]))],
                ),
                "the kernel spans 1099511627777 positions on spatial axis 0",
            ),
            (deform(x(), w(6, 2, 2), off(8, 4), vec![("b", vec![N(5)])], g(2)), "B has shape [5]: [6] is needed"),
            (
                deform(x(), w(6, 2, 2), off(8, 4), vec![("b", vec![N(6)]), ("m", vec![N(1), N(3), N(4), N(4)])], g(2)),
                "mask has shape [1, 3, 4, 4]: [N, offset_group 1 x 4 kernel taps, output positions] is needed",
            ),
        ];
        for (bytes, part) in cases {
            assert_error(&bytes, &["node 'n' (DeformConv)", part]);
        }
        // Shapes known only at run time are checked then.
        let b = deform(
            vec![N(1), N(4), N(5), N(5)],
            vec![N(6), N(2), N(2), N(2)],
            vec![N(1), S("c"), N(4), N(4)],
            vec![],
            g(2),
        );
        let m = Model::load_bytes(&b).unwrap();
        let zeros = |s: &[usize]| Tensor::zero::<f32>(s).unwrap();
        let e =
            format!("{:#}", m.run(vec![zeros(&[1, 4, 5, 5]), zeros(&[6, 2, 2, 2]), zeros(&[1, 6, 4, 4])]).unwrap_err());
        assert!(e.contains("'n'") && e.contains("offset has 6 channels"), "{e}");
        let y = m.run(vec![zeros(&[1, 4, 5, 5]), zeros(&[6, 2, 2, 2]), zeros(&[1, 8, 4, 4])]).unwrap().remove(0).1;
        assert_eq!(y.shape(), &[1, 6, 4, 4]);
    }
}

mod tfidf {
    use super::*;
    use D::{N, S};

    #[test]
    fn reference_cases() {
        check_op("TfIdfVectorizer");
    }

    fn attrs(extra: Vec<(&'static str, A)>) -> Vec<(&'static str, A)> {
        let mut all = vec![
            ("mode", A::S("TF")),
            ("min_gram_length", A::I(1)),
            ("max_gram_length", A::I(2)),
            ("max_skip_count", A::I(1)),
            ("ngram_counts", A::Is(vec![0, 2])),
            ("ngram_indexes", A::Is(vec![0, 1, 2])),
            ("pool_int64s", A::Is(vec![4, 5, 4, 5])),
        ];
        for (k, v) in extra {
            all.retain(|(name, _)| *name != k);
            all.push((k, v));
        }
        all
    }

    fn vectorizer(x: Vec<D>, extra: Vec<(&'static str, A)>) -> Vec<u8> {
        one_node(9, "TfIdfVectorizer", &[("x", DataType::Int64, x)], attrs(extra)).bytes()
    }

    #[test]
    fn shapes_are_exact() {
        assert_eq!(inferred(&vectorizer(vec![S("batch"), S("c")], vec![]), &["y"]), ["F32 [batch, 3]"]);
        assert_eq!(inferred(&vectorizer(vec![S("c")], vec![]), &["y"]), ["F32 [3]"]);
        let b = vectorizer(vec![N(0), N(4)], vec![]);
        let y = Model::load_bytes(&b).unwrap().run(vec![Tensor::zero::<i64>(&[0, 4]).unwrap()]).unwrap();
        assert_eq!(y[0].1.shape(), [0, 3]);
        // Presence without weights: 1 where a gram occurs (twice here).
        let b = vectorizer(vec![N(5)], vec![("mode", A::S("IDF"))]);
        let y = Model::load_bytes(&b).unwrap().run(vec![tensor1(&[4i64, 5, 4, 5, 9])]).unwrap().remove(0).1;
        assert_eq!(y, tensor1(&[1f32, 1., 1.]));
    }

    #[test]
    fn errors() {
        let b = |extra| vectorizer(vec![N(2), N(3)], extra);
        let cases: Vec<(Vec<(&'static str, A)>, &str)> = vec![
            (vec![("mode", A::S("BM25"))], "mode is \"BM25\": it must be TF, IDF or TFIDF"),
            (vec![("min_gram_length", A::I(0))], "min_gram_length is 0: it must be at least 1"),
            (vec![("max_gram_length", A::I(0))], "max_gram_length is 0: it must be at least 1"),
            (vec![("min_gram_length", A::I(3))], "max_gram_length 2 is below min_gram_length 3"),
            (vec![("max_skip_count", A::I(-1))], "max_skip_count is -1: it must be at least 0"),
            (vec![("ngram_counts", A::Is(vec![0, 5]))], "non-decreasing offsets into the 4 values"),
            (
                vec![("ngram_counts", A::Is(vec![0, 1]))],
                "pool_int64s[1..4] holds 3 values: not a whole number of 2-grams",
            ),
            (vec![("ngram_indexes", A::Is(vec![0, 1]))], "ngram_indexes has 2 values for the 3 n-grams"),
            (vec![("ngram_indexes", A::Is(vec![0, -1, 2]))], "ngram_indexes[1] is -1"),
            (vec![("ngram_indexes", A::Is(vec![0, 1, i64::MAX]))], "holds a column too large"),
            (vec![("weights", A::Fs(vec![1.0, 2.0]))], "weights has 2 values"),
            (vec![("ngram_indexes", A::Is(vec![0, 1, 5])), ("weights", A::Fs(vec![1.0; 3]))], "per output column (6)"),
            (vec![("pool_int64s", A::Is(vec![]))], "ngram_counts [0, 2] must be non-decreasing offsets into the 0"),
        ];
        for (extra, message) in cases {
            assert_error(&b(extra), &["node 'n' (TfIdfVectorizer)", message]);
        }
        let no_pool = one_node(9, "TfIdfVectorizer", &[("x", DataType::Int64, vec![N(3)])], {
            let mut a = attrs(vec![]);
            a.retain(|(k, _)| *k != "pool_int64s");
            a
        });
        assert_error(&no_pool.bytes(), &["'n'", "pool_int64s is required"]);
        let floats = one_node(9, "TfIdfVectorizer", &[("x", DataType::Float, vec![N(3)])], attrs(vec![])).bytes();
        assert_error(&floats, &["'n'", "X must be int32 or int64, got F32"]);
        assert_error(&vectorizer(vec![N(1), N(2), N(3)], vec![]), &["'n'", "X must have rank 1 ([C]) or 2"]);
        // A column far out: refused when the output is allocated, not a panic.
        let far = vectorizer(vec![N(2)], vec![("ngram_indexes", A::Is(vec![0, 1, 1 << 60]))]);
        let e = Model::load_bytes(&far).and_then(|m| m.run(vec![tensor1(&[4i64, 5])])).unwrap_err();
        assert!(format!("{e:#}").contains("'n'"), "{e:#}");
        // A huge skip count is bounded by the row.
        let skip = vectorizer(vec![N(4)], vec![("max_skip_count", A::I(i64::MAX))]);
        let y = Model::load_bytes(&skip).unwrap().run(vec![tensor1(&[4i64, 9, 9, 5])]).unwrap().remove(0).1;
        assert_eq!(y, tensor1(&[1f32, 1., 1.]));
    }
}

mod binarizer {
    use super::*;
    use D::{N, S};

    #[test]
    fn reference_cases() {
        check_op("Binarizer");
    }

    fn binarizer(dt: DataType, x: Vec<D>, domain: &str) -> Vec<u8> {
        Builder::new(21)
            .import("ai.onnx.ml", 1)
            .input("x", dt, &x)
            .node("Binarizer", domain, "n", &["x"], &["y"], vec![("threshold", A::F(0.25))])
            .output("y")
            .bytes()
    }

    #[test]
    fn shape_and_errors() {
        let b = binarizer(DataType::Double, vec![S("batch"), N(3)], "ai.onnx.ml");
        assert_eq!(inferred(&b, &["y"]), ["F64 [batch, 3]"]);
        assert_error(
            &binarizer(DataType::Int8, vec![N(3)], "ai.onnx.ml"),
            &["'n'", "X must be float, double, int32 or int64"],
        );
        assert_error(&binarizer(DataType::Float, vec![N(3)], ""), &["'n'", "Binarizer is an ai.onnx.ml operator"]);
    }
}

mod optimizers {
    use super::*;
    use D::{N, S};

    #[test]
    fn reference_cases() {
        check_op("Adagrad");
        check_op("Adam");
        check_op("Momentum");
    }

    /// `op` over R, T and `tensors` float tensors named `t0`, `t1`, ... of `dims`, with `outputs`.
    fn optimizer(op: &str, tensors: usize, dims: Vec<D>, outputs: &[&str], attrs: Vec<(&str, A)>) -> Vec<u8> {
        let mut b = Builder::new(21).import("ai.onnx.preview.training", 1).input("r", DataType::Float, &[]).input(
            "t",
            DataType::Int64,
            &[],
        );
        let names: Vec<String> = (0..tensors).map(|i| format!("t{i}")).collect();
        for n in &names {
            b = b.input(n, DataType::Float, &dims);
        }
        let mut ins = vec!["r", "t"];
        ins.extend(names.iter().map(String::as_str));
        b = b.node(op, "ai.onnx.preview.training", "n", &ins, outputs, attrs);
        for o in outputs {
            b = b.output(o);
        }
        b.bytes()
    }

    #[test]
    fn symbolic_shapes_are_kept() {
        let adam = optimizer("Adam", 8, vec![S("batch"), N(3)], &["x1", "x2", "v1", "v2", "h1", "h2"], vec![]);
        assert_eq!(inferred(&adam, &["x1", "h2"]), ["F32 [batch, 3]", "F32 [batch, 3]"]);
        let m = vec![
            ("alpha", A::F(0.9)),
            ("beta", A::F(0.1)),
            ("norm_coefficient", A::F(0.0)),
            ("mode", A::S("nesterov")),
        ];
        let momentum = optimizer("Momentum", 3, vec![S("n")], &["x", "v"], m);
        assert_eq!(inferred(&momentum, &["x", "v"]), ["F32 [n]", "F32 [n]"]);
    }

    #[test]
    fn errors() {
        let e = optimizer("Adagrad", 4, vec![N(2)], &["x", "h"], vec![]);
        assert_error(&e, &["'n'", "6 inputs: expected R, T and 3 tensors for each one optimized"]);
        let e = optimizer("Adagrad", 3, vec![N(2)], &["x"], vec![]);
        assert_error(&e, &["'n'", "1 outputs for 1 tensors: expected 2"]);
        let e = optimizer("Momentum", 3, vec![N(2)], &["x", "v"], vec![("alpha", A::F(0.9))]);
        assert_error(&e, &["'n'", "attribute mode is required"]);
        let m =
            vec![("alpha", A::F(0.9)), ("beta", A::F(0.1)), ("norm_coefficient", A::F(0.0)), ("mode", A::S("heavy"))];
        let e = optimizer("Momentum", 3, vec![N(2)], &["x", "v"], m);
        assert_error(&e, &["'n'", "mode is \"heavy\""]);
        // Tensors of one group must agree, at run time too.
        let adagrad = optimizer("Adagrad", 3, vec![D::Unset], &["x", "h"], vec![]);
        let model = Model::load_bytes(&adagrad).unwrap();
        let e = model
            .run(vec![tensor0(0.1f32), tensor0(1i64), tensor1(&[1f32, 2.]), tensor1(&[1f32]), tensor1(&[1f32, 2.])])
            .unwrap_err();
        assert!(format!("{e:#}").contains("the tensors of group 1 differ"), "{e:#}");
    }
}

mod batch_norm_training {
    use super::*;
    use D::{N, S};

    #[test]
    fn reference_cases() {
        check_op("BatchNormalization");
    }

    fn batch_norm(x: Vec<D>, c: D, outputs: &[&str], attrs: Vec<(&str, A)>) -> Vec<u8> {
        let mut b = Builder::new(15).input("x", DataType::Float, &x);
        for p in ["scale", "b", "mean", "var"] {
            b = b.input(p, DataType::Float, std::slice::from_ref(&c));
        }
        b = b.node("BatchNormalization", "", "n", &["x", "scale", "b", "mean", "var"], outputs, attrs);
        for o in outputs {
            b = b.output(o);
        }
        b.bytes()
    }

    #[test]
    fn symbolic_shapes_and_errors() {
        let train = || vec![("training_mode", A::I(1))];
        let b = batch_norm(vec![S("batch"), N(3), S("len")], N(3), &["y", "rm", "rv"], train());
        assert_eq!(inferred(&b, &["y", "rm", "rv"]), ["F32 [batch, 3, len]", "F32 [3]", "F32 [3]"]);
        let only_y = batch_norm(vec![S("batch"), N(3)], N(3), &["y"], train());
        assert_eq!(inferred(&only_y, &["y"]), ["F32 [batch, 3]"]);
        let mode = batch_norm(vec![N(2), N(3)], N(3), &["y"], vec![("training_mode", A::I(2))]);
        assert_error(&mode, &["'n'", "training_mode is 2: it must be 0 or 1"]);
        assert_error(&batch_norm(vec![N(3)], N(3), &["y"], train()), &["'n'", "X must have rank 2 or more"]);
        // Parameters of another length than X's channels, at run time.
        let model = Model::load_bytes(&batch_norm(vec![N(1), D::Unset], D::Unset, &["y"], train())).unwrap();
        let p = || tensor1(&[1f32, 2.]);
        let e = model.run(vec![tensor2(&[[1f32, 2., 3.]]), p(), p(), p(), p()]).unwrap_err();
        assert!(format!("{e:#}").contains("scale is [2], expected [3] (X's channels)"), "{e:#}");
    }
}

mod dft {
    use super::*;
    use D::{N, S};

    #[test]
    fn reference_cases() {
        check_op("DFT");
    }

    fn dft(opset: i64, x: Vec<D>, extra: &[(&str, DataType, Vec<D>)], attrs: Vec<(&str, A)>) -> Vec<u8> {
        let mut b = Builder::new(opset).input("x", DataType::Float, &x);
        let mut ins = vec!["x"];
        for (name, dt, dims) in extra {
            if !name.is_empty() {
                b = b.input(name, *dt, dims);
            }
            ins.push(name);
        }
        b.node("DFT", "", "n", &ins, &["y"], attrs).output("y").bytes()
    }

    #[test]
    fn symbolic_shapes_and_errors() {
        let b = dft(17, vec![S("batch"), S("len"), N(1)], &[], vec![("onesided", A::I(1))]);
        assert_eq!(inferred(&b, &["y"]), ["F32 [batch, len/2+1, 2]"]);
        let b = dft(17, vec![S("batch"), N(3), S("len"), N(2)], &[], vec![("axis", A::I(-2))]);
        assert_eq!(inferred(&b, &["y"]), ["F32 [batch, 3, len, 2]"]);
        let irfft = dft(19, vec![S("batch"), S("bins"), N(2)], &[], vec![("inverse", A::I(1)), ("onesided", A::I(1))]);
        assert_eq!(inferred(&irfft, &["y"]), ["F32 [batch, 2*(bins-1), 1]"]);
        assert_error(&dft(17, vec![N(4), N(1)], &[], vec![("axis", A::I(1))]), &["'n'", "axis 1 is out of range"]);
        assert_error(&dft(17, vec![N(4), N(3)], &[], vec![("axis", A::I(0))]), &["'n'", "the last axis must be 1"]);
        assert_error(&dft(17, vec![N(4), N(1)], &[], vec![("inverse", A::I(3))]), &["'n'", "inverse is 3"]);
        // dft_length out of range, at run time.
        let len = dft(20, vec![N(4), N(1)], &[("len", DataType::Int64, vec![]), ("", DataType::Int64, vec![])], vec![]);
        let model = Model::load_bytes(&len).unwrap();
        let e = model.run(vec![tensor2(&[[1f32], [2.], [3.], [4.]]), tensor0(0i64)]).unwrap_err();
        assert!(format!("{e:#}").contains("dft_length is 0"), "{e:#}");
    }
}

mod tree_ensemble {
    use super::*;
    use D::{N, S};

    fn floats(v: &[f32]) -> A {
        A::T(tract_onnx::pb::TensorProto {
            dims: vec![v.len() as i64],
            data_type: DataType::Float as i32,
            float_data: v.to_vec(),
            ..Default::default()
        })
    }

    fn modes(v: &[u8]) -> A {
        A::T(tract_onnx::pb::TensorProto {
            dims: vec![v.len() as i64],
            data_type: DataType::Uint8 as i32,
            raw_data: v.to_vec(),
            ..Default::default()
        })
    }

    /// Tree 1: node 0 `x0 <= 2` (true: node 1, false: leaf 2); node 1 `x1 in {5, 7}`, NaN true (true:
    /// leaf 0, false: leaf 1). Tree 2: node 2, whose branches are both leaf 3. Leaves: target 0 +1,
    /// target 1 +2, target 0 +4, target 1 +0.5.
    fn model(x: Vec<D>, changes: Vec<(&'static str, A)>) -> Vec<u8> {
        let mut attrs: Vec<(&str, A)> = vec![
            ("nodes_featureids", A::Is(vec![0, 1, 0])),
            ("nodes_splits", floats(&[2.0, 0.0, 0.0])),
            ("nodes_modes", modes(&[0, 6, 0])),
            ("nodes_truenodeids", A::Is(vec![1, 0, 3])),
            ("nodes_falsenodeids", A::Is(vec![2, 1, 3])),
            ("nodes_trueleafs", A::Is(vec![0, 1, 1])),
            ("nodes_falseleafs", A::Is(vec![1, 1, 1])),
            ("nodes_missing_value_tracks_true", A::Is(vec![0, 1, 0])),
            ("membership_values", floats(&[5.0, 7.0, f32::NAN])),
            ("leaf_targetids", A::Is(vec![0, 1, 0, 1])),
            ("leaf_weights", floats(&[1.0, 2.0, 4.0, 0.5])),
            ("tree_roots", A::Is(vec![0, 2])),
            ("n_targets", A::I(2)),
        ];
        for (name, a) in changes {
            attrs.retain(|(n, _)| *n != name);
            attrs.push((name, a));
        }
        Builder::new(21)
            .import("ai.onnx.ml", 5)
            .input("x", DataType::Float, &x)
            .node("TreeEnsemble", "ai.onnx.ml", "n", &["x"], &["y"], attrs)
            .output("y")
            .bytes()
    }

    fn run(bytes: &[u8]) -> Tensor {
        let x = tensor2(&[[1f32, 5.], [3., f32::NAN], [2., 6.], [0., f32::NAN]]);
        Model::load_bytes(bytes).unwrap().run(vec![x]).unwrap().remove(0).1
    }

    #[test]
    fn aggregations_membership_and_missing_values() {
        let sum = run(&model(vec![N(4), N(2)], vec![]));
        assert_eq!(sum, tensor2(&[[1f32, 0.5], [4., 0.5], [0., 2.5], [1., 0.5]]));
        let average = run(&model(vec![N(4), N(2)], vec![("aggregate_function", A::I(0))]));
        assert_eq!(average, tensor2(&[[0.5f32, 0.25], [2., 0.25], [0., 1.25], [0.5, 0.25]]));
        // MAX starts from the lowest float32: a target no leaf reaches keeps it.
        let max = run(&model(vec![N(4), N(2)], vec![("aggregate_function", A::I(3))]));
        assert_eq!(max, tensor2(&[[1f32, 0.5], [4., 0.5], [f32::MIN, 2.], [1., 0.5]]));
        let logistic = run(&model(vec![N(4), N(2)], vec![("post_transform", A::I(2))]));
        let want: Vec<f32> = [1f32, 0.5, 4., 0.5, 0., 2.5, 1., 0.5].iter().map(|v| 1. / (1. + (-v).exp())).collect();
        assert_eq!(logistic, tract_ndarray::Array2::from_shape_vec((4, 2), want).unwrap().into_tensor());
        let zero = run(&model(vec![N(4), N(2)], vec![("post_transform", A::I(3))]));
        let values = zero.try_as_plain_ram().unwrap().as_slice::<f32>().unwrap().to_vec();
        assert_eq!(values[4..6], [0., 1.]);
    }

    #[test]
    fn symbolic_shape_and_errors() {
        assert_eq!(inferred(&model(vec![S("batch"), N(2)], vec![]), &["y"]), ["F32 [batch, 2]"]);
        let cycle = model(
            vec![N(4), N(2)],
            vec![("nodes_truenodeids", A::Is(vec![1, 0, 3])), ("nodes_trueleafs", A::Is(vec![0, 0, 1]))],
        );
        assert_error(&cycle, &["'n'", "the trees have a cycle through node"]);
        let far = model(vec![N(4), N(2)], vec![("nodes_falsenodeids", A::Is(vec![9, 1, 3]))]);
        assert_error(&far, &["'n'", "node 0: false leaf 9 is out of range (4 leafs)"]);
        let target = model(vec![N(4), N(2)], vec![("leaf_targetids", A::Is(vec![0, 1, 2, 1]))]);
        assert_error(&target, &["'n'", "leaf 2 has target 2, out of range for 2 targets"]);
        let sets = model(vec![N(4), N(2)], vec![("membership_values", floats(&[5.0]))]);
        assert_error(&sets, &["'n'", "membership_values has no NaN-ended set for node 1"]);
        let mode = model(vec![N(4), N(2)], vec![("nodes_modes", modes(&[0, 6, 9]))]);
        assert_error(&mode, &["'n'", "node 2 has mode 9"]);
        assert_error(&model(vec![N(4), N(1)], vec![]), &["'n'", "feature id 1 is out of range for X's 1 columns"]);
        let probit = model(vec![N(4), N(2)], vec![("post_transform", A::I(4))]);
        assert_error(&probit, &["'n'", "post_transform PROBIT is not supported"]);
    }
}

mod scan {
    //! `Scan` (src/ops/control/scan.rs): expected values checked against onnxruntime, which
    //! implements the scan axes and directions onnx's reference refuses.
    use super::*;
    use D::{N, S};

    /// `s_out = s + x_t`, `y_t = s_out * w`, `w` read from the outer graph; the body's inputs
    /// typed `[2]` floats, or untyped as function-expanded models leave them.
    fn body(typed: bool) -> tract_onnx::pb::GraphProto {
        let b = Builder::new(11);
        let b = if typed {
            b.input("s", DataType::Float, &[N(2)]).input("xt", DataType::Float, &[N(2)])
        } else {
            b.input_untyped("s").input_untyped("xt")
        };
        b.node("Add", "", "add", &["s", "xt"], &["s_out"], vec![])
            .node("Mul", "", "mul", &["s_out", "w"], &["y_t"], vec![])
            .output("s_out")
            .output("y_t")
            .graph("body")
    }

    /// A model computing `Scan(s0, x)` with `body`, `w = [1, 10]`.
    fn model(opset: i64, s0: &[D], x: &[D], body: tract_onnx::pb::GraphProto, attrs: Vec<(&str, A)>) -> Vec<u8> {
        let mut attrs = attrs;
        attrs.push(("body", A::G(body)));
        attrs.push(("num_scan_inputs", A::I(1)));
        let inputs: &[&str] = if opset < 9 { &["", "s0", "x"] } else { &["s0", "x"] };
        Builder::new(opset)
            .input("s0", DataType::Float, s0)
            .input("x", DataType::Float, x)
            .init_f32("w", &[2], &[1., 10.])
            .node("Scan", "", "n", inputs, &["s", "y"], attrs)
            .output("s")
            .output("y")
            .bytes()
    }

    fn run(bytes: &[u8], inputs: Vec<Tensor>) -> Vec<Tensor> {
        let outputs = Model::load_bytes(bytes).unwrap().run(inputs).unwrap();
        outputs.into_iter().map(|(_, t)| t).collect()
    }

    fn x23() -> Tensor {
        tract_ndarray::arr2(&[[1f32, 2., 3.], [4., 5., 6.]]).into_tensor()
    }

    #[test]
    fn axes_and_directions() {
        let reverse = vec![
            ("scan_input_axes", A::Is(vec![1])),
            ("scan_input_directions", A::Is(vec![1])),
            ("scan_output_axes", A::Is(vec![1])),
            ("scan_output_directions", A::Is(vec![1])),
        ];
        let b = model(11, &[N(2)], &[N(2), N(3)], body(true), reverse);
        let out = run(&b, vec![tensor1(&[0f32, 0.]), x23()]);
        assert_eq!(out[0], tensor1(&[6f32, 15.]));
        assert_eq!(out[1], tract_ndarray::arr2(&[[6f32, 5., 3.], [150., 110., 60.]]).into_tensor());
        let negative = vec![("scan_input_axes", A::Is(vec![-1])), ("scan_output_axes", A::Is(vec![-1]))];
        let b = model(11, &[N(2)], &[N(2), N(3)], body(true), negative);
        let out = run(&b, vec![tensor1(&[0f32, 0.]), x23()]);
        assert_eq!(out[0], tensor1(&[6f32, 15.]));
        assert_eq!(out[1], tract_ndarray::arr2(&[[1f32, 3., 6.], [40., 90., 150.]]).into_tensor());
    }

    #[test]
    fn untyped_body_inputs_take_the_scan_inputs_types() {
        let b = model(16, &[N(2)], &[N(3), N(2)], body(false), vec![]);
        let x = tract_ndarray::arr2(&[[1f32, 4.], [2., 5.], [3., 6.]]).into_tensor();
        let out = run(&b, vec![tensor1(&[0f32, 0.]), x]);
        assert_eq!(out[0], tensor1(&[6f32, 15.]));
        assert_eq!(out[1], tract_ndarray::arr2(&[[1f32, 40.], [3., 90.], [6., 150.]]).into_tensor());
    }

    #[test]
    fn opset_8_batches() {
        let b = model(8, &[N(2), N(2)], &[N(2), N(3), N(2)], body(false), vec![("directions", A::Is(vec![1]))]);
        let x = tract_ndarray::Array::from_shape_vec(vec![2, 3, 2], (0..12).map(|v| v as f32).collect()).unwrap();
        let out = run(&b, vec![tract_ndarray::arr2(&[[0f32, 0.], [1., 1.]]).into_tensor(), x.into_tensor()]);
        assert_eq!(out[0], tract_ndarray::arr2(&[[6f32, 9.], [25., 28.]]).into_tensor());
        let y = tract_ndarray::arr3(&[[[4f32, 50.], [6., 80.], [6., 90.]], [[11., 120.], [19., 210.], [25., 280.]]]);
        assert_eq!(out[1], y.into_tensor());
    }

    #[test]
    fn an_empty_scan_returns_the_initial_states() {
        let b = model(16, &[N(2)], &[N(0), N(2)], body(false), vec![]);
        let out = run(&b, vec![tensor1(&[1f32, 2.]), Tensor::zero::<f32>(&[0, 2]).unwrap()]);
        assert_eq!(out[0], tensor1(&[1f32, 2.]));
        assert_eq!(out[1].shape(), &[0, 2]);
    }

    #[test]
    fn symbolic_shapes_are_exact() {
        let sum = Builder::new(16)
            .input_untyped("s")
            .input_untyped("xt")
            .node("Add", "", "add", &["s", "xt"], &["s_out"], vec![])
            .output("s_out")
            .output("s_out")
            .graph("body");
        let attrs = vec![("scan_input_axes", A::Is(vec![1])), ("scan_output_axes", A::Is(vec![1]))];
        let b = Builder::new(16)
            .input("s0", DataType::Float, &[S("n")])
            .input("x", DataType::Float, &[S("n"), S("t")])
            .node("Scan", "", "n", &["s0", "x"], &["s", "y"], {
                let mut a = attrs;
                a.push(("body", A::G(sum)));
                a.push(("num_scan_inputs", A::I(1)));
                a
            })
            .output("s")
            .output("y")
            .bytes();
        assert_eq!(inferred(&b, &["s", "y"]), ["F32 [n]", "F32 [n, t]"]);
        let b = model(8, &[S("b"), N(2)], &[S("b"), S("t"), N(2)], body(false), vec![]);
        assert_eq!(inferred(&b, &["s", "y"]), ["F32 [b, 2]", "F32 [b, t, 2]"]);
    }

    #[test]
    fn errors() {
        let with = |attrs| model(16, &[N(2)], &[N(3), N(2)], body(true), attrs);
        let scan = |num: i64| {
            let attrs = vec![("body", A::G(body(true))), ("num_scan_inputs", A::I(num))];
            Builder::new(16)
                .input("s0", DataType::Float, &[N(2)])
                .input("x", DataType::Float, &[N(3), N(2)])
                .init_f32("w", &[2], &[1., 10.])
                .node("Scan", "", "n", &["s0", "x"], &["s", "y"], attrs)
                .output("s")
                .bytes()
        };
        assert_error(&scan(0), &["node 'n' (Scan)", "num_scan_inputs is 0: it must be 1 to the body's 2 inputs"]);
        assert_error(&scan(3), &["node 'n' (Scan)", "num_scan_inputs is 3"]);
        let b = with(vec![("scan_input_directions", A::Is(vec![2]))]);
        assert_error(&b, &["node 'n' (Scan)", "scan_input_directions is [2]: each direction is 0 or 1"]);
        let b = with(vec![("scan_input_axes", A::Is(vec![0, 1]))]);
        assert_error(&b, &["node 'n' (Scan)", "scan_input_axes has 2 values, expected 1"]);
        let b = with(vec![("scan_input_axes", A::Is(vec![2]))]);
        assert_error(&b, &["node 'n' (Scan)", "scan input 0 has rank 2: no scan axis 2"]);
        let b = with(vec![("scan_output_axes", A::Is(vec![-3]))]);
        assert_error(&b, &["node 'n' (Scan)", "scan output 0 has rank 2: no scan axis -3"]);
        // The state is a scalar, the body returns it added to a slice of 2.
        let b = model(16, &[], &[N(3), N(2)], body(false), vec![]);
        assert_error(&b, &["node 'n' (Scan)", "state 0: the body takes F32 [] and returns F32 [2]"]);
        // The body declares int64 where the Scan gives float.
        let typed = Builder::new(16)
            .input("s", DataType::Int64, &[N(2)])
            .input("xt", DataType::Float, &[N(2)])
            .node("Identity", "", "id", &["xt"], &["s_out"], vec![])
            .output("s_out")
            .output("s_out")
            .graph("body");
        let b = model(16, &[N(2)], &[N(3), N(2)], typed, vec![]);
        assert_error(&b, &["node 'n' (Scan)", "body input 0 is declared I64, the Scan gives F32"]);
        let b = model(8, &[N(1), N(2)], &[N(2), N(3), N(2)], body(false), vec![]);
        assert_error(&b, &["node 'n' (Scan)", "input 1 has batch 2, the first 1"]);
        let lens = seq_lens(DataType::Float);
        assert_error(&lens, &["node 'n' (Scan)", "sequence_lens is F32 of rank 1: integers of rank 1"]);
        let m = Model::load_bytes(&seq_lens(DataType::Int64)).unwrap();
        let x = Tensor::zero::<f32>(&[2, 3, 2]).unwrap();
        let e = m.run(vec![tensor1(&[1i64, 4]), Tensor::zero::<f32>(&[2, 2]).unwrap(), x]).unwrap_err();
        assert!(format!("{e:#}").contains("sequence_lens is [1, 4]: each length is 0 to 3"), "{e:#}");
    }

    /// Opset 8 with `sequence_lens` of type `dt`, scanning in reverse.
    fn seq_lens(dt: DataType) -> Vec<u8> {
        Builder::new(8)
            .input("lens", dt, &[N(2)])
            .input("s0", DataType::Float, &[N(2), N(2)])
            .input("x", DataType::Float, &[N(2), N(3), N(2)])
            .init_f32("w", &[2], &[1., 10.])
            .node(
                "Scan",
                "",
                "n",
                &["lens", "s0", "x"],
                &["s", "y"],
                vec![("body", A::G(body(false))), ("num_scan_inputs", A::I(1)), ("directions", A::Is(vec![1]))],
            )
            .output("s")
            .output("y")
            .bytes()
    }

    #[test]
    fn opset_8_sequence_lengths() {
        let m = Model::load_bytes(&seq_lens(DataType::Int64)).unwrap();
        let x = tract_ndarray::Array::from_shape_vec(vec![2, 3, 2], (0..12).map(|v| v as f32).collect()).unwrap();
        let s0 = tract_ndarray::arr2(&[[0f32, 0.], [1., 1.]]).into_tensor();
        let run = |lens: &[i64]| -> Vec<Tensor> {
            let out = m.run(vec![tensor1(lens), s0.clone(), x.clone().into_tensor()]).unwrap();
            out.into_iter().map(|(_, t)| t).collect()
        };
        // Entry 0 scans [2, 3] then [0, 1]; its last position is padding.
        let out = run(&[2, 3]);
        assert_eq!(out[0], tract_ndarray::arr2(&[[2f32, 4.], [25., 28.]]).into_tensor());
        let y = tract_ndarray::arr3(&[[[2f32, 30.], [2., 40.], [0., 0.]], [[11., 120.], [19., 210.], [25., 280.]]]);
        assert_eq!(out[1], y.into_tensor());
        // A length of 0 leaves the initial state and zeros.
        let out = run(&[0, 3]);
        assert_eq!(out[0], tract_ndarray::arr2(&[[0f32, 0.], [25., 28.]]).into_tensor());
        let y = tract_ndarray::arr3(&[[[0f32, 0.], [0., 0.], [0., 0.]], [[11., 120.], [19., 210.], [25., 280.]]]);
        assert_eq!(out[1], y.into_tensor());
    }

    #[test]
    fn scan_inputs_of_different_lengths_are_refused() {
        let body = Builder::new(16)
            .input_untyped("s")
            .input_untyped("a")
            .input_untyped("b")
            .node("Sum", "", "sum", &["s", "a", "b"], &["s_out"], vec![])
            .output("s_out")
            .graph("body");
        let b = Builder::new(16)
            .input("s0", DataType::Float, &[N(2)])
            .input("a", DataType::Float, &[N(3), N(2)])
            .input("b", DataType::Float, &[N(4), N(2)])
            .node("Scan", "", "n", &["s0", "a", "b"], &["s"], vec![("body", A::G(body)), ("num_scan_inputs", A::I(2))])
            .output("s")
            .bytes();
        assert_error(&b, &["node 'n' (Scan)", "scan input 1 has length 4, scan input 0 3"]);
    }
}
