//! The condition of an `If` the analysis cannot decide, in words a user can read and assume:
//! `input_d0 == 1` (a dim against a number), `sr == 16000` (an input's value against a number),
//! `h == 1 and w == 1` (an `And` or `Or` of such).
//!
//! Two `If` nodes that test the same thing get the same text, so that a case of the analysis
//! ([`super::cases`]) takes the same branch at both.

use crate::dims::format_dim;
use tract_onnx::prelude::*;

/// One side of a comparison.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Operand {
    /// A value known as a dim expression (a size, a number).
    Dim(TDim),
    /// A value known only by name (an input's value, a computed one).
    Named(String),
}

impl Operand {
    fn text(&self) -> String {
        match self {
            Operand::Dim(d) => format_dim(&d.clone().simplify()),
            Operand::Named(n) => n.clone(),
        }
    }
}

/// A comparison operator.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Cmp {
    /// `==`
    Eq,
    /// `!=`
    Ne,
    /// `<`
    Lt,
    /// `<=`
    Le,
    /// `>`
    Gt,
    /// `>=`
    Ge,
}

impl Cmp {
    /// The comparison an ONNX op makes (`Equal`, `Less`, ...).
    pub(crate) fn of_op(op_type: &str) -> Option<Cmp> {
        Some(match op_type {
            "Equal" => Cmp::Eq,
            "Less" => Cmp::Lt,
            "LessOrEqual" => Cmp::Le,
            "Greater" => Cmp::Gt,
            "GreaterOrEqual" => Cmp::Ge,
            _ => return None,
        })
    }

    fn negated(self) -> Cmp {
        match self {
            Cmp::Eq => Cmp::Ne,
            Cmp::Ne => Cmp::Eq,
            Cmp::Lt => Cmp::Ge,
            Cmp::Le => Cmp::Gt,
            Cmp::Gt => Cmp::Le,
            Cmp::Ge => Cmp::Lt,
        }
    }

    fn symbol(self) -> &'static str {
        match self {
            Cmp::Eq => "==",
            Cmp::Ne => "!=",
            Cmp::Lt => "<",
            Cmp::Le => "<=",
            Cmp::Gt => ">",
            Cmp::Ge => ">=",
        }
    }
}

/// One outcome of a condition as text, kept past the analysis whose symbols it names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Outcome {
    /// What holds: `input_d0 == 1`.
    pub text: String,
    /// The comparisons of dims that hold in this outcome, each one assumption (`h == 1` and
    /// `w == 1` for `h == 1 and w == 1`; none for `h != 1 or w != 1`).
    pub assumes: Vec<String>,
}

/// An undecided condition met: what holds in each branch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Met {
    /// The `then` branch's outcome.
    pub holds: Outcome,
    /// The `else` branch's.
    pub fails: Outcome,
}

impl Met {
    /// Whether `outcome` is one of this condition's two.
    pub(crate) fn has(&self, outcome: &Outcome) -> bool {
        self.holds == *outcome || self.fails == *outcome
    }
}

/// What an `If` tests.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Condition {
    /// Two values compared.
    Compare(Operand, Cmp, Operand),
    /// A boolean value known by name only, true or (`negated`) false.
    Flag {
        /// The value.
        name: String,
        /// Whether the condition is that it is false.
        negated: bool,
    },
    /// Every one of these holds (`And`).
    All(Vec<Condition>),
    /// At least one of these holds (`Or`).
    Any(Vec<Condition>),
}

impl Condition {
    /// The condition that holds when this one does not.
    pub(crate) fn negated(&self) -> Condition {
        match self {
            Condition::Compare(a, c, b) => Condition::Compare(a.clone(), c.negated(), b.clone()),
            Condition::Flag { name, negated } => Condition::Flag { name: name.clone(), negated: !negated },
            // De Morgan: not (a and b) is (not a) or (not b).
            Condition::All(parts) => Condition::Any(parts.iter().map(Condition::negated).collect()),
            Condition::Any(parts) => Condition::All(parts.iter().map(Condition::negated).collect()),
        }
    }

    /// Its two outcomes as text (while the symbols it names print by name).
    pub(crate) fn met(&self) -> Met {
        let outcome = |c: &Condition| Outcome { text: c.text(), assumes: c.assumes() };
        Met { holds: outcome(self), fails: outcome(&self.negated()) }
    }

    /// The condition as text: `input_d0 == 1`, `sr != 16000`, `flag`, `not flag`, `h == 1 and
    /// (w == 1 or flag)`.
    pub(crate) fn text(&self) -> String {
        let joined = |parts: &[Condition], word: &str| -> String {
            let texts: Vec<String> = parts
                .iter()
                .map(|p| match p {
                    Condition::All(_) | Condition::Any(_) => format!("({})", p.text()),
                    _ => p.text(),
                })
                .collect();
            texts.join(word)
        };
        match self {
            Condition::Compare(a, c, b) => format!("{} {} {}", a.text(), c.symbol(), b.text()),
            Condition::Flag { name, negated: false } => name.clone(),
            Condition::Flag { name, negated: true } => format!("not {name}"),
            Condition::All(parts) => joined(parts, " and "),
            Condition::Any(parts) => joined(parts, " or "),
        }
    }

    /// The comparisons of dims that hold whenever this condition does, as assumptions: a
    /// comparison's own (not `!=`, which an assumption cannot say), every part's of an `And`, none of
    /// an `Or` of several.
    pub(crate) fn assumes(&self) -> Vec<String> {
        match self {
            Condition::Compare(..) if self.on_dims() => vec![self.text()],
            Condition::All(parts) => parts.iter().flat_map(Condition::assumes).collect(),
            Condition::Any(parts) if parts.len() == 1 => parts[0].assumes(),
            _ => vec![],
        }
    }

    /// Whether the condition holds as far as `known` decides its comparisons and flags (`None`
    /// where it does not): an `And` false as soon as one part is, an `Or` true as soon as one is.
    pub(crate) fn decide_by(&self, known: &dyn Fn(&Condition) -> Option<bool>) -> Option<bool> {
        match self {
            Condition::All(parts) | Condition::Any(parts) => {
                let all = matches!(self, Condition::All(_));
                let mut undecided = false;
                for p in parts {
                    match p.decide_by(known) {
                        // The part that settles it: a false one for `And`, a true one for `Or`.
                        Some(v) if v != all => return Some(v),
                        Some(_) => {}
                        None => undecided = true,
                    }
                }
                (!undecided).then_some(all)
            }
            _ => known(self),
        }
    }

    /// Whether the condition holds, where what the scope assumes about its symbols decides it
    /// (`fixed`: symbols the user's assumptions set equal to a number).
    pub(crate) fn decided(&self, fixed: &[(Symbol, i64)]) -> Option<bool> {
        if matches!(self, Condition::All(_) | Condition::Any(_)) {
            return self.decide_by(&|c| c.decided(fixed));
        }
        let Condition::Compare(Operand::Dim(a), cmp, Operand::Dim(b)) = self else { return None };
        let mut diff = a.clone() - b.clone();
        for (sym, value) in fixed {
            diff = diff.substitute(sym, &TDim::Val(*value)).ok()?;
        }
        let diff = diff.simplify();
        let (ge0, gt0, le0, lt0) = (
            diff.prove_positive_or_zero(),
            diff.prove_strict_positive(),
            diff.prove_negative_or_zero(),
            diff.prove_strict_negative(),
        );
        let eq = ge0 && le0;
        match cmp {
            Cmp::Eq | Cmp::Ne if eq => Some(*cmp == Cmp::Eq),
            Cmp::Eq | Cmp::Ne if gt0 || lt0 => Some(*cmp == Cmp::Ne),
            Cmp::Ge if ge0 => Some(true),
            Cmp::Ge if lt0 => Some(false),
            Cmp::Gt if gt0 => Some(true),
            Cmp::Gt if le0 => Some(false),
            Cmp::Le if le0 => Some(true),
            Cmp::Le if gt0 => Some(false),
            Cmp::Lt if lt0 => Some(true),
            Cmp::Lt if ge0 => Some(false),
            _ => None,
        }
    }

    /// Whether the condition compares dims only and can be assumed (`==`, `<`, `<=`, `>`, `>=`).
    pub(crate) fn on_dims(&self) -> bool {
        matches!(self, Condition::Compare(Operand::Dim(_), cmp, Operand::Dim(_)) if *cmp != Cmp::Ne)
    }

    /// Whether the condition is on sizes only a run knows (symbols nodes mint): cases on those are
    /// not worth a split (an empty selection against a full one), the merged facts say it.
    pub(crate) fn on_symbols(&self, minted: &dyn Fn(&str) -> bool) -> bool {
        match self {
            Condition::Compare(a, _, b) => [a, b].iter().any(|o| match o {
                Operand::Dim(d) => d.symbols().iter().any(|s| minted(&s.to_string())),
                Operand::Named(_) => false,
            }),
            Condition::Flag { .. } => false,
            Condition::All(parts) | Condition::Any(parts) => parts.iter().any(|p| p.on_symbols(minted)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_and_negation() {
        let scope = SymbolScope::default();
        let n = TDim::Sym(scope.sym("n"));
        let c = Condition::Compare(Operand::Dim(n.clone()), Cmp::Eq, Operand::Dim(TDim::Val(1)));
        assert_eq!(c.text(), "n == 1");
        assert_eq!(c.negated().text(), "n != 1");
        assert_eq!(c.negated().negated(), c);
        let sr = Condition::Compare(Operand::Named("sr".into()), Cmp::Ge, Operand::Dim(TDim::Val(16000)));
        assert_eq!(sr.negated().text(), "sr < 16000");
        let flag = Condition::Flag { name: "keep".into(), negated: false };
        assert_eq!(flag.negated().text(), "not keep");
    }

    #[test]
    fn assumptions_decide() {
        let scope = SymbolScope::default();
        scope.add_assertion("n>=2").unwrap();
        let n = TDim::Sym(scope.sym("n"));
        let one = Operand::Dim(TDim::Val(1));
        let eq1 = Condition::Compare(Operand::Dim(n.clone()), Cmp::Eq, one.clone());
        assert_eq!(eq1.decided(&[]), Some(false));
        assert_eq!(eq1.negated().decided(&[]), Some(true));
        let gt1 = Condition::Compare(Operand::Dim(n.clone()), Cmp::Gt, one.clone());
        assert_eq!(gt1.decided(&[]), Some(true));
        let eq2 = Condition::Compare(Operand::Dim(n.clone()), Cmp::Eq, Operand::Dim(TDim::Val(2)));
        assert_eq!(eq2.decided(&[]), None);
        assert_eq!(eq2.decided(&[(scope.sym("n"), 2)]), Some(true));
        assert_eq!(eq2.decided(&[(scope.sym("n"), 3)]), Some(false));
        let named = Condition::Compare(Operand::Named("sr".into()), Cmp::Eq, one);
        assert_eq!(named.decided(&[]), None);
    }
}
