//! What the plain recurrent ops ([`super::lstm::LstmOp`], [`super::gru::GruOp`]) share: the layout
//! of `X`, `Y` and the states (`layout` 0: sequence first, 1: batch first), their output facts, the
//! sizes of one evaluation checked against every input, and the outputs asked for.

use crate::node::Label;
use tract_onnx::pb::{AttributeProto, NodeProto};
use tract_onnx::prelude::*;

/// `reverse` and `batch_first` of a recurrent node of the plain form: `hidden_size`, `direction`
/// (forward, reverse or bidirectional), `layout` (0 or 1) and `activations` equal to `default` for
/// every direction; any other attribute must be one `own` takes (returns true for). `None` when the
/// node is not of that form.
pub(crate) fn plain_attributes(
    node: &NodeProto,
    default: &[&[u8]],
    mut own: impl FnMut(&AttributeProto) -> bool,
) -> Option<(bool, bool)> {
    let (mut reverse, mut batch_first) = (false, false);
    for a in &node.attribute {
        match a.name.as_str() {
            "hidden_size" => {}
            "direction" => match a.s.as_slice() {
                b"forward" | b"bidirectional" => {}
                b"reverse" => reverse = true,
                _ => return None,
            },
            "layout" if a.i == 0 || a.i == 1 => batch_first = a.i == 1,
            "activations" => {
                let differs = |c: &[Vec<u8>]| c.iter().map(Vec::as_slice).ne(default.iter().copied());
                if a.strings.is_empty() || a.strings.chunks(default.len()).any(differs) {
                    return None;
                }
            }
            // clip, activation_alpha/beta, anything unknown: tract's.
            _ if own(a) => {}
            _ => return None,
        }
    }
    Some((reverse, batch_first))
}

/// The outputs a node of at most `count` outputs asks for (by position), `None` if it has more.
pub(crate) fn asked_outputs(node: &NodeProto, count: usize) -> Option<Vec<usize>> {
    if node.output.len() > count {
        return None;
    }
    Some((0..count).filter(|&i| node.output.get(i).is_some_and(|n| !n.is_empty())).collect())
}

/// `(seq, batch)` axes of `X` and of `Y`'s first two.
fn seq_batch(batch_first: bool) -> (usize, usize) {
    if batch_first {
        (1, 0)
    } else {
        (0, 1)
    }
}

/// The facts of the outputs asked for (`outputs`, by position: `Y`, then the final states, each
/// `[dirs, batch, hidden]` or batch first), for the op `op` (`LSTM`, `GRU`) over float32.
pub(crate) fn output_facts(
    label: &Label,
    op: &str,
    batch_first: bool,
    inputs: &[&TypedFact],
    outputs: &[usize],
) -> TractResult<TVec<TypedFact>> {
    let (x, w, r) = (inputs[0], inputs[1], inputs[2]);
    if x.rank() != 3 || w.rank() != 3 || r.rank() != 3 {
        let msg = format!("X, W and R must have rank 3, got {}, {} and {}", x.rank(), w.rank(), r.rank());
        return Err(label.err(msg));
    }
    if inputs.iter().any(|f| f.datum_type != DatumType::F32) {
        return Err(label.err(format!("the plain {op} kernel runs float32 only")));
    }
    let (s, b) = seq_batch(batch_first);
    let (seq, batch, dirs, hidden) = (&x.shape[s], &x.shape[b], &w.shape[0], &r.shape[2]);
    let (y, state): (TVec<TDim>, TVec<TDim>) = if batch_first {
        (
            tvec![batch.clone(), seq.clone(), dirs.clone(), hidden.clone()],
            tvec![batch.clone(), dirs.clone(), hidden.clone()],
        )
    } else {
        (
            tvec![seq.clone(), dirs.clone(), batch.clone(), hidden.clone()],
            tvec![dirs.clone(), batch.clone(), hidden.clone()],
        )
    };
    Ok(outputs.iter().map(|&i| if i == 0 { f32::fact(&*y) } else { f32::fact(&*state) }).collect())
}

/// The sizes of one evaluation, and the layout its tensors are in.
pub(crate) struct Dims {
    pub seq: usize,
    pub batch: usize,
    pub input: usize,
    pub dirs: usize,
    pub hidden: usize,
    pub batch_first: bool,
}

impl Dims {
    /// The sizes `X`, `W` and `R` give, checked against each other and against `B` (at `bias`) and
    /// the initial states (each a name and its slot): `gates` rows of `W` and `R` per hidden unit,
    /// one direction when `reverse`.
    pub(crate) fn of(
        label: &Label,
        inputs: &[TValue],
        batch_first: bool,
        reverse: bool,
        gates: usize,
        bias: Option<usize>,
        states: &[(&str, Option<usize>)],
    ) -> TractResult<Dims> {
        let (x, w, r) = (inputs[0].shape(), inputs[1].shape(), inputs[2].shape());
        if x.len() != 3 || w.len() != 3 || r.len() != 3 {
            return Err(label.err(format!(
                "X, W and R must have rank 3, got {}, {} and {}",
                x.len(),
                w.len(),
                r.len()
            )));
        }
        let (s, b) = seq_batch(batch_first);
        let d = Dims { seq: x[s], batch: x[b], input: x[2], dirs: w[0], hidden: r[2], batch_first };
        let want_dirs = if reverse { 1 } else { d.dirs };
        if d.dirs == 0 || d.dirs > 2 || want_dirs != d.dirs {
            return Err(label.err(format!("W has {} directions", d.dirs)));
        }
        let rows = d.hidden.checked_mul(gates).ok_or_else(|| label.err("hidden_size overflows"))?;
        if w != [d.dirs, rows, d.input] {
            return Err(label.err(format!("W is {w:?}, expected [{}, {rows}, {}]", d.dirs, d.input)));
        }
        if r != [d.dirs, rows, d.hidden] {
            return Err(label.err(format!("R is {r:?}, expected [{}, {rows}, {}]", d.dirs, d.hidden)));
        }
        if let Some(i) = bias {
            let want = [d.dirs, rows * 2];
            if inputs[i].shape() != want {
                return Err(label.err(format!("B is {:?}, expected {want:?}", inputs[i].shape())));
            }
        }
        let state = d.state_shape();
        for &(name, slot) in states {
            if let Some(i) = slot {
                if inputs[i].shape() != state {
                    return Err(label.err(format!("{name} is {:?}, expected {state:?}", inputs[i].shape())));
                }
            }
        }
        Ok(d)
    }

    /// Where `X[t, b]` starts.
    pub(crate) fn x_at(&self, t: usize, b: usize) -> usize {
        if self.batch_first {
            (b * self.seq + t) * self.input
        } else {
            (t * self.batch + b) * self.input
        }
    }

    /// Where `Y[t, dir, b]` starts.
    pub(crate) fn y_at(&self, t: usize, dir: usize, b: usize) -> usize {
        if self.batch_first {
            ((b * self.seq + t) * self.dirs + dir) * self.hidden
        } else {
            ((t * self.dirs + dir) * self.batch + b) * self.hidden
        }
    }

    /// Where a state's `[dir, b]` starts.
    pub(crate) fn state_at(&self, dir: usize, b: usize) -> usize {
        if self.batch_first {
            (b * self.dirs + dir) * self.hidden
        } else {
            (dir * self.batch + b) * self.hidden
        }
    }

    /// `Y`'s shape.
    pub(crate) fn y_shape(&self) -> [usize; 4] {
        let (s, b, d, h) = (self.seq, self.batch, self.dirs, self.hidden);
        if self.batch_first {
            [b, s, d, h]
        } else {
            [s, d, b, h]
        }
    }

    /// A state's shape.
    pub(crate) fn state_shape(&self) -> [usize; 3] {
        let (b, d, h) = (self.batch, self.dirs, self.hidden);
        if self.batch_first {
            [b, d, h]
        } else {
            [d, b, h]
        }
    }

    /// A zeroed `Y`, its size checked against what may be allocated.
    pub(crate) fn new_y(&self, label: &Label) -> TractResult<Vec<f32>> {
        let len = self.y_shape().iter().try_fold(1usize, |a, &n| a.checked_mul(n));
        let len = len.ok_or_else(|| label.err("Y's size overflows"))?;
        crate::kernel::check_allocation(len as u64, 4).map_err(|e| label.err(e))?;
        Ok(vec![0f32; len])
    }

    /// The outputs asked for (`outputs`, by position) out of `all` (`Y`, then the final states).
    pub(crate) fn outputs(&self, label: &Label, outputs: &[usize], all: Vec<Vec<f32>>) -> TractResult<TVec<TValue>> {
        let mut all: Vec<Option<Vec<f32>>> = all.into_iter().map(Some).collect();
        let (y_shape, state_shape) = (self.y_shape(), self.state_shape());
        outputs
            .iter()
            .map(|&i| {
                let data =
                    all.get_mut(i).and_then(Option::take).ok_or_else(|| label.err("an output asked for twice"))?;
                let shape: &[usize] = if i == 0 { &y_shape } else { &state_shape };
                Ok(tract_ndarray::ArrayD::from_shape_vec(shape, data)?.into_tensor().into_tvalue())
            })
            .collect()
    }
}
