//! [`SmallMatMul`]: a float32 two-input `EinSum` of concrete small shapes as calls of our unpacked
//! matrix-product kernel ([`crate::kernel::matmul_f32`]), a following bias inside (one value per
//! output column, per row, or any constant broadcast to the output whose columns are contiguous) and
//! a following clamp (`Relu`, `Clip`).
//!
//! The einsum's axes take roles: the one summed over (in both inputs, not the output) is the depth
//! `k`; one axis of the first input and the output is the rows `m`, one of the second input and the
//! output the columns `n`; the axes of both inputs and the output are batch axes (either input may
//! broadcast one with a length of 1). Further row, column or depth axes become loops around the
//! kernel, as batch axes are, the depth loops innermost and adding into the same output block. Axes
//! of length 1 everywhere play no part. The kernel reads the second input in tiles of 16 contiguous
//! columns: a constant one is laid out once, here, as the kernel's panels (each tile one sequential
//! run over the depth); another is read in place when its column axis is its last, else gathered
//! into a scratch block per call. An output whose column axis is not its last is computed in a
//! scratch block and scattered.
//!
//! The offsets of every kernel call are worked out once, when the op is made for its shapes (the
//! small-matmul pass, `model::small_matmul`, does that before code generation).

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use tract_onnx::prelude::*;
use tract_onnx::tract_core::axes::{AxesMapping, Axis};
use tract_onnx::tract_core::internal::*;

use crate::kernel::{matmul_f32, spread, Gemm, Init, COLS, ROWS};

/// Kernel calls the op makes at most; past that a model's batch loops are better left to tract.
const MAX_CALLS: usize = 4096;

/// Floats of the first operand one call reads at most on a CPU with AVX-512 (2 MB; see
/// [`max_block`]): the kernel reads the whole first operand (`m·k`) once per block of columns (a
/// few blocks for the maps it takes), so the cache must hold it. With it, a 1x1 convolution's
/// weights up to 724 by 724 channels stay ours (the map streams through once, in tiles); beyond,
/// the transformer products of several megabytes that tract blocks for its caches stay tract's.
/// With the AVX-512 kernel, `k1 960-320 7 b8` (307,200 floats) and `k1 320-1280 7 b8` (409,600)
/// measured 0.71 and 0.56 of tract's time alone (`benches/conv_sweep.py --set k1`, one thread), and
/// MobileNetV2's 320-to-1280 layer at batch 8 4.02 ms against tract's 4.13 in the model.
#[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
const MAX_BLOCK: usize = 1 << 19;

/// [`MAX_BLOCK`] without AVX-512 (1 MB): on the AVX2 kernel, `k1 960-320 7 b8` measured 0.90 of
/// tract's time alone but 1.26 in MobileNetV2 at batch 8 (3.81 ms against 3.02).
const MAX_BLOCK_AVX2: usize = 1 << 18;

/// The most floats of the first operand one call reads, for the kernel this CPU runs.
fn max_block() -> usize {
    #[cfg(target_arch = "x86_64")]
    if crate::kernel::Isa::here() == Some(crate::kernel::Isa::Avx512) {
        return MAX_BLOCK;
    }
    MAX_BLOCK_AVX2
}

/// A float32 matrix product in calls of our kernel (see the module docs).
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct SmallMatMul {
    /// The shape of the first input, and of the second unless it is constant.
    inputs: TVec<TVec<usize>>,
    /// The output's shape.
    output: TVec<usize>,
    /// Rows, depth and columns of each call.
    m: usize,
    /// See `m`.
    k: usize,
    /// See `m`.
    n: usize,
    /// Strides of the first input along the rows and the depth.
    a: [usize; 2],
    /// Strides of the second input along the depth and the columns.
    b: [usize; 2],
    /// Strides of the output along the rows and the columns.
    c: [usize; 2],
    /// The offsets of every call, in order.
    calls: Vec<Call>,
    /// The second input when it is constant, as the kernel's panels (see `pack`).
    panels: Option<Arc<Tensor>>,
    /// A constant added to the product, if the op took one in: of the output's rank, each dim 1
    /// (broadcast) or the output's.
    bias: Option<Arc<Tensor>>,
    /// The bias' strides along the rows and the columns (the latter 0 or 1).
    bias_steps: [usize; 2],
    /// The bits of the bounds `[low, high]` the output is clamped to, if any (a `Relu` or `Clip`
    /// the op took in; NaN stays NaN), as each call ending a sum stores it.
    clamp: Option<[u32; 2]>,
}

/// One call of the kernel: where its blocks start, and whether it starts or ends an output block's
/// sum over the depth loops.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
struct Call {
    a: usize,
    b: usize,
    c: usize,
    bias: usize,
    first: bool,
    last: bool,
}

/// One axis of the einsum: its position and length in each input and the output, when it has one.
#[derive(Debug, Clone, Copy)]
struct Role {
    a: Option<usize>,
    b: Option<usize>,
    c: Option<usize>,
    len: usize,
}

impl SmallMatMul {
    /// The op computing `axes` on inputs of `shapes` (the first input's axes are `axes`' input
    /// `first`, the second's the other one: `first` is 1 to swap them), the second input `constant`
    /// when given, with `bias` added when given (a constant of the output's rank, each dim 1 or the
    /// output's): `None` when the einsum is not a matrix product the kernel computes, the bias is
    /// not one it can start from, or there are too many calls (see the module docs).
    pub(crate) fn plan(
        axes: &AxesMapping,
        first: usize,
        shapes: [&[usize]; 2],
        output: &[usize],
        constant: Option<&Tensor>,
        bias: Option<Arc<Tensor>>,
    ) -> Option<SmallMatMul> {
        if axes.input_count() != 2 || axes.output_count() != 1 || first > 1 {
            return None;
        }
        let slots = [InOut::In(first), InOut::In(1 - first), InOut::Out(0)];
        let dims = [shapes[0], shapes[1], output];
        let mut roles = Vec::new();
        for axis in axes.iter_all_axes() {
            let role = role(axis, slots, dims)?;
            if role.len == 0 {
                return None; // tract's own product handles empty tensors
            }
            if role.len != 1 {
                roles.push(role);
            }
        }
        let pick = |want: fn(&Role) -> bool, prefer_last: bool| -> Option<Role> {
            let last_of_c = output.len().checked_sub(1);
            let candidates = roles.iter().filter(|r| want(r));
            if prefer_last {
                if let Some(r) = candidates.clone().find(|r| r.c.is_some() && r.c == last_of_c) {
                    return Some(*r);
                }
            }
            candidates.max_by_key(|r| r.len).copied()
        };
        let m = pick(|r| r.a.is_some() && r.b.is_none() && r.c.is_some(), false);
        let n = pick(|r| r.a.is_none() && r.b.is_some() && r.c.is_some(), true);
        let k = pick(|r| r.a.is_some() && r.b.is_some() && r.c.is_none(), false);
        let chosen = |r: &Role| [m, n, k].iter().flatten().any(|x| x.a == r.a && x.b == r.b && x.c == r.c);
        // Loops: batch, row and column axes outermost in the output's order, the depth axes inside.
        let mut loops: Vec<Role> = roles.iter().filter(|r| r.c.is_some() && !chosen(r)).copied().collect();
        loops.sort_by_key(|r| r.c);
        loops.extend(roles.iter().filter(|r| r.c.is_none() && !chosen(r)));

        // Strides by the original axes; 0 along an axis of length 1 (broadcast or unit).
        let [a_strides, b_strides, c_strides] = dims.map(strides);
        let bias_strides = match &bias {
            Some(t) if t.rank() == output.len() && t.shape().iter().zip(output).all(|(&d, &o)| d == 1 || d == o) => {
                strides(t.shape())
            }
            Some(_) => return None,
            None => vec![0; output.len()],
        };
        let bias_steps =
            [m.and_then(|r| r.c).map_or(0, |p| bias_strides[p]), n.and_then(|r| r.c).map_or(0, |p| bias_strides[p])];
        if bias_steps[1] > 1 {
            return None; // the kernel starts rows of columns from a run or one value
        }
        let stride = |role: Option<Role>, pick: fn(&Role) -> Option<usize>, strides: &[usize]| {
            role.and_then(|r| pick(&r)).map_or(0, |p| strides[p])
        };
        let mut op = SmallMatMul {
            inputs: if constant.is_some() {
                tvec![shapes[0].into()]
            } else {
                tvec![shapes[0].into(), shapes[1].into()]
            },
            output: output.into(),
            m: m.map_or(1, |r| r.len),
            k: k.map_or(1, |r| r.len),
            n: n.map_or(1, |r| r.len),
            a: [stride(m, |r| r.a, &a_strides), stride(k, |r| r.a, &a_strides)],
            b: [stride(k, |r| r.b, &b_strides), if n.is_some() { stride(n, |r| r.b, &b_strides) } else { 1 }],
            c: [stride(m, |r| r.c, &c_strides), if n.is_some() { stride(n, |r| r.c, &c_strides) } else { 1 }],
            calls: vec![],
            panels: None,
            bias,
            bias_steps,
            clamp: None,
        };
        // Column axes that continue the chosen one in the second input, the output and the bias
        // (a 1x1 convolution's rows of pixels, `H` then `W`) are merged into its columns, so that
        // one call takes a whole map.
        if n.is_some() {
            while let Some(i) = loops.iter().position(|r| match (r.a, r.b, r.c) {
                (None, Some(pb), Some(pc)) => {
                    b_strides[pb] == op.n.saturating_mul(op.b[1])
                        && c_strides[pc] == op.n.saturating_mul(op.c[1])
                        && bias_strides[pc] == op.n.saturating_mul(op.bias_steps[1])
                }
                _ => false,
            }) {
                op.n = op.n.checked_mul(loops.remove(i).len)?;
            }
        }
        if op.m.saturating_mul(op.k) > max_block() {
            return None;
        }
        let along = |r: &Role| {
            [(r.a, &a_strides), (r.b, &b_strides), (r.c, &c_strides), (r.c, &bias_strides)]
                .map(|(p, s)| p.map_or(0, |p| s[p]))
        };
        let sums = loops.iter().filter(|r| r.c.is_none()).count();
        let total = loops.iter().try_fold(1usize, |t, r| t.checked_mul(r.len))?;
        if total > MAX_CALLS {
            return None;
        }
        let inner: usize = loops[loops.len() - sums..].iter().map(|r| r.len).product();
        let mut index = vec![0usize; loops.len()];
        for call in 0..total {
            let mut offsets = [0usize; 4];
            for (r, &i) in loops.iter().zip(&index) {
                for (o, s) in offsets.iter_mut().zip(along(r)) {
                    *o = o.checked_add(i.checked_mul(s)?)?;
                }
            }
            let [a, b, c, bias] = offsets;
            op.calls.push(Call { a, b, c, bias, first: call % inner == 0, last: call % inner == inner - 1 });
            for (i, r) in index.iter_mut().zip(&loops).rev() {
                *i += 1;
                if *i < r.len {
                    break;
                }
                *i = 0;
            }
        }
        op.check(constant.map(Tensor::len)).ok()?;
        if let Some(b) = constant {
            op.pack(b).ok()?;
        }
        Some(op)
    }

    /// The calls the op makes, and the rows, depth and columns of each.
    pub(crate) fn calls(&self) -> [usize; 4] {
        [self.calls.len(), self.m, self.k, self.n]
    }

    /// The op with its output clamped to `[low, high]` (NaN kept).
    pub(crate) fn with_clamp(mut self, low: f32, high: f32) -> SmallMatMul {
        self.clamp = Some([low.to_bits(), high.to_bits()]);
        self
    }

    /// That every call stays inside its operands (the shapes come from a model file), the second
    /// operand `constant` elements long when it is constant.
    fn check(&self, constant: Option<usize>) -> TractResult<()> {
        let size = |shape: &[usize]| shape.iter().try_fold(1usize, |s, &d| s.checked_mul(d));
        let b_len = constant.or_else(|| size(&self.inputs[1]));
        let lens = [size(&self.inputs[0]), b_len, size(&self.output)];
        // The farthest element each block reaches from its start: two axes of each operand.
        let reach = |[(n1, s1), (n2, s2)]: [(usize, usize); 2]| {
            (n1.checked_sub(1)?.checked_mul(s1)?).checked_add(n2.checked_sub(1)?.checked_mul(s2)?)
        };
        let (m, k, n) = (self.m, self.k, self.n);
        let reaches = [
            reach([(m, self.a[0]), (k, self.a[1])]),
            reach([(k, self.b[0]), (n, self.b[1])]),
            reach([(m, self.c[0]), (n, self.c[1])]),
        ];
        let bias_reach = reach([(m, self.bias_steps[0]), (n, self.bias_steps[1])]);
        for call in &self.calls {
            for ((start, reach), len) in [call.a, call.b, call.c].into_iter().zip(reaches).zip(lens) {
                let end = reach.and_then(|r| r.checked_add(start));
                ensure!(matches!((end, len), (Some(e), Some(l)) if e < l), "matrix product call outside its operands");
            }
            if let Some(bias) = &self.bias {
                let end = bias_reach.and_then(|r| r.checked_add(call.bias));
                ensure!(end.is_some_and(|e| e < bias.len()), "matrix product bias outside its values");
            }
        }
        Ok(())
    }

    /// Lays out the blocks the calls read of the constant second operand `b` as the kernel's panels
    /// (each tile of 16 columns one run of `k·16` floats, the last tile padded with zeros), each
    /// block once, and points the calls at them; an error when the panels would take more than
    /// twice the constant's memory.
    fn pack(&mut self, b: &Tensor) -> TractResult<()> {
        let b = b.try_as_plain_ram()?;
        let b = b.as_slice::<f32>()?;
        let (k, n) = (self.k, self.n);
        let block = n.div_ceil(COLS).checked_mul(k).and_then(|t| t.checked_mul(COLS)).context("panels overflow")?;
        let blocks = self.calls.iter().map(|c| c.b).collect::<HashSet<_>>().len();
        // Padding a few columns to 16 may multiply a constant's size by up to 16: past twice its
        // size (and a few pages), the product is left to tract rather than the memory spent.
        let size = block.checked_mul(blocks).context("panels overflow")?;
        ensure!(
            size <= b.len().saturating_mul(2).saturating_add(1 << 14),
            "panels of {size} floats for {} values",
            b.len()
        );
        let mut packed: Vec<f32> = Vec::with_capacity(size);
        let mut starts: HashMap<usize, usize> = HashMap::new();
        for call in &mut self.calls {
            if let Some(&at) = starts.get(&call.b) {
                call.b = at;
                continue;
            }
            let at = packed.len();
            packed.resize(at.checked_add(block).context("panels overflow")?, 0.0);
            for p in 0..k {
                for j in 0..n {
                    packed[at + j / COLS * k * COLS + p * COLS + j % COLS] = b[call.b + p * self.b[0] + j * self.b[1]];
                }
            }
            starts.insert(call.b, at);
            call.b = at;
        }
        self.panels = Some(Arc::new(tensor1(&packed)));
        Ok(())
    }

    /// The kernel's geometry of every call: `B` in panels when constant, rows of the input when its
    /// columns are contiguous, else rows of a gathered block; `C` in the output when its columns are
    /// contiguous, else in a block of its own.
    fn gemm(&self) -> Gemm {
        let (m, k, n) = (self.m, self.k, self.n);
        let (b_step, b_tile) = match (&self.panels, self.b[1] == 1) {
            (Some(_), _) => (COLS, k * COLS),
            (None, true) => (self.b[0], COLS),
            (None, false) => (n, COLS),
        };
        let c_row = if self.c[1] == 1 { self.c[0] } else { n };
        Gemm { m, k, n, a_row: self.a[0], a_col: self.a[1], b_step, b_tile, c_row }
    }
}

/// The operands of one evaluation: the first input, the second (or its panels), the bias.
struct Operands<'a> {
    a: &'a [f32],
    b: &'a [f32],
    bias: Option<&'a [f32]>,
}

/// Multiply-adds one thread is given at least before a product is split over the plan's threads
/// (`--threads`): a few µs of one core's work. With the pool's workers kept awake while a plan runs
/// (`threads::keep_awake`), a split costs about a microsecond, and `benches/thread_split.py` (2
/// cores) measured 2 threads at 0.82 of one thread's time from 262,144 multiply-adds, 0.62 at
/// 1 M, 0.51-0.57 from 7 M; at 131,072, 1.26 (docs/performance.md, "Threads in our kernels").
const MACS_PER_THREAD: usize = 1 << 17;

impl SmallMatMul {
    /// Where the sums of `call` start, for its rows from `r0` on.
    fn init<'a>(&self, call: &Call, r0: usize, bias: Option<&'a [f32]>) -> Init<'a> {
        match (call.first, bias) {
            (false, _) => Init::Accumulate,
            (true, Some(bias)) => {
                let [row, col] = self.bias_steps;
                Init::Bias { values: &bias[call.bias + r0 * row..], row, col }
            }
            (true, None) => Init::Zero,
        }
    }

    /// The clamp of `call`'s values: the op's, on the call that ends a sum.
    fn clamp(&self, call: &Call) -> Option<[f32; 2]> {
        self.clamp.filter(|_| call.last).map(|bounds| bounds.map(f32::from_bits))
    }

    /// Rows `r0..r1` of `call` into `c`, which starts at the call's row `r0` (its columns contiguous,
    /// the second operand read where it is: not gathered).
    fn call_rows(&self, call: &Call, [r0, r1]: [usize; 2], ops: &Operands<'_>, c: &mut [f32]) {
        let gemm = Gemm { m: r1 - r0, ..self.gemm() };
        let (a, b) = (&ops.a[call.a + r0 * self.a[0]..], &ops.b[call.b..]);
        matmul_f32(&gemm, a, b, c, self.init(call, r0, ops.bias), self.clamp(call));
    }

    /// Every call in turn on the calling thread.
    fn calls_in_turn(&self, ops: &Operands<'_>, c: &mut [f32]) {
        let gemm = self.gemm();
        let (k, n) = (self.k, self.n);
        let gather = self.panels.is_none() && self.b[1] != 1;
        let scatter = self.c[1] != 1;
        let mut b_block = vec![0f32; if gather { k * n } else { 0 }];
        let mut c_block = vec![0f32; if scatter { self.m * n } else { 0 }];
        for call in &self.calls {
            let init = self.init(call, 0, ops.bias);
            let b_at: &[f32] = if gather {
                for (p, row) in b_block.chunks_exact_mut(n).enumerate() {
                    for (j, x) in row.iter_mut().enumerate() {
                        *x = ops.b[call.b + p * self.b[0] + j * self.b[1]];
                    }
                }
                &b_block
            } else {
                &ops.b[call.b..]
            };
            if scatter {
                matmul_f32(&gemm, &ops.a[call.a..], b_at, &mut c_block, init, self.clamp(call));
                if call.last {
                    for (i, row) in c_block.chunks_exact(n).enumerate() {
                        for (j, x) in row.iter().enumerate() {
                            c[call.c + i * self.c[0] + j * self.c[1]] = *x;
                        }
                    }
                }
            } else {
                matmul_f32(&gemm, &ops.a[call.a..], b_at, &mut c[call.c..], init, self.clamp(call));
            }
        }
    }

    /// The calls split over the threads of `pool` when the work is large enough
    /// ([`MACS_PER_THREAD`]) and the output's columns are contiguous and the second operand is read
    /// in place: runs of whole calls per thread where the calls write apart (each its own output
    /// block, in increasing order), else each output block's rows in tiles of [`ROWS`] per thread.
    /// Every output value is summed by the same kernel steps in the same order as on one thread,
    /// so the result is the same, bit for bit. `false` when it leaves the work to the caller.
    fn split(&self, ops: &Operands<'_>, c: &mut [f32], pool: Option<&rayon::ThreadPool>) -> bool {
        let gathered = self.panels.is_none() && self.b[1] != 1;
        let Some(pool) = pool.filter(|_| self.c[1] == 1 && !gathered) else {
            return false;
        };
        let (m, k, n) = (self.m, self.k, self.n);
        let per_call = m * k * n;
        let macs = per_call.saturating_mul(self.calls.len());
        if crate::kernel::threads_for(Some(pool), macs, MACS_PER_THREAD, usize::MAX) < 2 {
            return false;
        }
        let span = (m - 1) * self.c[0] + n;
        let apart =
            self.calls.iter().all(|c| c.first && c.last) && self.calls.windows(2).all(|w| w[0].c + span <= w[1].c);
        let calls = self.calls.len();
        let threads = crate::kernel::threads_for(Some(pool), macs, MACS_PER_THREAD, calls);
        if apart && threads > 1 {
            // Whole calls: thread `t` takes calls `j0..j1` and the output from the first one's block
            // to the next thread's first block.
            let mut rest = &mut c[self.calls[0].c..];
            let mut at = self.calls[0].c;
            spread(
                pool,
                (0..threads).map(|t| {
                    let (j0, j1) = (calls * t / threads, calls * (t + 1) / threads);
                    let end = if j1 == calls { at + rest.len() } else { self.calls[j1].c };
                    let (mine, others) = std::mem::take(&mut rest).split_at_mut(end - at);
                    let base = at;
                    (rest, at) = (others, end);
                    move || {
                        for call in &self.calls[j0..j1] {
                            self.call_rows(call, [0, m], ops, &mut mine[call.c - base..]);
                        }
                    }
                }),
            );
            return true;
        }
        // Rows: one output block (the calls from a first to a last) at a time, its rows split.
        let tiles = m.div_ceil(ROWS);
        let mut start = 0;
        while start < calls {
            let end = start + self.calls[start..].iter().position(|c| c.last).map_or(calls - start, |p| p + 1);
            let group = &self.calls[start..end];
            let threads =
                crate::kernel::threads_for(Some(pool), per_call.saturating_mul(group.len()), MACS_PER_THREAD, tiles);
            let block = &mut c[group[0].c..][..span];
            if threads < 2 {
                for call in group {
                    self.call_rows(call, [0, m], ops, block);
                }
            } else {
                let mut rest = block;
                spread(
                    pool,
                    (0..threads).map(|t| {
                        let (r0, r1) = ((tiles * t / threads * ROWS).min(m), (tiles * (t + 1) / threads * ROWS).min(m));
                        let len = if r1 == m { rest.len() } else { (r1 - r0) * self.c[0] };
                        let (mine, others) = std::mem::take(&mut rest).split_at_mut(len);
                        rest = others;
                        move || {
                            for call in group {
                                self.call_rows(call, [r0, r1], ops, mine);
                            }
                        }
                    }),
                );
            }
            start = end;
        }
        true
    }
}

/// The role of `axis` in the product, or `None` if it has none (an axis repeated in one input,
/// summed over one input alone, of other lengths than 1 and one other, or broadcast in the output).
fn role(axis: &Axis, slots: [InOut; 3], dims: [&[usize]; 3]) -> Option<Role> {
    let mut at = [None; 3];
    let mut len = 1;
    for (i, slot) in slots.iter().enumerate() {
        let positions = match slot {
            InOut::In(s) => &axis.inputs[*s],
            InOut::Out(s) => &axis.outputs[*s],
        };
        match positions[..] {
            [] => {}
            [p] => {
                let d = *dims[i].get(p)?;
                if d != 1 {
                    if len != 1 && d != len {
                        return None;
                    }
                    len = d;
                }
                at[i] = Some(p);
            }
            _ => return None,
        }
    }
    let [a, b, c] = at;
    let role = Role { a, b, c, len };
    // An input may broadcast an axis (a length of 1), the output may not.
    let whole_in_output = c.is_none_or(|p| dims[2][p] == len);
    let useful = match (a.is_some(), b.is_some(), c.is_some()) {
        _ if len == 1 => true,
        (true, true, _) | (true, false, true) | (false, true, true) => whole_in_output,
        _ => false,
    };
    useful.then_some(role)
}

/// The row-major strides of `shape`: 0 along an axis of length 1 (it is never stepped along, or is
/// broadcast).
fn strides(shape: &[usize]) -> Vec<usize> {
    let mut s = vec![0; shape.len()];
    let mut step = 1usize;
    for axis in (0..shape.len()).rev() {
        s[axis] = if shape[axis] == 1 { 0 } else { step };
        step = step.saturating_mul(shape[axis]);
    }
    s
}

impl Op for SmallMatMul {
    fn name(&self) -> StaticName {
        "SmallMatMul".into()
    }

    fn info(&self) -> TractResult<Vec<String>> {
        Ok(vec![format!(
            "{} calls of m={} k={} n={}, bias: {}, constant second input: {}{}",
            self.calls.len(),
            self.m,
            self.k,
            self.n,
            self.bias.is_some(),
            self.panels.is_some(),
            self.clamp.map_or(String::new(), |[l, h]| format!(
                ", clamp: [{}, {}]",
                f32::from_bits(l),
                f32::from_bits(h)
            ))
        )])
    }

    op_as_typed_op!();
}

impl TypedOp for SmallMatMul {
    fn output_facts(&self, inputs: &[&TypedFact]) -> TractResult<TVec<TypedFact>> {
        ensure!(inputs.len() == self.inputs.len(), "SmallMatMul takes {} inputs", self.inputs.len());
        for (fact, shape) in inputs.iter().zip(&self.inputs) {
            ensure!(fact.datum_type == f32::datum_type(), "SmallMatMul multiplies float32 tensors");
            ensure!(
                fact.shape.as_concrete() == Some(&shape[..]),
                "SmallMatMul planned for {shape:?}, given {:?}",
                fact.shape
            );
        }
        Ok(tvec!(f32::fact(&*self.output)))
    }

    /// The multiply-adds of every call (the plan's work, for the default thread budget).
    fn cost(&self, _inputs: &[&TypedFact]) -> TractResult<TVec<(Cost, TDim)>> {
        let macs = self.calls.len().saturating_mul(self.m).saturating_mul(self.k).saturating_mul(self.n);
        Ok(tvec!((Cost::FMA(f32::datum_type()), macs.to_dim())))
    }

    as_op!();
}

impl EvalOp for SmallMatMul {
    op_out_of_plan!();

    fn eval(&self, ctx: &EvalContext, inputs: TVec<TValue>) -> TractResult<TVec<TValue>> {
        ensure!(inputs.len() == self.inputs.len(), "SmallMatMul takes {} inputs", self.inputs.len());
        for (t, shape) in inputs.iter().zip(&self.inputs) {
            ensure!(
                t.shape() == &shape[..],
                "SmallMatMul planned for an input of shape {shape:?}, given {:?}",
                t.shape()
            );
        }
        let a = inputs[0].try_as_plain_ram()?;
        let a = a.as_slice::<f32>()?;
        let b = match &self.panels {
            Some(b) => b.try_as_plain_ram()?,
            None => inputs[1].try_as_plain_ram()?,
        };
        let b = b.as_slice::<f32>()?;
        let bias = self.bias.as_ref().map(|t| t.try_as_plain_ram()).transpose()?;
        let bias = bias.as_ref().map(|t| t.as_slice::<f32>()).transpose()?;
        let mut c_tensor = Tensor::zero::<f32>(&self.output)?;
        let mut c_plain = c_tensor.try_as_plain_ram_mut()?;
        let c = c_plain.as_slice_mut::<f32>()?;
        let pool = crate::threads::pool(ctx);
        let operands = Operands { a, b, bias };
        if !self.split(&operands, c, pool.as_deref()) {
            self.calls_in_turn(&operands, c);
        }
        Ok(tvec!(c_tensor.into_tvalue()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The op for `expr`, with a bias of the output's shape when `bias` (zeros).
    fn plan(expr: &str, shapes: [&[usize]; 2], output: &[usize], bias: bool) -> Option<SmallMatMul> {
        let axes: AxesMapping = expr.parse().unwrap();
        let bias = bias.then(|| Arc::new(Tensor::zero::<f32>(output).unwrap()));
        SmallMatMul::plan(&axes, 0, shapes, output, None, bias)
    }

    /// Attention scores: rows and columns from the two inputs' sequence axes, the head size summed,
    /// one call per head; the second input's columns are 8 apart (gathered), the output's contiguous.
    #[test]
    fn attention_scores_are_one_call_per_head() {
        let op = plan("bhsd,bhtd->bhst", [&[1, 4, 7, 8], &[1, 4, 7, 8]], &[1, 4, 7, 7], false).unwrap();
        assert_eq!((op.m, op.k, op.n), (7, 8, 7));
        assert_eq!((op.a, op.b, op.c), ([8, 1], [1, 8], [7, 1]));
        let starts: Vec<[usize; 3]> = op.calls.iter().map(|c| [c.a, c.b, c.c]).collect();
        assert_eq!(starts, [[0, 0, 0], [56, 56, 49], [112, 112, 98], [168, 168, 147]]);
        assert!(op.calls.iter().all(|c| c.first && c.last));
    }

    /// Two depth axes: the calls over the outer one add into the same block, first to last.
    #[test]
    fn depth_loops_add_into_one_block() {
        let op = plan("cmk,ckn->mn", [&[3, 5, 4], &[3, 4, 6]], &[5, 6], true).unwrap();
        let flags: Vec<(usize, bool, bool)> = op.calls.iter().map(|c| (c.c, c.first, c.last)).collect();
        assert_eq!(flags, [(0, true, false), (0, false, false), (0, false, true)]);
    }

    /// What the kernel cannot compute, or should not, is left to tract: an axis summed over one
    /// input alone, a repeated axis, a bias whose values are not contiguous along the columns or
    /// not of the output's rank, too many calls, too large a block of the second input, sizes whose
    /// products overflow, empty axes.
    #[test]
    fn products_left_to_tract() {
        assert!(plan("mkx,kn->mn", [&[2, 3, 4], &[3, 5]], &[2, 5], false).is_none());
        assert!(plan("mk,kn->nm", [&[2, 3], &[3, 5]], &[5, 2], true).is_none());
        let axes: AxesMapping = "mk,kn->mn".parse().unwrap();
        let bias = Some(Arc::new(Tensor::zero::<f32>(&[5]).unwrap()));
        assert!(SmallMatMul::plan(&axes, 0, [&[2, 3], &[3, 5]], &[2, 5], None, bias).is_none());
        assert!(plan("bmk,bkn->bmn", [&[5000, 2, 3], &[5000, 3, 2]], &[5000, 2, 2], false).is_none());
        assert!(plan("mk,kn->mn", [&[1024, 1024], &[1024, 2]], &[1024, 2], false).is_none());
        let huge = usize::MAX / 3;
        assert!(plan("bmk,kn->bmn", [&[huge, 4, 4], &[4, 4]], &[huge, 4, 4], false).is_none());
        assert!(plan("mk,kn->mn", [&[0, 3], &[3, 5]], &[0, 5], false).is_none());
        let axes: AxesMapping = "ii,ij->j".parse().unwrap();
        assert!(SmallMatMul::plan(&axes, 0, [&[3, 3], &[3, 2]], &[2], None, None).is_none());
    }

    /// A 1x1 convolution (weights `[m, k]`, images `[b, k, h, w]`): the map's rows continue one
    /// another in the images and the output, so each call takes a whole map (`n = h·w`), one per
    /// image.
    #[test]
    fn a_maps_rows_merge_into_one_call_per_image() {
        let op = plan("mk,bkhw->bmhw", [&[6, 4], &[2, 4, 3, 5]], &[2, 6, 3, 5], true).unwrap();
        assert_eq!((op.m, op.k, op.n), (6, 4, 15));
        let starts: Vec<[usize; 3]> = op.calls.iter().map(|c| [c.a, c.b, c.c]).collect();
        assert_eq!(starts, [[0, 0, 0], [0, 60, 90]]);
        // A map whose rows do not continue one another in the output (`w` before `h`) keeps a
        // call per row.
        let op = plan("mk,bkhw->bmwh", [&[6, 4], &[2, 4, 3, 5]], &[2, 6, 5, 3], false).unwrap();
        assert_eq!((op.n, op.calls.len()), (3, 10));
    }

    /// A constant whose panels would take more than twice its memory (many blocks of 2 columns,
    /// each padded to 16) is left to tract.
    #[test]
    fn a_constant_padded_past_twice_its_size_is_left_to_tract() {
        let axes: AxesMapping = "bmk,bkn->bmn".parse().unwrap();
        let b = Tensor::zero::<f32>(&[300, 64, 2]).unwrap();
        assert!(SmallMatMul::plan(&axes, 0, [&[300, 1, 64], &[300, 64, 2]], &[300, 1, 2], Some(&b), None).is_none());
        let b = Tensor::zero::<f32>(&[300, 64, 16]).unwrap();
        assert!(SmallMatMul::plan(&axes, 0, [&[300, 1, 64], &[300, 64, 16]], &[300, 1, 16], Some(&b), None).is_some());
    }

    /// A constant second input becomes panels of 16 columns, each block once however many calls
    /// read it (here a batch axis the constant does not have).
    #[test]
    fn a_constant_is_packed_once_per_block() {
        let axes: AxesMapping = "bmk,kn->bmn".parse().unwrap();
        let b = Tensor::from_shape(&[2, 20], &(0..40).map(|v| v as f32).collect::<Vec<_>>()).unwrap();
        let op = SmallMatMul::plan(&axes, 0, [&[3, 4, 2], &[2, 20]], &[3, 4, 20], Some(&b), None).unwrap();
        let panels = op.panels.as_ref().unwrap();
        assert_eq!(panels.len(), 2 * 2 * COLS);
        assert!(op.calls.iter().all(|c| c.b == 0));
        let p = panels.try_as_plain_ram().unwrap();
        let p = p.as_slice::<f32>().unwrap();
        // Tile 0, depth 1, column 3 is b[1, 3]; tile 1, depth 0, column 17 is b[0, 17]; padding 0.
        assert_eq!((p[COLS + 3], p[2 * COLS + 1], p[2 * COLS + 5]), (23.0, 17.0, 0.0));
    }
}
