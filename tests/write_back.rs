//! `fold` and `lower` on every fixture: the rewritten model still gives the expected outputs; lowered
//! models hold only standard ONNX; folded ones have a value_info for every value.

mod common;

use common::fixtures::{fixtures, same};
use prost::Message;
use sliceops::onnx::proto;
use sliceops::Model;

fn check_outputs(name: &str, bytes: &[u8], f: &common::fixtures::Fixture, failures: &mut Vec<String>) {
    match Model::load_bytes(bytes).and_then(|m| m.run(f.input_tensors())) {
        Ok(outputs) => {
            for ((out, got), want) in outputs.iter().zip(f.expected()) {
                if let Err(e) = same(got, &want) {
                    failures.push(format!("{name} {}: {out}: {e}", f.name));
                }
            }
        }
        Err(e) => failures.push(format!("{name} {}: {e:#}", f.name)),
    }
}

/// `Some` when the value has an element type and a shape whose every dim has a value or a name.
fn full_type(info: &proto::ValueInfoProto) -> Option<()> {
    let Some(proto::type_proto::Value::TensorType(t)) = info.r#type.as_ref()?.value.as_ref() else { return None };
    let known = t.elem_type.is_some_and(|e| e != 0) && t.shape.as_ref()?.dim.iter().all(|d| d.value.is_some());
    known.then_some(())
}

#[test]
fn folded_fixtures_give_the_same_outputs_and_annotate_every_value() {
    let mut failures = vec![];
    for f in fixtures() {
        let bytes = std::fs::read(f.model()).unwrap();
        let folded = match sliceops::fold::fold_bytes(&bytes, Some(&f.dir())) {
            Ok(b) => b,
            Err(e) => {
                failures.push(format!("fold {}: {e:#}", f.name));
                continue;
            }
        };
        check_outputs("fold", &folded, &f, &mut failures);
        let model = proto::ModelProto::decode(&*folded).unwrap();
        let graph = model.graph.unwrap();
        let outputs: Vec<_> = graph.output.iter().filter_map(|o| o.name.clone()).collect();
        // Every value a node makes has a full type: element type, rank, each dim a value or a name
        // (runtime slice parameters make fresh symbols: those are named too).
        for node in &graph.node {
            for o in node.output.iter().filter(|o| !o.is_empty()) {
                let infos = if outputs.contains(o) { &graph.output } else { &graph.value_info };
                match infos.iter().find(|v| v.name.as_ref() == Some(o)).and_then(full_type) {
                    Some(()) => {}
                    None => failures.push(format!("fold {}: no full type for {o}", f.name)),
                }
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn lowered_fixtures_are_standard_onnx_with_the_same_outputs() {
    let mut failures = vec![];
    for f in fixtures() {
        let bytes = std::fs::read(f.model()).unwrap();
        let lowered = match (sliceops::onnx::lower(&bytes, Some(&f.dir())), f.lowerable) {
            (Ok(b), true) => b,
            (Err(e), true) => {
                failures.push(format!("lower {}: {e:#}", f.name));
                continue;
            }
            (Err(e), false) => {
                assert!(format!("{e:#}").contains("node '"), "{}: the refusal names the node: {e:#}", f.name);
                continue;
            }
            (Ok(_), false) => {
                failures.push(format!("lower {}: lowered a model marked not lowerable", f.name));
                continue;
            }
        };
        check_outputs("lower", &lowered, &f, &mut failures);
        let model = proto::ModelProto::decode(&*lowered).unwrap();
        for node in &model.graph.as_ref().unwrap().node {
            let domain = node.domain.clone().unwrap_or_default();
            if !(domain.is_empty() || domain == "ai.onnx") {
                failures.push(format!("lower {}: node {:?} of domain {domain} remains", f.name, node.name));
            }
        }
        // Every value lowering created has a full type.
        let original = proto::ModelProto::decode(&*bytes).unwrap().graph.unwrap();
        let before: std::collections::HashSet<&String> = original.node.iter().flat_map(|n| &n.output).collect();
        let graph = model.graph.as_ref().unwrap();
        let outputs: Vec<_> = graph.output.iter().filter_map(|o| o.name.clone()).collect();
        for node in &graph.node {
            for o in node.output.iter().filter(|o| !o.is_empty() && !before.contains(o) && !outputs.contains(o)) {
                if graph.value_info.iter().find(|v| v.name.as_ref() == Some(o)).and_then(full_type).is_none() {
                    failures.push(format!("lower {}: the new value {o} has no full type", f.name));
                }
            }
        }
        let opset =
            model.opset_import.iter().find(|o| o.domain.as_deref().unwrap_or("").is_empty()).and_then(|o| o.version);
        if opset.is_none_or(|v| v < 13) {
            failures.push(format!("lower {}: default opset is {opset:?}", f.name));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
