//! A set of dims compared as written.
//!
//! tract's `TDim` equality gives two dims written differently a second chance: it simplifies their
//! difference, proving inequalities against every assertion of the symbol scope. A `HashSet<TDim>`
//! calls it on every stored dim whose hash shares a few bits with the one looked up, so on a model
//! with hundreds of run-time sizes each insertion could cost a proof against hundreds of assertions
//! (and whether two dims met was a matter of hash bits). [`DimSet`] compares dims as written.

use std::collections::HashMap;
use std::hash::{DefaultHasher, Hash, Hasher};

use tract_onnx::prelude::TDim;

/// Dims, each kept once as written.
#[derive(Debug, Clone, Default)]
pub(crate) struct DimSet {
    by_hash: HashMap<u64, Vec<TDim>>,
}

impl DimSet {
    /// Adds `d`; whether it was not there.
    pub(crate) fn insert(&mut self, d: TDim) -> bool {
        let bucket = self.by_hash.entry(key(&d)).or_default();
        if bucket.iter().any(|e| same(e, &d)) {
            return false;
        }
        bucket.push(d);
        true
    }

    /// Whether `d` is in the set, written the same way.
    pub(crate) fn contains(&self, d: &TDim) -> bool {
        self.by_hash.get(&key(d)).is_some_and(|bucket| bucket.iter().any(|e| same(e, d)))
    }
}

impl Extend<TDim> for DimSet {
    fn extend<I: IntoIterator<Item = TDim>>(&mut self, dims: I) {
        for d in dims {
            self.insert(d);
        }
    }
}

impl FromIterator<TDim> for DimSet {
    fn from_iter<I: IntoIterator<Item = TDim>>(dims: I) -> DimSet {
        let mut set = DimSet::default();
        set.extend(dims);
        set
    }
}

/// tract's hash of a dim (of its tree, as written).
fn key(d: &TDim) -> u64 {
    let mut h = DefaultHasher::new();
    d.hash(&mut h);
    h.finish()
}

/// Whether two dims are written the same way (the same tree), walked with an explicit stack.
fn same(a: &TDim, b: &TDim) -> bool {
    let mut todo = vec![(a, b)];
    while let Some(pair) = todo.pop() {
        match pair {
            (TDim::Val(x), TDim::Val(y)) if x == y => {}
            (TDim::Sym(x), TDim::Sym(y)) if x == y => {}
            (TDim::Add(x), TDim::Add(y))
            | (TDim::Mul(x), TDim::Mul(y))
            | (TDim::Broadcast(x), TDim::Broadcast(y))
            | (TDim::Min(x), TDim::Min(y))
            | (TDim::Max(x), TDim::Max(y))
                if x.len() == y.len() =>
            {
                todo.extend(x.iter().zip(y));
            }
            (TDim::MulInt(p, x), TDim::MulInt(q, y)) if p == q => todo.push((x, y)),
            (TDim::Div(x, p), TDim::Div(y, q)) if p == q => todo.push((x, y)),
            (TDim::Ge(a, b), TDim::Ge(c, d)) | (TDim::Eq(a, b), TDim::Eq(c, d)) => {
                todo.push((a, c));
                todo.push((b, d));
            }
            _ => return false,
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;
    use tract_onnx::prelude::SymbolScope;

    #[test]
    fn dims_are_kept_once_as_written() {
        let s = SymbolScope::default();
        let p = |t: &str| s.parse_tdim(t).unwrap();
        let mut set: DimSet = [p("N+1"), p("min(N,3)")].into_iter().collect();
        assert!(set.contains(&p("N+1")));
        assert!(set.contains(&p("min(N,3)")));
        assert!(!set.contains(&p("N")));
        assert!(!set.contains(&p("min(N,4)")));
        assert!(!set.insert(p("1+N")));
        assert!(set.insert(p("2*N")));
        assert!(set.contains(&p("2*N")));
    }
}
