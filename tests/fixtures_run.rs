//! Every fixture of `models/` runs through the optimized plan and gives numpy's output exactly.

mod common;

use common::fixtures::{fixtures, same};
use sliceops::Model;

#[test]
fn every_fixture_gives_the_expected_outputs() {
    let mut failures = vec![];
    for f in fixtures() {
        let result = Model::load_path(f.model()).and_then(|m| m.run(f.input_tensors()));
        match result {
            Ok(outputs) => {
                for ((name, got), want) in outputs.iter().zip(f.expected()) {
                    if let Err(e) = same(got, &want) {
                        failures.push(format!("{}: output {name}: {e}", f.name));
                    }
                }
            }
            Err(e) => failures.push(format!("{}: {e:#}", f.name)),
        }
    }
    assert!(failures.is_empty(), "{} fixtures failed:\n{}", failures.len(), failures.join("\n"));
}
