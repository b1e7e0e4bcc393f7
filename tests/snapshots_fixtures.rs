//! insta snapshots of every fixture: the inferred facts (the `infer --format json` report) and each
//! output's dtype, shape and values. A snapshot records; the oracle is `fixtures_run.rs`, which compares
//! every output with numpy's expected `.npy`.

mod common;

use common::fixtures::fixtures;
use sliceops::npy::numpy_name;
use sliceops::Model;

#[test]
fn fixture_snapshots() {
    for f in fixtures() {
        let model = Model::load_path(f.model()).unwrap();
        let facts = model.infer().unwrap();
        let mut text = format!(
            "infer:\n{}\noutputs:\n",
            serde_json::to_string_pretty(&sliceops::report::facts_json(&facts)).unwrap()
        );
        for (name, t) in model.run(f.input_tensors()).unwrap() {
            let values = sliceops::report::values_text(&t, 64).unwrap();
            text.push_str(&format!("- {name}: {} {:?}\n  {values}\n", numpy_name(t.datum_type()), t.shape()));
        }
        insta::assert_snapshot!(format!("fixture__{}", f.name), text);
    }
}
