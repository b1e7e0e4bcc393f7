//! The real exports of `models/real/`: each runs at two input sizes and matches onnxruntime's outputs
//! (the same model on another runtime: within 1e-5 + 1e-4 relative for floats, exact otherwise), and
//! its `infer` report (every value's type and shape, the symbols, the requirements) is snapshotted.
//! `tests/real_models.py` checks every inferred dim against the shapes onnxruntime produces. The model
//! `fold` writes of each runs here with the same outputs.

mod common;

use common::real::real_models;
use sliceops::Model;

/// Models the analysis cannot run yet, with the reason (see the README's list of what is unsupported).
const CANNOT_RUN: &[(&str, &str)] = &[];

#[test]
fn every_real_export_runs_at_two_sizes_and_matches_onnxruntime() {
    let mut failures = vec![];
    for m in real_models() {
        let model = Model::load_path(m.model()).unwrap();
        for size in ["a", "b"] {
            match (model.run(m.inputs_at(size)), CANNOT_RUN.iter().find(|(n, _)| *n == m.name)) {
                (Ok(outputs), None) => {
                    for ((name, got), want) in outputs.iter().zip(m.expected_at(size)) {
                        if let Err(why) = sliceops::report::compare(got, &want) {
                            failures.push(format!("{} ({size}): {name}: {why}", m.name));
                        }
                    }
                }
                (Err(e), Some((_, op))) => {
                    let e = format!("{e:#}");
                    assert!(e.contains(op), "{}: {e}", m.name);
                }
                (Ok(_), Some(_)) => failures.push(format!("{} ({size}) runs now: take it off CANNOT_RUN", m.name)),
                (Err(e), None) => failures.push(format!("{} ({size}): {e:#}", m.name)),
            }
        }
        // A second run with the same shapes reuses the plan.
        assert!(model.plans_made() <= 2, "{}", m.name);
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn every_real_export_folded_runs_at_two_sizes_and_matches_onnxruntime() {
    // What `fold` writes runs here as the original does (issue 34: a folded model sliceops could not
    // run, though onnxruntime could).
    let mut failures = vec![];
    for m in real_models() {
        let bytes = std::fs::read(m.model()).unwrap();
        let folded = match sliceops::fold::fold_bytes(&bytes, Some(&m.dir())) {
            Ok(b) => b,
            Err(e) => {
                failures.push(format!("{}: fold: {e:#}", m.name));
                continue;
            }
        };
        let model = Model::load_bytes_in(&folded, Some(&m.dir())).unwrap();
        for size in ["a", "b"] {
            match model.run(m.inputs_at(size)) {
                Ok(outputs) => {
                    for ((name, got), want) in outputs.iter().zip(m.expected_at(size)) {
                        if let Err(why) = sliceops::report::compare(got, &want) {
                            failures.push(format!("{} folded ({size}): {name}: {why}", m.name));
                        }
                    }
                }
                Err(e) => failures.push(format!("{} folded ({size}): {e:#}", m.name)),
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn real_export_infer_snapshots() {
    for m in real_models() {
        let model = Model::load_path(m.model()).unwrap();
        let analysis = model.analyse().unwrap();
        let mut text = String::new();
        for f in analysis.value_facts(model.graph()).unwrap() {
            let dims: Vec<String> = f.shape.iter().map(sliceops::format_dim).collect();
            text.push_str(&format!("{}: {} [{}]\n", f.name, f.dtype_name, dims.join(", ")));
        }
        let mut unknown: Vec<&String> = analysis.unknown.keys().collect();
        unknown.sort();
        for name in unknown {
            text.push_str(&format!("{name}: unknown\n"));
        }
        text.push_str("symbols:\n");
        for s in &analysis.symbols {
            text.push_str(&format!("  {} in [{:?}, {:?}]: {:?}\n", s.name, s.min, s.max, s.origin));
        }
        text.push_str("requirements:\n");
        for r in &analysis.requirements {
            text.push_str(&format!("  {r} ({}, {})\n", r.node, r.op));
        }
        insta::assert_snapshot!(format!("real__{}", m.name), text);
    }
}
