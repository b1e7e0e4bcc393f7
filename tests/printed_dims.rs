//! Every dim `infer` prints reads back with the grammar the README documents (integers, symbols,
//! `+ - *`, `/` by an integer, `min`, `max`), to the same dim: no internal form (`broadcast(...)`)
//! reaches a user. Checked on every fixture of `models/`, every real export of `models/real/` and the
//! models of `tests/data_dependent/`; the symbols' bounds and the requirements too.

mod common;

use common::fixtures::{fixtures, models_dir};
use common::real::real_models;
use sliceops::format_dim;
use sliceops::Model;
use std::path::PathBuf;
use tract_onnx::prelude::*;

/// Whether `text` is made only of the grammar's tokens: integers, symbols, `+ - * / ( ) ,` and calls
/// of `min` and `max` (no other name is followed by a parenthesis).
fn grammatical(text: &str) -> bool {
    let chars: Vec<char> = text.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if c.is_ascii_alphabetic() || c == '_' {
            let start = i;
            while i < chars.len() && (chars[i].is_ascii_alphanumeric() || chars[i] == '_' || chars[i] == '.') {
                i += 1;
            }
            let name: String = chars[start..i].iter().collect();
            if chars.get(i) == Some(&'(') && name != "min" && name != "max" {
                return false;
            }
            continue;
        }
        if !(c.is_ascii_digit() || "+-*/(),".contains(c)) {
            return false;
        }
        i += 1;
    }
    true
}

/// Why `text` (a printed dim) does not read back to itself, if it does not. A text past the parser's
/// limits on untrusted input (docs/untrusted.md: 4 divisions of symbolic values) must still be made of
/// the grammar's tokens.
fn reads_back(text: &str) -> Result<(), String> {
    let scope = SymbolScope::default();
    let parsed = match sliceops::symbolic::parse_dim(&scope, text) {
        Ok(p) => p,
        Err(sliceops::symbolic::DimParseError::TooManyDivisions { .. }) if grammatical(text) => return Ok(()),
        Err(e) => return Err(format!("'{text}' does not parse: {e}")),
    };
    let again = format_dim(&parsed);
    if again != text {
        return Err(format!("'{text}' reads back as '{again}'"));
    }
    Ok(())
}

/// Every printed dim of the model at `path` that does not read back, with where it is printed.
fn unreadable(path: &PathBuf) -> Vec<String> {
    let m = match Model::load_path(path) {
        Ok(m) => m,
        Err(e) => return vec![format!("{}: {e:#}", path.display())],
    };
    let analysis = match m.analyse() {
        Ok(a) => a,
        Err(e) => return vec![format!("{}: {e:#}", path.display())],
    };
    let mut printed: Vec<(String, String)> = vec![];
    for fact in analysis.value_facts(m.graph()).unwrap() {
        printed.extend(fact.shape.iter().map(|d| (format!("value {}", fact.name), format_dim(d))));
    }
    for r in &analysis.requirements {
        printed.push((format!("requirement of {}", r.node), format_dim(&r.kept)));
        printed.push((format!("requirement of {}", r.node), format_dim(&r.other)));
    }
    for s in &analysis.symbols {
        if let Some(b) = &s.at_most {
            printed.push((format!("bound of {}", s.name), format_dim(b)));
        }
    }
    printed
        .into_iter()
        .filter_map(|(where_, text)| reads_back(&text).err().map(|e| format!("{}: {where_}: {e}", path.display())))
        .collect()
}

#[test]
fn every_printed_dim_reads_back_with_the_documented_grammar() {
    let mut paths: Vec<PathBuf> = fixtures().iter().map(|f| f.model()).collect();
    paths.extend(real_models().iter().map(|r| r.model()));
    let extra = models_dir().parent().unwrap().join("tests/data_dependent");
    let mut cases: Vec<PathBuf> = std::fs::read_dir(&extra).unwrap().map(|e| e.unwrap().path()).collect();
    cases.sort();
    paths.extend(cases.into_iter().filter(|p| p.is_dir()).map(|p| p.join("model.onnx")));
    let failures: Vec<String> = paths.iter().flat_map(unreadable).collect();
    assert!(failures.is_empty(), "{} dims do not read back:\n{}", failures.len(), failures.join("\n"));
}

#[test]
fn the_grammar_reads_what_format_dim_writes() {
    for text in ["N-2", "(N+1)/2", "max(0,N-2)", "min(N,300)", "2*((H+31)/32)", "-((H+1)/2)+1", "samples/5-1"] {
        reads_back(text).unwrap();
    }
    assert!(reads_back("broadcast(g_1,32)").is_err());
    assert!(!grammatical("broadcast(g_1,32)"));
    assert!(grammatical("((height+7)/8)*((width+7)/8)+((height+15)/16)*((width+15)/16)+((height+31)/32)"));
}
