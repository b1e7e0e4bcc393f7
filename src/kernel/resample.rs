//! Resampling one axis of a contiguous f32 buffer by fixed taps: the inner loop of `Resize`.
//!
//! Each output index along the axis reads a few input indices with weights ([`AxisTaps`]), or is
//! extrapolated (zero). The buffer is read as `[outer, len_in, inner]` and written as
//! `[outer, len_out, inner]`. An output row is a weighted sum of input rows of `inner` values; when
//! `inner` is 1 (the last axis) the rows are single values and the sum is a gather, done in one loop
//! per block instead of one slice operation per value, over a table of each output's taps made once
//! per call (when no output has more than two).
//!
//! The arithmetic is fixed: an output starts at `0.0` and adds `weight * input` for each tap in order
//! (taps of weight zero are not kept), the same operations in the same order as tract's `Resize`, so
//! results are bit for bit the same, but for one thing: a single tap of weight one is a copy, which
//! keeps the sign of a zero (tract adds it to `0.0`, which makes `-0.0` positive; onnxruntime copies).

use rayon::ThreadPool;

use super::spread::spread;

/// The taps of every output index of one axis.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct AxisTaps {
    /// Where each output index's taps start in `taps`; one more entry than outputs.
    starts: Vec<usize>,
    /// (input index, weight), weights non-zero.
    taps: Vec<(usize, f32)>,
    /// Outputs that fall outside the input.
    extrapolated: Vec<bool>,
}

impl AxisTaps {
    /// Taps from one window of `window` (index, weight) pairs per output index, in order; windows of
    /// extrapolated outputs are ignored. Zero weights are dropped. `None` when the lengths do not
    /// agree or an index is not below `len_in`.
    pub(crate) fn new(
        len_in: usize,
        window: usize,
        indices: &[usize],
        weights: &[f32],
        extrapolated: &[bool],
    ) -> Option<AxisTaps> {
        let len_out = extrapolated.len();
        if window == 0 || indices.len() != weights.len() || indices.len() != window.checked_mul(len_out)? {
            return None;
        }
        let mut taps = AxisTaps { starts: vec![0], taps: vec![], extrapolated: extrapolated.to_vec() };
        for (x, out_of_range) in extrapolated.iter().enumerate() {
            if !out_of_range {
                let span = x * window..(x + 1) * window;
                for (&i, &w) in indices[span.clone()].iter().zip(&weights[span]) {
                    if i >= len_in {
                        return None;
                    }
                    if w != 0.0 {
                        taps.taps.push((i, w));
                    }
                }
            }
            taps.starts.push(taps.taps.len());
        }
        Some(taps)
    }

    /// The number of output indices.
    pub(crate) fn len_out(&self) -> usize {
        self.extrapolated.len()
    }

    fn of(&self, x: usize) -> &[(usize, f32)] {
        &self.taps[self.starts[x]..self.starts[x + 1]]
    }
}

/// One output of the last axis when it has at most two taps: the same arithmetic as the general
/// loop (a lone tap of weight one copied, otherwise `0.0` plus each `weight * input` in order).
#[derive(Debug, Clone, Copy)]
enum Gather {
    Zero,
    Copy(usize),
    One(usize, f32),
    Two(usize, f32, usize, f32),
}

impl Gather {
    /// Output `x`'s taps, `None` when it has more than two.
    fn of(taps: &AxisTaps, x: usize) -> Option<Gather> {
        if taps.extrapolated[x] {
            return Some(Gather::Zero);
        }
        match *taps.of(x) {
            [] => Some(Gather::Zero),
            [(i, 1.0)] => Some(Gather::Copy(i)),
            [(i, w)] => Some(Gather::One(i, w)),
            [(i, w), (j, v)] => Some(Gather::Two(i, w, j, v)),
            _ => None,
        }
    }

    #[inline(always)]
    fn apply(self, src: &[f32]) -> f32 {
        match self {
            Gather::Zero => 0.0,
            Gather::Copy(i) => src[i],
            Gather::One(i, w) => 0.0 + w * src[i],
            Gather::Two(i, w, j, v) => {
                let mut acc = 0.0;
                acc += w * src[i];
                acc += v * src[j];
                acc
            }
        }
    }
}

/// Resamples the middle axis of `src` (`[outer, len_in, inner]`) into `dst` (`[outer, len_out,
/// inner]`, `len_out` from `taps`). The lengths must agree (an error says how otherwise); every tap
/// index is below `len_in` by construction of [`AxisTaps`], for the `len_in` it was made with.
pub(crate) fn resample_axis(
    src: &[f32],
    len_in: usize,
    inner: usize,
    taps: &AxisTaps,
    dst: &mut [f32],
) -> Result<(), String> {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") {
        // Safety: the CPU has AVX2, checked just above: the one requirement of calling a function
        // compiled with `target_feature(enable = "avx2")`.
        return unsafe { resample_avx2(src, len_in, inner, taps, dst) };
    }
    resample_blocks(src, len_in, inner, taps, dst)
}

/// Output values one thread is given at least before a resampling is split over threads (about
/// 10 µs of one core's work on bilinear taps). With the pool's workers awake while a plan runs, 2
/// threads measured 0.70-0.82 of one thread's time from 16,464 values (`benches/thread_split.py`,
/// 2 cores; docs/performance.md, "Threads in our kernels").
const VALUES_PER_THREAD: usize = 1 << 13;

/// [`resample_axis`] over the threads of `pool` when the output is large enough
/// ([`VALUES_PER_THREAD`]): each thread takes a run of whole outer blocks (`[len_in, inner]` in,
/// `[len_out, inner]` out), which it resamples as one thread would, so the result is the same, bit
/// for bit, on any number of threads.
pub(crate) fn resample_axis_on(
    pool: Option<&ThreadPool>,
    src: &[f32],
    len_in: usize,
    inner: usize,
    taps: &AxisTaps,
    dst: &mut [f32],
) -> Result<(), String> {
    let block_in = len_in.checked_mul(inner).ok_or("input block overflows")?;
    let block_out = taps.len_out().checked_mul(inner).ok_or("output block overflows")?;
    let outer = src.len().checked_div(block_in).unwrap_or(0);
    let whole = block_out > 0 && src.len() == outer * block_in && dst.len() == outer * block_out;
    let threads = super::threads_for(pool, dst.len(), VALUES_PER_THREAD, outer);
    let Some(pool) = pool.filter(|_| whole && threads > 1) else {
        return resample_axis(src, len_in, inner, taps, dst);
    };
    let mut results: Vec<Result<(), String>> = vec![Ok(()); threads];
    let (mut src, mut dst) = (src, dst);
    spread(
        pool,
        (0..threads).zip(results.iter_mut()).map(|(t, result)| {
            let count = outer * (t + 1) / threads - outer * t / threads;
            let (mine_in, rest_in) = src.split_at(count * block_in);
            let (mine_out, rest_out) = std::mem::take(&mut dst).split_at_mut(count * block_out);
            (src, dst) = (rest_in, rest_out);
            move || *result = resample_axis(mine_in, len_in, inner, taps, mine_out)
        }),
    );
    results.into_iter().collect()
}

/// [`resample_blocks`] compiled for AVX2 (eight f32 lanes for the weighted row sums; the same
/// operations in the same order, so the same bits).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
fn resample_avx2(src: &[f32], len_in: usize, inner: usize, taps: &AxisTaps, dst: &mut [f32]) -> Result<(), String> {
    resample_blocks(src, len_in, inner, taps, dst)
}

/// The body of [`resample_axis`], inlined into each build of it.
#[inline(always)]
fn resample_blocks(src: &[f32], len_in: usize, inner: usize, taps: &AxisTaps, dst: &mut [f32]) -> Result<(), String> {
    let len_out = taps.len_out();
    let block_in = len_in.checked_mul(inner).ok_or("input block overflows")?;
    let block_out = len_out.checked_mul(inner).ok_or("output block overflows")?;
    if taps.taps.iter().any(|&(i, _)| i >= len_in) {
        return Err(format!("a tap reads past an axis of {len_in}"));
    }
    if block_in == 0 || block_out == 0 {
        return if dst.is_empty() { Ok(()) } else { Err("an empty input cannot fill a non-empty output".into()) };
    }
    if !src.len().is_multiple_of(block_in) || dst.len() != src.len() / block_in * block_out {
        return Err(format!(
            "buffers of {} and {} values are not [outer, {len_in}, {inner}] and [outer, {len_out}, {inner}]",
            src.len(),
            dst.len()
        ));
    }
    // The last axis: each output's taps in one small value, read in order by one loop per block.
    let gathers: Option<Vec<Gather>> =
        if inner == 1 { (0..len_out).map(|x| Gather::of(taps, x)).collect() } else { None };
    #[cfg(target_arch = "x86_64")]
    let vector_plan = match &gathers {
        Some(gathers) if std::arch::is_x86_feature_detected!("avx2") => Some(lanes::plan(gathers, len_in)),
        _ => None,
    };
    for (src, dst) in src.chunks_exact(block_in).zip(dst.chunks_exact_mut(block_out)) {
        if inner == 1 {
            match &gathers {
                #[cfg(target_arch = "x86_64")]
                Some(gathers) if vector_plan.is_some() => {
                    let lanes = vector_plan.as_deref().unwrap_or_default();
                    // Safety: the CPU has AVX2 (checked when the plan was made), and `lanes` was
                    // planned from `gathers` for blocks of `len_in` floats, `src`'s length.
                    unsafe { lanes::gather(lanes, gathers, src, dst) };
                }
                Some(gathers) => {
                    for (out, g) in dst.iter_mut().zip(gathers) {
                        *out = g.apply(src);
                    }
                }
                None => {
                    for (x, out) in dst.iter_mut().enumerate() {
                        *out = match taps.of(x) {
                            _ if taps.extrapolated[x] => 0.0,
                            [(i, w)] if *w == 1.0 => src[*i],
                            list => list.iter().fold(0.0, |acc, &(i, w)| acc + w * src[i]),
                        };
                    }
                }
            }
            continue;
        }
        for (x, row) in dst.chunks_exact_mut(inner).enumerate() {
            match taps.of(x) {
                _ if taps.extrapolated[x] => row.fill(0.0),
                [(i, w)] if *w == 1.0 => row.copy_from_slice(&src[i * inner..][..inner]),
                list => {
                    row.fill(0.0);
                    for &(i, w) in list {
                        for (d, s) in row.iter_mut().zip(&src[i * inner..][..inner]) {
                            *d += w * s;
                        }
                    }
                }
            }
        }
    }
    Ok(())
}

/// The last axis' gather in vectors of 8 outputs (AVX2): a block of 8 outputs that all have two
/// taps, all within 8 inputs (an upsampling's, from rows of at least 8), is one load of those 8
/// inputs, two lane permutations and `(0.0 + w·a) + v·b` in lanes: the scalar loop's operations in
/// its order (a multiply then an add, never fused), so the same bits. Other blocks, and the outputs
/// past the last whole block, go through [`Gather::apply`].
#[cfg(target_arch = "x86_64")]
mod lanes {
    use super::Gather;
    use std::arch::x86_64::*;

    /// One block of 8 outputs: where its inputs start, and per lane each tap's input (from
    /// `base`) and weight.
    #[derive(Debug, Clone, Copy)]
    pub(super) struct Block {
        base: usize,
        first: [i32; 8],
        w: [f32; 8],
        second: [i32; 8],
        v: [f32; 8],
    }

    /// For each whole block of 8 outputs, its lanes when it can go in vectors over rows of
    /// `len_in` inputs.
    pub(super) fn plan(gathers: &[Gather], len_in: usize) -> Vec<Option<Block>> {
        gathers
            .chunks_exact(8)
            .map(|block| {
                let mut taps = [(0usize, 0f32, 0usize, 0f32); 8];
                for (t, g) in taps.iter_mut().zip(block) {
                    match *g {
                        Gather::Two(i, w, j, v) => *t = (i, w, j, v),
                        _ => return None,
                    }
                }
                // The 8 inputs loaded start at the first one read, or earlier near the row's end.
                let first = taps.iter().map(|t| t.0.min(t.2)).min()?;
                let base = first.min(len_in.checked_sub(8)?);
                let top = taps.iter().map(|t| t.0.max(t.2)).max()?;
                if top - base >= 8 {
                    return None;
                }
                Some(Block {
                    base,
                    first: taps.map(|t| (t.0 - base) as i32),
                    w: taps.map(|t| t.1),
                    second: taps.map(|t| (t.2 - base) as i32),
                    v: taps.map(|t| t.3),
                })
            })
            .collect()
    }

    /// One row: `dst[x]` = output `x` of `gathers` from `src`.
    ///
    /// Safety: the CPU has AVX2; `lanes` is [`plan`]'s for `gathers` and `src.len()`, and `dst`
    /// has one value per gather.
    #[target_feature(enable = "avx2")]
    pub(super) unsafe fn gather(lanes: &[Option<Block>], gathers: &[Gather], src: &[f32], dst: &mut [f32]) {
        assert!(dst.len() == gathers.len() && lanes.len() == gathers.len() / 8);
        let zero = _mm256_setzero_ps();
        for (b, lane) in lanes.iter().enumerate() {
            let out = &mut dst[b * 8..][..8];
            match lane {
                Some(l) => {
                    assert!(l.base + 8 <= src.len());
                    // Safety: 8 floats from `base` lie in `src` (asserted), 8 in `out`, and the
                    // lane indices are below 8 (made so by `plan`).
                    unsafe {
                        let x = _mm256_loadu_ps(src.as_ptr().add(l.base));
                        let a = _mm256_permutevar8x32_ps(x, _mm256_loadu_si256(l.first.as_ptr().cast()));
                        let c = _mm256_permutevar8x32_ps(x, _mm256_loadu_si256(l.second.as_ptr().cast()));
                        let first = _mm256_mul_ps(_mm256_loadu_ps(l.w.as_ptr()), a);
                        let second = _mm256_mul_ps(_mm256_loadu_ps(l.v.as_ptr()), c);
                        _mm256_storeu_ps(out.as_mut_ptr(), _mm256_add_ps(_mm256_add_ps(zero, first), second));
                    }
                }
                None => {
                    for (o, g) in out.iter_mut().zip(&gathers[b * 8..]) {
                        *o = g.apply(src);
                    }
                }
            }
        }
        let done = lanes.len() * 8;
        for (o, g) in dst[done..].iter_mut().zip(&gathers[done..]) {
            *o = g.apply(src);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Nearest taps reading `map[x]`, window 2 with the second weight zero.
    fn nearest(len_in: usize, map: &[usize]) -> AxisTaps {
        let indices: Vec<usize> = map.iter().flat_map(|&i| [i, 0]).collect();
        let weights: Vec<f32> = map.iter().flat_map(|_| [1.0, 0.0]).collect();
        AxisTaps::new(len_in, 2, &indices, &weights, &vec![false; map.len()]).unwrap()
    }

    #[test]
    fn nearest_on_the_last_axis_gathers() {
        let taps = nearest(3, &[0, 0, 1, 1, 2, 2]);
        let src = [1.0, 2.0, 3.0, 10.0, 20.0, -0.0];
        let mut dst = [9.0; 12];
        resample_axis(&src, 3, 1, &taps, &mut dst).unwrap();
        assert_eq!(dst, [1.0, 1.0, 2.0, 2.0, 3.0, 3.0, 10.0, 10.0, 20.0, 20.0, -0.0, -0.0]);
        assert!(dst[11].is_sign_negative(), "a copy keeps the sign of zero");
    }

    #[test]
    fn nearest_on_an_outer_axis_copies_rows() {
        let taps = nearest(2, &[0, 1, 1]);
        let src = [1.0, 2.0, 3.0, 4.0];
        let mut dst = [0.0; 6];
        resample_axis(&src, 2, 2, &taps, &mut dst).unwrap();
        assert_eq!(dst, [1.0, 2.0, 3.0, 4.0, 3.0, 4.0]);
    }

    #[test]
    fn linear_taps_sum_in_order_and_extrapolated_outputs_are_zero() {
        // out[0] = 0.25*in[0] + 0.75*in[1]; out[1] extrapolated; out[2] = 0.5*in[1] + 0.5*in[1].
        let taps =
            AxisTaps::new(2, 2, &[0, 1, 0, 0, 1, 1], &[0.25, 0.75, 9.0, 9.0, 0.5, 0.5], &[false, true, false]).unwrap();
        for inner in [1, 2] {
            let src: Vec<f32> = [4.0f32, 8.0].iter().flat_map(|&v| vec![v; inner]).collect();
            let mut dst = vec![7.0; 3 * inner];
            resample_axis(&src, 2, inner, &taps, &mut dst).unwrap();
            let want: Vec<f32> = [0.0f32 + 0.25 * 4.0 + 0.75 * 8.0, 0.0, 0.0f32 + 0.5 * 8.0 + 0.5 * 8.0]
                .iter()
                .flat_map(|&v| vec![v; inner])
                .collect();
            assert_eq!(dst, want, "inner {inner}");
        }
    }

    #[test]
    fn last_axis_taps_of_every_count_keep_the_general_arithmetic() {
        // out[0]: one tap of weight 2 (0.0 + 2 * -0.0 is +0.0); out[1]: one of weight 1 (a copy of
        // -0.0); out[2]: three taps, which the general loop takes for the whole axis; then with the
        // third output dropped, the two-tap form.
        let three = AxisTaps::new(
            3,
            3,
            &[0, 0, 0, 0, 0, 0, 0, 1, 2],
            &[2.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.5, 0.25, 0.125],
            &[false, false, false],
        )
        .unwrap();
        let src = [-0.0f32, 8.0, 16.0];
        let mut dst = [7.0f32; 3];
        resample_axis(&src, 3, 1, &three, &mut dst).unwrap();
        assert_eq!(dst, [0.0, -0.0, 0.0f32 + 0.5 * -0.0 + 0.25 * 8.0 + 0.125 * 16.0]);
        assert!(dst[0].is_sign_positive() && dst[1].is_sign_negative(), "{dst:?}");
        let two = AxisTaps::new(3, 2, &[0, 0, 0, 0, 1, 2], &[2.0, 0.0, 1.0, 0.0, 0.25, 0.125], &[false, false, false])
            .unwrap();
        resample_axis(&src, 3, 1, &two, &mut dst).unwrap();
        assert_eq!(dst, [0.0, -0.0, 0.0f32 + 0.25 * 8.0 + 0.125 * 16.0]);
        assert!(dst[0].is_sign_positive() && dst[1].is_sign_negative(), "{dst:?}");
    }

    /// Linear taps like those of a half-pixel `Resize`: two per output, clamped at the edges
    /// (one tap of weight one there).
    fn linear(len_in: usize, len_out: usize) -> AxisTaps {
        let (mut indices, mut weights) = (vec![], vec![]);
        for x in 0..len_out {
            let at = ((x as f32 + 0.5) * len_in as f32 / len_out as f32 - 0.5).clamp(0.0, (len_in - 1) as f32);
            let i = at.floor() as usize;
            let j = (i + 1).min(len_in - 1);
            let f = at - i as f32;
            indices.extend([i, j]);
            weights.extend([1.0 - f, f]);
        }
        AxisTaps::new(len_in, 2, &indices, &weights, &vec![false; len_out]).unwrap()
    }

    /// The last axis' vector gather gives the scalar loop's bits, special values included, for
    /// upsamplings (vector blocks), downsamplings (scalar blocks) and lengths that leave a tail.
    #[test]
    fn the_vector_gather_gives_the_scalar_bits() {
        for (len_in, len_out, rows) in
            [(28, 224, 3), (7, 20, 2), (3, 8, 4), (100, 101, 1), (50, 13, 2), (9, 9 * 4 + 3, 5)]
        {
            let taps = linear(len_in, len_out);
            let mut src: Vec<f32> = (0..len_in * rows).map(|v| ((v * 7919) % 211) as f32 / 37.0 - 2.5).collect();
            for (at, special) in [(1, -0.0), (len_in + 2, f32::INFINITY), (2 * len_in - 1, f32::NAN), (5, f32::MAX)] {
                if at < src.len() {
                    src[at] = special;
                }
            }
            let mut got = vec![0f32; len_out * rows];
            resample_axis(&src, len_in, 1, &taps, &mut got).unwrap();
            let want: Vec<f32> = src
                .chunks_exact(len_in)
                .flat_map(|row| (0..len_out).map(|x| Gather::of(&taps, x).unwrap().apply(row)).collect::<Vec<_>>())
                .collect();
            let bits = |v: &[f32]| v.iter().map(|f| f.to_bits()).collect::<Vec<_>>();
            assert_eq!(bits(&got), bits(&want), "{len_in} -> {len_out}");
        }
        // The vector blocks were taken where they could be: 28 -> 224 has 28 blocks, the first and
        // the last holding outputs of one tap (clamped at the edges).
        #[cfg(target_arch = "x86_64")]
        {
            let taps = linear(28, 224);
            let gathers: Vec<Gather> = (0..224).map(|x| Gather::of(&taps, x).unwrap()).collect();
            assert_eq!(lanes::plan(&gathers, 28).iter().filter(|b| b.is_some()).count(), 26);
        }
    }

    #[test]
    fn a_split_resampling_gives_the_bits_of_one_thread() {
        // Linear taps of 3 -> 7 with an extrapolated output, on both the last axis and an outer one;
        // outer counts that divide unevenly, and outputs under and over the split's threshold.
        let taps = AxisTaps::new(
            3,
            2,
            &[0, 1, 0, 1, 1, 2, 1, 2, 2, 0, 0, 0, 2, 0],
            &[0.7, 0.3, 0.1, 0.9, 0.45, 0.55, 0.2, 0.8, 1.0, 0.0, 9.0, 9.0, 1.0, 0.0],
            &[false, false, false, false, false, true, false],
        )
        .unwrap();
        let pools: Vec<ThreadPool> =
            [1, 2, 8].iter().map(|&n| rayon::ThreadPoolBuilder::new().num_threads(n).build().unwrap()).collect();
        for (outer, inner) in [(1, 1), (5, 1), (3, 4), (13, 1 << 12), (40_000, 1), (9, 3000)] {
            let src: Vec<f32> = (0..outer * 3 * inner).map(|i| ((i * 7919 % 1013) as f32 - 506.0) / 97.0).collect();
            let mut want = vec![0f32; outer * 7 * inner];
            resample_axis(&src, 3, inner, &taps, &mut want).unwrap();
            for pool in &pools {
                let mut got = vec![f32::NAN; want.len()];
                resample_axis_on(Some(pool), &src, 3, inner, &taps, &mut got).unwrap();
                let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
                assert_eq!(
                    bits(&got),
                    bits(&want),
                    "outer {outer}, inner {inner}, {} threads",
                    pool.current_num_threads()
                );
            }
        }
        // Wrong buffers are refused as on one thread.
        let pool = &pools[1];
        let mut short = vec![0f32; 7 * 40_000 - 1];
        assert!(resample_axis_on(Some(pool), &vec![1.0; 3 * 40_000], 3, 1, &taps, &mut short).is_err());
    }

    #[test]
    fn bad_taps_and_buffers_are_refused() {
        assert!(AxisTaps::new(2, 2, &[0, 2], &[1.0, 1.0], &[false]).is_none(), "index past the axis");
        assert!(AxisTaps::new(2, 2, &[0], &[1.0], &[false]).is_none(), "short window");
        assert!(AxisTaps::new(2, 0, &[], &[], &[]).is_none(), "no window");
        let taps = nearest(2, &[0, 1]);
        let mut dst = [0.0; 3];
        assert!(resample_axis(&[1.0, 2.0], 2, 1, &taps, &mut dst).is_err());
        assert!(resample_axis(&[1.0, 2.0, 3.0], 2, 1, &taps, &mut [0.0; 2]).is_err());
        let short = nearest(1, &[0, 0]);
        assert!(resample_axis(&[1.0, 2.0], 2, 1, &short, &mut [0.0; 2]).is_ok());
        assert_eq!(resample_axis(&[1.0], 1, 1, &taps, &mut [0.0; 2]).unwrap_err(), "a tap reads past an axis of 1");
        let outside = AxisTaps::new(0, 2, &[0; 4], &[0.0; 4], &[true, true]).unwrap();
        assert_eq!(
            resample_axis(&[], 0, 1, &outside, &mut [0.0; 2]).unwrap_err(),
            "an empty input cannot fill a non-empty output"
        );
    }
}
