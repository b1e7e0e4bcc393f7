//! Conditional shapes: where an `If` the analysis cannot decide returns different ranks or dims from
//! its two branches, the model is analysed once per outcome, each `If` on that condition inlining the
//! branch it selects, so that every value after it is known exactly under each condition.
//!
//! The merged analysis ([`super::analyse`]) stays the one that runs the model: its facts hold for
//! every outcome (a dim the branches disagree on is a fresh symbol, a rank they disagree on leaves
//! the value unknown). The cases add, per value, what it is under each condition: a silero-vad
//! export squeezes an axis only when it is 1 (`If(shape[0] == 1)`), and checks the sample rate
//! (`If(sr == 16000)`); each of the four outcomes is exactly known.
//!
//! Conditions are split one at a time in the order met, outcomes at most [`MAX_CASES`]; conditions on
//! sizes only a run knows (an empty selection against a full one) are not split. A condition on
//! dims is also an assumption of its case (`input_d0 == 1`, `input_d0 >= 2`), so that tract
//! simplifies with it; an `--assume` that decides a condition leaves one outcome.

use super::condition::{Condition, Met, Outcome};
use super::{Analysis, Binding, Options, Source};
use std::collections::VecDeque;
use std::sync::Mutex;
use tract_onnx::prelude::*;

/// The most outcomes an analysis splits into.
pub const MAX_CASES: usize = 8;

/// One outcome: the conditions that select it and the analysis of the model under them.
#[derive(Debug)]
pub struct Case {
    /// The conditions, as text (`sr == 16000`, `input_d0 != 1`), all holding in this case.
    pub when: Vec<String>,
    /// The model analysed with each `If` on these conditions inlining the branch they select.
    pub analysis: Analysis,
}

/// What one analysis takes for the conditions it cannot decide, and which it met.
#[derive(Debug, Default)]
pub(crate) struct Choices {
    /// Conditions taken to hold, by text.
    holds: Vec<String>,
    /// Symbols the assumptions set equal to a number.
    fixed: Vec<(Symbol, i64)>,
    /// Undecided conditions met whose branches give different facts, in the order met.
    met: Mutex<Vec<Met>>,
}

impl Choices {
    /// Choices for one analysis: `holds` taken to hold, `fixed` symbols set by assumptions.
    pub(super) fn new(holds: Vec<String>, fixed: Vec<(Symbol, i64)>) -> Choices {
        Choices { holds, fixed, met: Mutex::default() }
    }

    /// Whether `condition` holds: decided by the assumptions, else as this case takes it.
    /// (An `And` or `Or` is decided as a whole, else by its parts.)
    pub(super) fn decide(&self, condition: &Condition) -> Option<bool> {
        let whole = |c: &Condition| -> Option<bool> {
            if let Some(known) = c.decided(&self.fixed) {
                return Some(known);
            }
            if self.holds.contains(&c.text()) {
                return Some(true);
            }
            self.holds.contains(&c.negated().text()).then_some(false)
        };
        whole(condition).or_else(|| condition.decide_by(&whole))
    }

    /// How many conditions were met so far (where [`Choices::meet`] puts one met later, so that an
    /// `If` comes before the ones inside its branches).
    pub(super) fn mark(&self) -> usize {
        self.met.lock().unwrap_or_else(|e| e.into_inner()).len()
    }

    /// Notes an undecided condition whose branches differ, at `mark`.
    pub(super) fn meet(&self, mark: usize, condition: &Condition) {
        let mut met = self.met.lock().unwrap_or_else(|e| e.into_inner());
        let new = condition.met();
        if !met.iter().any(|m| m.has(&new.holds)) {
            let at = mark.min(met.len());
            met.insert(at, new);
        }
    }

    /// The conditions met, in order.
    pub(super) fn met(&self) -> Vec<Met> {
        self.met.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }
}

/// The outcomes of the conditions `base` (the merged analysis) met undecided: none when it met none.
pub(crate) fn analyse_cases(
    source: &Source,
    binding: &Binding,
    assumptions: &[String],
    options: Options,
    base: &Analysis,
) -> anyhow::Result<Vec<Case>> {
    let Some(first) = base.undecided.first() else { return Ok(vec![]) };
    let mut queue: VecDeque<Vec<Outcome>> = VecDeque::from([vec![first.holds.clone()], vec![first.fails.clone()]]);
    let mut cases = vec![];
    while let Some(when) = queue.pop_front() {
        // The outcomes add to the merged analysis, which stands alone when one of them cannot be
        // analysed at all (a node refusing its inputs in that outcome): no partial set of outcomes.
        let Ok(analysis) = super::analyse_choosing(source, binding, assumptions, options, &when) else {
            return Ok(vec![]);
        };
        let next = analysis.undecided.iter().find(|m| !when.iter().any(|w| m.has(w))).cloned();
        match next {
            // Splitting this outcome in two adds one.
            Some(m) if cases.len() + queue.len() + 2 <= MAX_CASES => {
                let mut yes = when.clone();
                yes.push(m.holds);
                let mut no = when;
                no.push(m.fails);
                queue.push_back(yes);
                queue.push_back(no);
            }
            _ => cases.push(Case { when: when.into_iter().map(|o| o.text).collect(), analysis }),
        }
    }
    Ok(cases)
}
