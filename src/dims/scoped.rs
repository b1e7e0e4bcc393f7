//! Proofs against the assertions about some symbols only.
//!
//! tract proves every inequality (is this broadcast operand smaller, is this dim positive) against
//! every assertion of the symbol scope, re-deriving each one per proof. A model whose sizes are minted
//! by its nodes (a chain of detection-style selections: each `NonZero` and `TopK` a size with its
//! bounds) holds assertions in proportion to its nodes, so handling each node costs time in
//! proportion to the model and the whole in proportion to its square. [`ScopedAssertions::run`] runs
//! one node's work with the scope holding only the assertions that mention a symbol of the node's
//! facts, or a symbol of those assertions, three steps out (a proof substitutes one bound into
//! another), then puts the scope back as it was, with any symbol or assertion the work added.
//!
//! Fewer assertions prove less, never something false: a rewrite may only be missed.

use std::collections::HashSet;

use tract_onnx::prelude::*;

/// Below this many assertions the whole scope is cheap enough: no restriction.
const WORTH_RESTRICTING: usize = 32;

/// The scope's assertions, as text tract parses back, with the symbols each mentions; rebuilt when
/// the scope gains assertions.
#[derive(Clone, Default, Debug)]
pub(crate) struct ScopedAssertions {
    /// The scope and the number of its assertions `texts` was made from.
    made_from: Option<(usize, usize)>,
    /// Each assertion: its text and its symbols.
    texts: Vec<(String, HashSet<Symbol>)>,
}

impl ScopedAssertions {
    /// `f()`, with `scope` restricted to the assertions about `mentioned` (see the module docs) while
    /// it runs.
    pub(crate) fn run<R>(&mut self, scope: &SymbolScope, mentioned: &HashSet<Symbol>, f: impl FnOnce() -> R) -> R {
        let all = scope.all_assertions();
        if all.len() < WORTH_RESTRICTING || scope.all_scenarios().into_iter().next().is_some() {
            return f();
        }
        let key = (scope.id(), all.len());
        if self.made_from != Some(key) {
            self.made_from = Some(key);
            self.texts = texts_of(&all);
        }
        let kept = relevant(&self.texts, mentioned);
        let wanted: Vec<&Assertion> = kept.iter().map(|&i| &all[i]).collect();
        let texts: Vec<&str> = kept.iter().map(|&i| self.texts[i].0.as_str()).collect();
        restricted(scope, &texts, &wanted, f)
    }
}

/// Each assertion as text, with its symbols.
fn texts_of(all: &[Assertion]) -> Vec<(String, HashSet<Symbol>)> {
    all.iter()
        .map(|a| {
            let (l, r) = sides(a);
            (a.to_string(), l.symbols().into_iter().chain(r.symbols()).collect())
        })
        .collect()
}

fn sides(a: &Assertion) -> (&TDim, &TDim) {
    match a {
        Assertion::Eq(l, r)
        | Assertion::LT(l, r)
        | Assertion::GT(l, r)
        | Assertion::LTE(l, r)
        | Assertion::GTE(l, r) => (l, r),
    }
}

/// The symbols of the shapes and the dims held as values of `facts`.
pub(crate) fn symbols_of_facts<'f>(facts: impl IntoIterator<Item = &'f TypedFact>) -> HashSet<Symbol> {
    let mut out = HashSet::new();
    for fact in facts {
        out.extend(fact.shape.iter().flat_map(|d| d.symbols()));
        for t in [fact.konst.as_deref(), fact.uniform.as_deref()].into_iter().flatten() {
            if t.datum_type().is_tdim() {
                if let Ok(dims) = t.try_as_plain_ram() {
                    if let Ok(dims) = dims.as_slice::<TDim>() {
                        out.extend(dims.iter().flat_map(|d| d.symbols()));
                    }
                }
            }
        }
    }
    out
}

/// How many steps from the symbols mentioned the assertions kept reach: tract's proof substitutes
/// one assertion into the term at each step, so a proof needing a bound of a symbol that only a
/// third assertion brings in is still made.
const STEPS: usize = 3;

/// The indices of the assertions mentioning a symbol of `mentioned`, or a symbol those mention, and
/// so on for [`STEPS`] steps.
fn relevant(texts: &[(String, HashSet<Symbol>)], mentioned: &HashSet<Symbol>) -> Vec<usize> {
    let mut reach = mentioned.clone();
    let mut kept = vec![false; texts.len()];
    for _ in 0..STEPS {
        let mut more = vec![];
        for (i, (_, symbols)) in texts.iter().enumerate() {
            if !kept[i] && !symbols.is_disjoint(&reach) {
                kept[i] = true;
                more.extend(symbols.iter().cloned());
            }
        }
        if more.is_empty() {
            break;
        }
        reach.extend(more);
    }
    (0..texts.len()).filter(|&i| kept[i]).collect()
}

/// `f()` with `scope` holding only the assertions `wanted` (parsed from `texts`): its data (symbol
/// table, every assertion) is set aside for a copy with the same symbols (the same ids: interned in
/// the same order) and those assertions, and put back after `f` (also when it panics), with the
/// symbols and assertions `f` added. If the copy cannot be made exactly (a text that does not parse
/// back to its assertion), `f` runs on the full scope.
fn restricted<R>(scope: &SymbolScope, texts: &[&str], wanted: &[&Assertion], f: impl FnOnce() -> R) -> R {
    let symbols = scope.all_symbols();
    let names: Vec<String> = symbols.iter().map(|s| s.to_string()).collect();
    let full = std::mem::take(&mut *scope.0.lock().borrow_mut());
    let mut put_back = PutBack {
        full: Some(full),
        put: |full| {
            // What `f` added: symbols past the copied ones, assertions past the kept ones.
            let added_symbols: Vec<String> =
                scope.all_symbols().iter().skip(names.len()).map(|s| s.to_string()).collect();
            let added: Vec<String> = scope.all_assertions().iter().skip(wanted.len()).map(|a| a.to_string()).collect();
            *scope.0.lock().borrow_mut() = full;
            for name in &added_symbols {
                scope.sym(name);
            }
            for text in &added {
                // Parsed as the copy parsed it (its symbols are in the table now).
                let _ = scope.add_assertion(text.as_str());
            }
        },
    };
    for name in &names {
        scope.sym(name);
    }
    let copy = scope.all_symbols();
    let same = copy.len() == symbols.len()
        && copy.iter().zip(&symbols).zip(&names).all(|((a, b), n)| a == b && a.to_string() == *n);
    if !same
        || texts.iter().any(|text| scope.add_assertion(*text).is_err())
        || scope.all_assertions().iter().ne(wanted.iter().copied())
    {
        put_back.restore_untouched();
    }
    f()
}

/// Puts a scope's data back when dropped, with what was added meanwhile (`put`).
struct PutBack<D, P: FnMut(D)> {
    full: Option<D>,
    put: P,
}

impl<D, P: FnMut(D)> PutBack<D, P> {
    /// Puts the data back before anything used the copy.
    fn restore_untouched(&mut self) {
        if let Some(full) = self.full.take() {
            (self.put)(full);
        }
    }
}

impl<D, P: FnMut(D)> Drop for PutBack<D, P> {
    fn drop(&mut self) {
        self.restore_untouched();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A scope with `n` symbols `s0..s{n-1}`, each `>= 0` and `<= 100`, and `s{i+1} <= s{i}`.
    fn chain(n: usize) -> (SymbolScope, Vec<Symbol>) {
        let scope = SymbolScope::default();
        let symbols: Vec<Symbol> = (0..n).map(|i| scope.sym(&format!("s{i}"))).collect();
        for i in 0..n {
            scope.add_assertion(format!("s{i}>=0")).unwrap();
            scope.add_assertion(format!("s{i}<=100")).unwrap();
            if i + 1 < n {
                scope.add_assertion(format!("s{}<=s{i}", i + 1)).unwrap();
            }
        }
        (scope, symbols)
    }

    #[test]
    fn only_the_assertions_near_the_symbols_are_seen_and_the_scope_comes_back() {
        let (scope, s) = chain(40);
        let before = scope.all_assertions();
        let mentioned: HashSet<Symbol> = [s[10].clone()].into_iter().collect();
        let mut scoped = ScopedAssertions::default();
        let (seen, proved, far) = scoped.run(&scope, &mentioned, || {
            let seen: Vec<String> = scope.all_assertions().iter().map(|a| a.to_string()).collect();
            // 100 - s12 >= 0 takes the bound of s12, two steps from s10: seen.
            let near = (100.to_dim() - s[12].to_dim()).prove_positive_or_zero();
            // 100 - s3 >= 0 takes the bound of s3, far from s10: not seen.
            let far = (100.to_dim() - s[3].to_dim()).prove_positive_or_zero();
            (seen, near, far)
        });
        assert!(proved);
        assert!(!far);
        // Three steps from s10: s9 and s11, then s8 and s12, then s7 and s13 (whose own bounds
        // would be a fourth step).
        let mut want = vec![];
        for i in 8..=12 {
            want.push(format!("s{i} >= 0"));
            want.push(format!("s{i} <= 100"));
        }
        for i in 7..=12 {
            want.push(format!("s{} <= s{i}", i + 1));
        }
        let mut seen_sorted = seen.clone();
        seen_sorted.sort();
        want.sort();
        assert_eq!(seen_sorted, want);
        // Put back whole, and the full scope proves the far inequality.
        assert_eq!(scope.all_assertions(), before);
        assert!((100.to_dim() - s[3].to_dim()).prove_positive_or_zero());
    }

    #[test]
    fn symbols_and_assertions_added_meanwhile_are_kept() {
        let (scope, s) = chain(20);
        let mentioned: HashSet<Symbol> = [s[0].clone()].into_iter().collect();
        let mut scoped = ScopedAssertions::default();
        let made = scoped.run(&scope, &mentioned, || {
            let t = scope.new_with_prefix("t");
            scope.add_assertion("t<=s0").unwrap();
            t
        });
        assert_eq!(made.to_string(), "t");
        assert_eq!(scope.all_symbols().len(), 21);
        assert_eq!(scope.get("t"), Some(made.clone()));
        assert!(scope.all_assertions().iter().any(|a| a.to_string() == "t <= s0"));
        // A symbol made afterwards gets a new id.
        let u = scope.sym("u");
        assert_ne!(u, made);
        assert!((s[0].to_dim() - made.to_dim()).prove_positive_or_zero());
    }
}
