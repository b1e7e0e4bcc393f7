//! What the parser builds from the values it reads: nothing but the checks ([`Check`], the first pass),
//! or tract dims in a symbol scope ([`Build`], the second pass, only over text the first accepted).

use tract_onnx::prelude::{SymbolScope, TDim};

/// The operations the parser applies to the values it has read.
pub(super) trait Dims {
    /// A value.
    type Dim: Clone;
    fn int(&self, v: i64) -> Self::Dim;
    fn sym(&self, name: &str) -> Self::Dim;
    fn neg(&self, a: Self::Dim) -> Self::Dim;
    fn add(&self, a: Self::Dim, b: Self::Dim) -> Self::Dim;
    fn sub(&self, a: Self::Dim, b: Self::Dim) -> Self::Dim;
    fn mul(&self, a: Self::Dim, b: Self::Dim) -> Self::Dim;
    /// `a / d`, `d >= 2`, `a` not a constant (constants are folded before).
    fn div(&self, a: Self::Dim, d: u64) -> Self::Dim;
    fn min(&self, args: Vec<Self::Dim>) -> Self::Dim;
    fn max(&self, args: Vec<Self::Dim>) -> Self::Dim;
}

/// Builds nothing: the first pass only checks the text and its limits.
pub(super) struct Check;

impl Dims for Check {
    type Dim = ();
    fn int(&self, _: i64) {}
    fn sym(&self, _: &str) {}
    fn neg(&self, _: ()) {}
    fn add(&self, _: (), _: ()) {}
    fn sub(&self, _: (), _: ()) {}
    fn mul(&self, _: (), _: ()) {}
    fn div(&self, _: (), _: u64) {}
    fn min(&self, _: Vec<()>) {}
    fn max(&self, _: Vec<()>) {}
}

/// Builds tract dims, with symbols from a scope, each operation as tract's own parser does it (so that
/// tract reading our canonical text builds the same dims). tract's arithmetic simplifies as it goes;
/// the first pass's limits keep that work small.
pub(super) struct Build<'s>(pub &'s SymbolScope);

impl Dims for Build<'_> {
    type Dim = TDim;
    fn int(&self, v: i64) -> TDim {
        TDim::Val(v)
    }
    fn sym(&self, name: &str) -> TDim {
        self.0.sym(name).into()
    }
    fn neg(&self, a: TDim) -> TDim {
        // As tract's parser builds `-x`, so that both readings give the same tree.
        a * -1
    }
    fn add(&self, a: TDim, b: TDim) -> TDim {
        a + b
    }
    fn sub(&self, a: TDim, b: TDim) -> TDim {
        a - b
    }
    fn mul(&self, a: TDim, b: TDim) -> TDim {
        a * b
    }
    fn div(&self, a: TDim, d: u64) -> TDim {
        a / d
    }
    // Unsimplified, as tract's parser builds them.
    fn min(&self, args: Vec<TDim>) -> TDim {
        TDim::Min(args)
    }
    fn max(&self, args: Vec<TDim>) -> TDim {
        TDim::Max(args)
    }
}
