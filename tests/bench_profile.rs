//! `sliceops bench --profile`: the time per node and per op type, through the command line.

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn sliceops(args: &[String]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_sliceops")).args(args).output().unwrap()
}

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).to_path_buf()
}

fn args(model: &str, inputs: &[(&str, &str)], extra: &[&str]) -> Vec<String> {
    let dir = repo().join("models").join(model);
    let mut a = vec!["bench".to_string(), dir.join("model.onnx").display().to_string()];
    for (name, file) in inputs {
        a.push("--input".into());
        a.push(format!("{name}={}", dir.join(file).display()));
    }
    a.extend(extra.iter().map(|s| s.to_string()));
    a
}

fn json_of(o: &Output) -> Value {
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    serde_json::from_str(&String::from_utf8_lossy(&o.stdout)).unwrap()
}

fn f(v: &Value) -> f64 {
    v.as_f64().unwrap_or_else(|| panic!("not a number: {v}"))
}

/// Shares are of the node total and add up to 1; per-run means are totals over the runs.
fn check_sums(profile: &Value, runs: f64) {
    let nodes = profile["nodes"].as_array().unwrap();
    assert_eq!(profile["node_count"].as_u64().unwrap() as usize, nodes.len());
    for list in ["nodes", "op_types", "onnx_op_types"] {
        let items = profile[list].as_array().unwrap();
        let shares: f64 = items.iter().map(|n| f(&n["share"])).sum();
        assert!((shares - 1.0).abs() < 1e-9, "{list}: shares add up to {shares}");
        let totals: f64 = items.iter().map(|n| f(&n["total_s"])).sum();
        assert!((totals / runs - f(&profile["total_s"])).abs() <= 1e-9, "{list}: totals {totals}");
        for item in items {
            // Means are whole nanoseconds.
            assert!((f(&item["mean_s"]) * runs - f(&item["total_s"])).abs() <= runs * 1e-9, "{item}");
            if list == "nodes" {
                // The fastest run's time is at most the mean.
                assert!(f(&item["min_s"]) <= f(&item["mean_s"]) + 1e-9, "{item}");
            }
        }
        // By decreasing time.
        let times: Vec<f64> = items.iter().map(|n| f(&n["total_s"])).collect();
        assert!(times.windows(2).all(|w| w[0] >= w[1]), "{list}: {times:?}");
    }
    for list in ["op_types", "onnx_op_types"] {
        let counted: u64 = profile[list].as_array().unwrap().iter().map(|t| t["nodes"].as_u64().unwrap()).sum();
        assert_eq!(counted as usize, nodes.len(), "{list}");
    }
}

#[test]
fn a_chain_of_slices_is_one_timed_node_named_after_its_onnx_node() {
    let o = sliceops(&args(
        "chain_slice_strided_slice_as_strided",
        &[("x", "inputs/x.npy")],
        &["--runs", "3", "--profile", "--top", "0", "--format", "json"],
    ));
    let report = json_of(&o);
    assert_eq!(report["runs"], 3);
    let profile = &report["profile"];
    assert_eq!(profile["runs"], 3);
    assert_eq!(profile["node_count"], 2);
    let mut nodes: Vec<(String, String, Value, Value)> = profile["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| {
            (
                n["name"].as_str().unwrap().into(),
                n["op"].as_str().unwrap().into(),
                n["onnx_node"].clone(),
                n["onnx_op"].clone(),
            )
        })
        .collect();
    nodes.sort_by(|a, b| a.0.cmp(&b.0));
    assert_eq!(
        nodes,
        vec![
            ("as_strided".into(), "SliceView".into(), Value::from("as_strided"), Value::from("AsStrided")),
            ("x".into(), "Source".into(), Value::Null, Value::Null),
        ]
    );
    let mut ops: Vec<(String, u64)> = profile["op_types"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| (t["op_type"].as_str().unwrap().into(), t["nodes"].as_u64().unwrap()))
        .collect();
    ops.sort();
    assert_eq!(ops, vec![("SliceView".into(), 1), ("Source".into(), 1)]);
    let mut onnx: Vec<String> =
        profile["onnx_op_types"].as_array().unwrap().iter().map(|t| t["op_type"].as_str().unwrap().into()).collect();
    onnx.sort();
    assert_eq!(onnx, vec!["-".to_string(), "AsStrided".to_string()]);
    check_sums(profile, 3.0);
}

#[test]
fn a_real_detector_profile_maps_tract_nodes_to_onnx_nodes_and_op_types() {
    let o = sliceops(&args(
        "real/yolov8_ultralytics",
        &[("images", "inputs/a/images.npy")],
        &["--runs", "2", "--profile", "--top", "0", "--format", "json"],
    ));
    let profile = json_of(&o)["profile"].clone();
    check_sums(&profile, 2.0);
    let nodes = profile["nodes"].as_array().unwrap();
    let find = |name: &str| nodes.iter().find(|n| n["name"] == name).unwrap_or_else(|| panic!("no node {name}"));
    // A convolution's wired sub-nodes (`name.suffix`) map back to the ONNX Conv (a 1x1 one is
    // tract's matrix product; the 3x3 ones are one `DirectConv` node under the Conv's own name).
    let conv = find("/model.2/cv1/conv/Conv.einsum.split-over-1.4..8");
    assert_eq!(conv["onnx_node"], "/model.2/cv1/conv/Conv");
    assert_eq!(conv["onnx_op"], "Conv");
    let direct = find("/model.0/conv/Conv");
    assert_eq!((&direct["op"], &direct["onnx_op"]), (&Value::from("DirectConv"), &Value::from("Conv")));
    assert_eq!(find("images")["op"], "Source");
    // Every node but the graph input comes from an ONNX node.
    let unmapped: Vec<&Value> = nodes.iter().filter(|n| n["onnx_node"].is_null()).map(|n| &n["name"]).collect();
    assert_eq!(unmapped, vec![&Value::from("images")]);
    let onnx_types: Vec<&str> =
        profile["onnx_op_types"].as_array().unwrap().iter().map(|t| t["op_type"].as_str().unwrap()).collect();
    for op in ["Conv", "Concat", "MaxPool", "Resize", "Softmax"] {
        assert!(onnx_types.contains(&op), "{op} missing from {onnx_types:?}");
    }
}

#[test]
fn top_limits_the_rows_of_each_list() {
    let o = sliceops(&args(
        "real/yolov8_ultralytics",
        &[("images", "inputs/a/images.npy")],
        &["--runs", "1", "--profile", "--top", "3", "--format", "json"],
    ));
    let profile = json_of(&o)["profile"].clone();
    for list in ["nodes", "op_types", "onnx_op_types"] {
        assert_eq!(profile[list].as_array().unwrap().len(), 3, "{list}");
    }
    assert!(profile["node_count"].as_u64().unwrap() > 3);
}

#[test]
fn the_table_shows_the_slowest_nodes_then_op_types() {
    let o = sliceops(&args(
        "chain_slice_strided_slice_as_strided",
        &[("x", "inputs/x.npy")],
        &["--runs", "2", "--profile", "--top", "1"],
    ));
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let text = String::from_utf8_lossy(&o.stdout).into_owned();
    let lines: Vec<&str> = text.lines().collect();
    assert!(lines[0].starts_with("runs  median"), "{text}");
    assert!(lines[3].starts_with("profile: 2 runs, 2 nodes, "), "{text}");
    let header = |h: &str| lines.iter().position(|l| l.starts_with(h)).unwrap_or_else(|| panic!("{h}: {text}"));
    let (n, t, o) = (header("node "), header("op type "), header("onnx op type "));
    assert!(n < t && t < o, "{text}");
    // One row each with --top 1: the SliceView (the Source takes next to nothing).
    assert!(lines[n + 1].starts_with("as_strided  SliceView  AsStrided  "), "{text}");
    assert_eq!(lines[n + 2], "");
    assert!(lines[t + 1].starts_with("SliceView  1  "), "{text}");
    assert!(lines[o + 1].starts_with("AsStrided     1  "), "{text}");
}

#[test]
fn top_without_profile_is_bad_usage() {
    let o = sliceops(&args("chain_slice_strided_slice_as_strided", &[("x", "inputs/x.npy")], &["--top", "3"]));
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("--profile"));
}
