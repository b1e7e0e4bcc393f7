//! Proofs against the assertions about some symbols only.
//!
//! tract proves every inequality (is this broadcast operand smaller, is this dim positive) against
//! every assertion of the symbol scope, re-deriving each one per proof. A model whose sizes are minted
//! by its nodes (a chain of detection-style selections: each `NonZero` and `TopK` a size with its
//! bounds) holds assertions in proportion to its nodes, so handling each node costs time in
//! proportion to the model and the whole in proportion to its square. [`ScopedAssertions::run`] runs
//! one node's work with the scope holding the assertions that mention a symbol of the node's facts,
//! or a symbol of those assertions, three steps out (a proof substitutes one bound into another),
//! then puts the scope back as it was, with any symbol or assertion the work added.
//!
//! What a run costs does not grow with the scope either: the assertions are indexed by symbol as the
//! scope gains them, and the scope a node runs in (every symbol, some assertions) is kept from one
//! run to the next, gaining the assertions a node needs and rebuilt once it holds more than twice
//! what one node needs (and [`WORKING_SPARE`] more). A symbol bounding many others (an input length
//! `N` bounding each of 120 classes' selections) is a hub: reaching it brings its own bounds, not
//! every size it bounds, or every node would see every assertion again.
//!
//! Fewer assertions prove less, never something false: a rewrite may only be missed.

use std::collections::{HashMap, HashSet};

use tract_onnx::prelude::*;

/// Below this many assertions the whole scope is cheap enough: no restriction.
const WORTH_RESTRICTING: usize = 32;

/// How many steps from the symbols mentioned the assertions kept reach: tract's proof substitutes
/// one assertion into the term at each step, so a proof needing a bound of a symbol that only a
/// third assertion brings in is still made.
const STEPS: usize = 3;

/// A symbol in more assertions than this that mention other symbols too is a hub.
const HUB: usize = 8;

/// The scope kept between runs is rebuilt once it would hold more than twice the assertions a run
/// needs and this many more: every proof reads every assertion of the scope, a rebuild interns every
/// symbol again.
const WORKING_SPARE: usize = 8;

/// The scope's symbols and assertions, indexed, and the restricted scope kept between runs.
#[derive(Default)]
pub(crate) struct ScopedAssertions {
    /// The id of the scope data this follows: another scope starts afresh.
    followed: Option<usize>,
    /// The scope's symbol names, in the order it interned them.
    names: Vec<String>,
    /// Each assertion of the scope, in order: itself, its text, its symbols.
    assertions: Vec<(Assertion, String, Vec<Symbol>)>,
    /// The assertions mentioning each symbol.
    by_symbol: HashMap<Symbol, Vec<usize>>,
    /// The restricted scope, between runs.
    working: Option<Working>,
}

/// A restricted scope: every symbol of the scope followed (the same ones, interned in the same order),
/// some of its assertions. Its data lives in `holder` between runs and in the scope during one.
struct Working {
    holder: SymbolScope,
    /// The symbols it has interned.
    symbols: usize,
    /// The scope's assertions it holds (indices in [`ScopedAssertions::assertions`]), in its order.
    held: Vec<usize>,
    held_set: HashSet<usize>,
}

impl Clone for ScopedAssertions {
    /// The indexes, without the restricted scope (its data is one scope's, never shared).
    fn clone(&self) -> ScopedAssertions {
        ScopedAssertions {
            followed: self.followed,
            names: self.names.clone(),
            assertions: self.assertions.clone(),
            by_symbol: self.by_symbol.clone(),
            working: None,
        }
    }
}

impl std::fmt::Debug for ScopedAssertions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ScopedAssertions")
            .field("symbols", &self.names.len())
            .field("assertions", &self.assertions.len())
            .field("working", &self.working.as_ref().map(|w| w.held.len()))
            .finish()
    }
}

impl ScopedAssertions {
    /// `f()`, with `scope` restricted to the assertions about `mentioned` (see the module docs) while
    /// it runs.
    pub(crate) fn run<R>(&mut self, scope: &SymbolScope, mentioned: &HashSet<Symbol>, f: impl FnOnce() -> R) -> R {
        let count = scope.0.lock().borrow().all_assertions().len();
        if count < WORTH_RESTRICTING || scope.all_scenarios().into_iter().next().is_some() {
            return f();
        }
        self.sync(scope);
        let need = self.relevant(mentioned);
        let Some(working) = self.prepare(&need) else { return f() };
        // The restricted data goes into the scope; the full data waits in the holder.
        swap(scope, &working.holder);
        let mut put_back = PutBack { state: Some((self, working)), scope, filled: false };
        if !put_back.fill(&need) {
            put_back.restore(false);
            return f();
        }
        let out = f();
        put_back.restore(true);
        out
    }

    /// Takes in the symbols and assertions the scope gained since the last run.
    fn sync(&mut self, scope: &SymbolScope) {
        let id = scope.id();
        let symbols = scope.all_symbols();
        let count = scope.0.lock().borrow().all_assertions().len();
        // Scopes only grow: one that did not is another.
        if self.followed != Some(id) || symbols.len() < self.names.len() || count < self.assertions.len() {
            *self = ScopedAssertions { followed: Some(id), ..ScopedAssertions::default() };
        }
        self.names.extend(symbols.iter().skip(self.names.len()).map(|s| s.to_string()));
        let added: Vec<Assertion> = scope
            .0
            .lock()
            .borrow()
            .all_assertions()
            .get(self.assertions.len()..)
            .map(<[_]>::to_vec)
            .unwrap_or_default();
        for a in added {
            let (l, r) = sides(&a);
            let mut symbols: Vec<Symbol> = l.symbols().into_iter().chain(r.symbols()).collect();
            symbols.sort();
            symbols.dedup();
            let ix = self.assertions.len();
            for s in &symbols {
                self.by_symbol.entry(s.clone()).or_default().push(ix);
            }
            let text = a.to_string();
            self.assertions.push((a, text, symbols));
        }
    }

    /// Whether `symbol` is a hub: in more than [`HUB`] assertions mentioning another symbol too.
    fn is_hub(&self, symbol: &Symbol) -> bool {
        let linked = self
            .by_symbol
            .get(symbol)
            .map_or(0, |ixs| ixs.iter().filter(|&&i| self.assertions[i].2.len() > 1).take(HUB + 1).count());
        linked > HUB
    }

    /// The indices of the assertions about `mentioned` (see the module docs), in the scope's order.
    fn relevant(&self, mentioned: &HashSet<Symbol>) -> Vec<usize> {
        let mut reached: HashSet<Symbol> = mentioned.clone();
        let mut frontier: Vec<Symbol> = mentioned.iter().cloned().collect();
        let mut kept: HashSet<usize> = HashSet::new();
        let mut hubs: Vec<Symbol> = vec![];
        for _ in 0..STEPS {
            let mut next = vec![];
            for s in &frontier {
                // A hub brings its own bounds here; the assertions linking it to symbols reached, last.
                let hub = self.is_hub(s);
                if hub {
                    hubs.push(s.clone());
                }
                for &ix in self.by_symbol.get(s).into_iter().flatten() {
                    let symbols = &self.assertions[ix].2;
                    if (hub && symbols.len() > 1) || !kept.insert(ix) {
                        continue;
                    }
                    for t in symbols {
                        if reached.insert(t.clone()) {
                            next.push(t.clone());
                        }
                    }
                }
            }
            if next.is_empty() {
                break;
            }
            frontier = next;
        }
        for h in &hubs {
            for &ix in self.by_symbol.get(h).into_iter().flatten() {
                if self.assertions[ix].2.iter().all(|t| reached.contains(t)) {
                    kept.insert(ix);
                }
            }
        }
        let mut kept: Vec<usize> = kept.into_iter().collect();
        kept.sort_unstable();
        kept
    }

    /// The restricted scope to run in for `need`: the one kept, when it can gain what is missing
    /// and stay small, else a new one.
    fn prepare(&mut self, need: &[usize]) -> Option<Working> {
        let limit = 2 * need.len() + WORKING_SPARE;
        match self.working.take() {
            Some(w) if w.held.len() + need.iter().filter(|i| !w.held_set.contains(i)).count() <= limit => Some(w),
            _ => Some(Working { holder: SymbolScope::default(), symbols: 0, held: vec![], held_set: HashSet::new() }),
        }
    }
}

/// Exchanges the data of two scopes.
fn swap(a: &SymbolScope, b: &SymbolScope) {
    let a = a.0.lock();
    let b = b.0.lock();
    std::mem::swap(&mut *a.borrow_mut(), &mut *b.borrow_mut());
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

/// One run in a restricted scope: puts the full data back when dropped (also when `f` panics), with
/// what the run added.
struct PutBack<'a> {
    state: Option<(&'a mut ScopedAssertions, Working)>,
    scope: &'a SymbolScope,
    /// Whether the restricted scope was made exactly: only then is what it gained the run's.
    filled: bool,
}

impl PutBack<'_> {
    /// Gives the restricted scope (in the scope now) every symbol and the assertions `need`: false if
    /// it cannot be made exactly (a text that does not parse back to its assertion).
    fn fill(&mut self, need: &[usize]) -> bool {
        let Some((state, working)) = self.state.as_mut() else { return false };
        for name in &state.names[working.symbols..] {
            self.scope.sym(name);
        }
        working.symbols = state.names.len();
        if self.scope.all_symbols().len() != state.names.len() {
            return false;
        }
        for &ix in need {
            if working.held_set.contains(&ix) {
                continue;
            }
            let (assertion, text, _) = &state.assertions[ix];
            if self.scope.add_assertion(text.as_str()).is_err() {
                return false;
            }
            let data = self.scope.0.lock();
            if data.borrow().all_assertions().last() != Some(assertion) {
                return false;
            }
            working.held.push(ix);
            working.held_set.insert(ix);
        }
        self.filled = true;
        true
    }

    /// Puts the full data back, with the symbols and assertions the run added; keeps the restricted
    /// scope for the next run if `keep`.
    fn restore(&mut self, keep: bool) {
        let Some((state, mut working)) = self.state.take() else { return };
        let (symbols, added): (Vec<String>, Vec<String>) = if self.filled {
            let symbols = self.scope.all_symbols().iter().skip(working.symbols).map(|s| s.to_string()).collect();
            let data = self.scope.0.lock();
            let data = data.borrow();
            (symbols, data.all_assertions().iter().skip(working.held.len()).map(|a| a.to_string()).collect())
        } else {
            (vec![], vec![])
        };
        swap(self.scope, &working.holder);
        for name in &symbols {
            self.scope.sym(name);
        }
        // Parsed as the restricted scope parsed it (its symbols are in the table now).
        let before = self.scope.0.lock().borrow().all_assertions().len();
        let mut ok = true;
        for text in &added {
            ok &= self.scope.add_assertion(text.as_str()).is_ok();
        }
        // The restricted scope holds the added assertions too: they are the scope's next ones.
        working.symbols += symbols.len();
        if keep && ok && before == state.assertions.len() {
            for ix in before..before + added.len() {
                working.held.push(ix);
                working.held_set.insert(ix);
            }
            state.working = Some(working);
        }
    }
}

impl Drop for PutBack<'_> {
    fn drop(&mut self) {
        self.restore(false);
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

    /// A scope with `N` (`0 <= N <= 1000`) and `n` sizes `c0..` each `0 <= c_i <= 100` and `c_i <= N`.
    fn star(n: usize) -> (SymbolScope, Vec<Symbol>) {
        let scope = SymbolScope::default();
        scope.sym("N");
        scope.add_assertion("N>=0").unwrap();
        scope.add_assertion("N<=1000").unwrap();
        let symbols: Vec<Symbol> = (0..n).map(|i| scope.sym(&format!("c{i}"))).collect();
        for i in 0..n {
            for a in [format!("c{i}>=0"), format!("c{i}<=100"), format!("c{i}<=N")] {
                scope.add_assertion(a).unwrap();
            }
        }
        (scope, symbols)
    }

    fn seen_in(scoped: &mut ScopedAssertions, scope: &SymbolScope, mentioned: &[&Symbol]) -> Vec<String> {
        let mentioned: HashSet<Symbol> = mentioned.iter().map(|s| (*s).clone()).collect();
        let mut seen: Vec<String> =
            scoped.run(scope, &mentioned, || scope.all_assertions().iter().map(|a| a.to_string()).collect());
        seen.sort();
        seen
    }

    #[test]
    fn a_hub_brings_its_own_bounds_not_every_size_it_bounds() {
        let (scope, c) = star(20);
        let n = scope.get("N").unwrap();
        let mut scoped = ScopedAssertions::default();
        let want = ["N <= 1000", "N >= 0", "c3 <= 100", "c3 <= N", "c3 >= 0"];
        assert_eq!(seen_in(&mut scoped, &scope, &[&c[3]]), want);
        // Mentioned itself, N is still a hub: the sizes it bounds are not brought in.
        let mut fresh = ScopedAssertions::default();
        assert_eq!(seen_in(&mut fresh, &scope, &[&c[3], &n]), want);
        let proved = scoped.run(&scope, &[c[3].clone()].into_iter().collect(), || {
            (
                (n.to_dim() - c[3].to_dim()).prove_positive_or_zero(),
                (1000.to_dim() - n.to_dim()).prove_positive_or_zero(),
            )
        });
        assert_eq!(proved, (true, true));
        assert_eq!(scope.all_assertions().len(), 62);
    }

    #[test]
    fn the_restricted_scope_is_kept_from_one_run_to_the_next() {
        let (scope, c) = star(30);
        let mut scoped = ScopedAssertions::default();
        assert_eq!(seen_in(&mut scoped, &scope, &[&c[3]]).len(), 5);
        // The next run gains c5's assertions, and keeps c3's.
        let seen = seen_in(&mut scoped, &scope, &[&c[5]]);
        assert_eq!(seen.len(), 8);
        assert!(seen.contains(&"c3 <= N".to_string()) && seen.contains(&"c5 <= N".to_string()));
        // An assertion added meanwhile reaches the scope, and the next run sees it.
        scoped.run(&scope, &[c[5].clone()].into_iter().collect(), || scope.add_assertion("c5<=50").unwrap());
        assert!(scope.all_assertions().iter().any(|a| a.to_string() == "c5 <= 50"));
        assert_eq!(scope.all_assertions().len(), 93);
        assert!(seen_in(&mut scoped, &scope, &[&c[5]]).contains(&"c5 <= 50".to_string()));
        // Past the most it holds, it is rebuilt with what one run needs.
        let all: Vec<&Symbol> = c.iter().collect();
        assert_eq!(seen_in(&mut scoped, &scope, &all).len(), 93);
        assert_eq!(seen_in(&mut scoped, &scope, &[&c[7]]).len(), 5);
        assert_eq!(scope.all_assertions().len(), 93);
    }
}
