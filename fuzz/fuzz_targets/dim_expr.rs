//! Arbitrary text as a dim expression, an assumption and a symbol list (`sliceops::symbolic`). The
//! parser must return (never panic, overflow the stack or run long: libFuzzer's `-timeout`), and what
//! it accepts must hold together: an accepted dim is also a valid expression in an assumption, tract
//! reads every canonical text back to exactly the dims we built, and `symbols_in` accepts what the
//! parsers accept, naming the same symbols.

#![no_main]

use libfuzzer_sys::fuzz_target;
use sliceops::symbolic::{parse_assumption, parse_dim, symbols_in, Assumption, Comparison, MAX_LEN};
use sliceops::tract_onnx::prelude::*;

/// tract's reading of an assumption's canonical text, which must be our dims.
fn tract_reads_back(scope: &SymbolScope, a: &Assumption) {
    let before = scope.all_assertions().len();
    scope.add_assertion(a.tract_text()).expect("tract refused our canonical text");
    let added = scope.all_assertions().remove(before);
    let (l, r) = (a.lhs.clone(), a.rhs.clone());
    let want = match a.comparison {
        Comparison::Eq => Assertion::Eq(l, r),
        Comparison::Le => Assertion::LTE(l, r),
        Comparison::Ge => Assertion::GTE(l, r),
        Comparison::Lt => Assertion::LT(l, r),
        Comparison::Gt => Assertion::GT(l, r),
    };
    assert_eq!(added, want, "tract reads {:?} differently", a.tract_text());
}

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let scope = SymbolScope::default();
    let symbols = symbols_in(text);
    if let Ok(dim) = parse_dim(&scope, text) {
        assert!(symbols.is_ok(), "symbols_in refused a valid dim {text:?}");
        let equation = format!("{text}==0");
        if equation.len() <= MAX_LEN && !text.contains(['<', '>', '=', '&']) {
            let parsed = parse_assumption(&scope, &equation).expect("a valid dim is a valid side of an assumption");
            assert_eq!(parsed.len(), 1);
            assert_eq!(parsed[0].lhs, dim);
            tract_reads_back(&scope, &parsed[0]);
        }
    }
    if let Ok(assumptions) = parse_assumption(&scope, text) {
        let mut named: Vec<String> = vec![];
        for a in &assumptions {
            tract_reads_back(&scope, a);
            for s in a.symbols() {
                if !named.contains(s) {
                    named.push(s.clone());
                }
            }
        }
        assert_eq!(symbols.as_ref().ok(), Some(&named), "symbols_in disagrees on {text:?}");
    }
});
