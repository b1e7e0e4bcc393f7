//! Arbitrary text as a dim expression, an assumption and a symbol list (`sliceops::symbolic`). The
//! parser must return (never panic, overflow the stack or run long: libFuzzer's `-timeout`), and what
//! it accepts must hold together: an accepted dim is also a valid side of an assumption, tract reads
//! every canonical text back to the same comparison of the same dims, and `symbols_in` accepts what
//! the parsers accept, naming the same symbols.
//!
//! tract builds the dims of a canonical text with the same operations in the same order as we do, but
//! its simplification iterates hash maps, so equal dims may differ in form: they are compared by value,
//! with every symbol set to 1, to 97, and to distinct values from 1000 up, where both evaluate without
//! overflow and no division has a negative numerator (tract rewrites divisions in ways that only hold
//! for non-negative ones, such as dims).

#![no_main]

use libfuzzer_sys::fuzz_target;
use sliceops::symbolic::{parse_assumption, parse_dim, symbols_in, Assumption, MAX_LEN};
use sliceops::tract_onnx::prelude::*;

/// Whether some division in `d` has a negative numerator at `values` (or one that does not evaluate):
/// tract's simplification rewrites divisions in ways only sound for non-negative numerators, which
/// dims have, so values there are not compared.
fn divides_a_negative(d: &TDim, values: &SymbolValues) -> bool {
    match d {
        TDim::Div(a, _) => a.maybe_eval_to_i64(values).is_none_or(|v| v < 0) || divides_a_negative(a, values),
        TDim::Add(t) | TDim::Mul(t) | TDim::Min(t) | TDim::Max(t) | TDim::Broadcast(t) => {
            t.iter().any(|x| divides_a_negative(x, values))
        }
        TDim::MulInt(_, a) => divides_a_negative(a, values),
        TDim::Ge(a, b) | TDim::Eq(a, b) => divides_a_negative(a, values) || divides_a_negative(b, values),
        TDim::Val(_) | TDim::Sym(_) => false,
    }
}

/// Asserts two dims have the same value, `got` with symbols from `got_scope` and `want` from
/// `want_scope`, matched by name.
fn assert_same_value(got_scope: &SymbolScope, got: &TDim, want_scope: &SymbolScope, want: &TDim, text: &str) {
    let names: Vec<String> = want_scope.all_symbols().iter().map(|s| s.to_string()).collect();
    for assign in [|_: usize| 1i64, |_| 97, |i| 1000 + 7 * i as i64] {
        let (mut g, mut w) = (SymbolValues::default(), SymbolValues::default());
        for (i, name) in names.iter().enumerate() {
            g.set(&got_scope.sym(name), assign(i));
            w.set(&want_scope.sym(name), assign(i));
        }
        if divides_a_negative(got, &g) || divides_a_negative(want, &w) {
            continue;
        }
        if let (Some(gv), Some(wv)) = (got.maybe_eval_to_i64(&g), want.maybe_eval_to_i64(&w)) {
            assert_eq!(gv, wv, "{text:?}: {got} against {want}");
        }
    }
}

/// tract's reading of an assumption's canonical text, in a scope of its own (the assertions already
/// added to a scope change how tract simplifies what it parses there).
fn tract_reads_back(scope: &SymbolScope, a: &Assumption) {
    let fresh = SymbolScope::default();
    fresh.add_assertion(a.tract_text()).expect("tract refused our canonical text");
    let added = fresh.all_assertions().remove(0);
    let Some((lhs, rhs)) = a.comparison.sides_of(&added) else {
        panic!("tract reads {:?} as {added:?}", a.tract_text())
    };
    assert_same_value(&fresh, lhs, scope, &a.lhs, a.tract_text());
    assert_same_value(&fresh, rhs, scope, &a.rhs, a.tract_text());
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
            assert_same_value(&scope, &parsed[0].lhs, &scope, &dim, text);
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
