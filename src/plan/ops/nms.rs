//! [`BoxNms`]: ONNX's `NonMaxSuppression`, as its definition says, over boxes laid out once.
//!
//! tract's op compares a candidate with each kept box through ndarray slices, recomputing both boxes'
//! corners every time (3.7 s of a 4.3 s Faster R-CNN run that kept 100 boxes of 13,500); here a
//! candidate's corners and area are computed once, as it comes up, and it is compared with the kept
//! boxes of its class held one array per field ([`Kept`]), sixteen at a time without a branch, so
//! that the compiler vectorizes the comparison (AVX2 where the CPU has it). It also follows ONNX where tract does not:
//! `max_output_boxes_per_class` of 0 (its default) selects nothing (tract: everything), a negative
//! one is 0, and an overlap or a box of area 0 never suppresses (onnx's reference and onnxruntime).

use tract_onnx::prelude::*;
use tract_onnx::tract_core::internal::*;
use tract_onnx_opl::non_max_suppression::{BoxRepr, NonMaxSuppression};

/// `NonMaxSuppression` over float32 boxes; other types run tract's op.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct BoxNms {
    /// tract's op: its symbol for the number of boxes kept, its box layout, whether a score threshold
    /// is given; it runs the types other than float32.
    pub stock: NonMaxSuppression,
}

/// One box as corners and area.
#[derive(Debug, Clone, Copy)]
struct Corners {
    x_min: f32,
    x_max: f32,
    y_min: f32,
    y_max: f32,
    area: f32,
}

/// The lesser then the greater of two values.
fn ordered(a: f32, b: f32) -> (f32, f32) {
    if a >= b {
        (b, a)
    } else {
        (a, b)
    }
}

impl Corners {
    fn of(layout: BoxRepr, b: &[f32]) -> Corners {
        let (x_min, x_max, y_min, y_max) = match layout {
            // [y1, x1, y2, x2], either corner first
            BoxRepr::TwoPoints => {
                let (x_min, x_max) = ordered(b[1], b[3]);
                let (y_min, y_max) = ordered(b[0], b[2]);
                (x_min, x_max, y_min, y_max)
            }
            // [x_center, y_center, width, height]
            BoxRepr::CenterWidthHeight => {
                let (half_w, half_h) = (b[2] / 2.0, b[3] / 2.0);
                (b[0] - half_w, b[0] + half_w, b[1] - half_h, b[1] + half_h)
            }
        };
        Corners { x_min, x_max, y_min, y_max, area: (x_max - x_min) * (y_max - y_min) }
    }

    #[cfg(test)]
    /// Whether `self` (the candidate) is suppressed by `kept`: their intersection over union is above
    /// the threshold; never for an empty overlap or a box of area 0.
    #[inline]
    fn suppressed_by(&self, kept: &Corners, iou_threshold: f32) -> bool {
        let ix_min = self.x_min.max(kept.x_min);
        let ix_max = self.x_max.min(kept.x_max);
        if ix_max <= ix_min {
            return false;
        }
        let iy_min = self.y_min.max(kept.y_min);
        let iy_max = self.y_max.min(kept.y_max);
        if iy_max <= iy_min {
            return false;
        }
        let intersection = (ix_max - ix_min) * (iy_max - iy_min);
        if intersection <= 0.0 || self.area <= 0.0 || kept.area <= 0.0 {
            return false;
        }
        let union = self.area + kept.area - intersection;
        if union <= 0.0 {
            return false;
        }
        intersection / union > iou_threshold
    }
}

/// The kept boxes of one class, one array per field, in the order they were kept.
#[derive(Debug, Default)]
struct Kept {
    x_min: Vec<f32>,
    x_max: Vec<f32>,
    y_min: Vec<f32>,
    y_max: Vec<f32>,
    area: Vec<f32>,
}

impl Kept {
    fn clear(&mut self) {
        for field in [&mut self.x_min, &mut self.x_max, &mut self.y_min, &mut self.y_max, &mut self.area] {
            field.clear();
        }
    }

    fn len(&self) -> usize {
        self.area.len()
    }

    fn push(&mut self, c: Corners) {
        self.x_min.push(c.x_min);
        self.x_max.push(c.x_max);
        self.y_min.push(c.y_min);
        self.y_max.push(c.y_max);
        self.area.push(c.area);
    }

    /// Whether a kept box suppresses `candidate`, as `Corners::suppressed_by` (the definition, one
    /// pair at a time, which the tests compare with) decides for each.
    fn suppress(&self, candidate: &Corners, iou_threshold: f32) -> bool {
        #[cfg(target_arch = "x86_64")]
        if crate::kernel::Isa::here().is_some() {
            // Safety: the CPU has AVX2 and FMA (`Isa::here` checked it): the one requirement of
            // calling a function compiled with `target_feature(enable = "avx2,fma")`.
            return unsafe { self.suppress_avx2(candidate, iou_threshold) };
        }
        self.suppress_plain(candidate, iou_threshold)
    }

    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2,fma")]
    fn suppress_avx2(&self, candidate: &Corners, iou_threshold: f32) -> bool {
        self.suppress_plain(candidate, iou_threshold)
    }

    /// Sixteen kept boxes at a time, each lane the whole test without a branch (the same operations
    /// on the same values as `Corners::suppressed_by`, so the same answer), a branch per group.
    #[inline(always)]
    fn suppress_plain(&self, c: &Corners, iou_threshold: f32) -> bool {
        const GROUP: usize = 16;
        let n = self.len();
        let mut start = 0;
        while start < n {
            let end = (start + GROUP).min(n);
            let x_min = &self.x_min[start..end];
            let x_max = &self.x_max[start..end];
            let y_min = &self.y_min[start..end];
            let y_max = &self.y_max[start..end];
            let area = &self.area[start..end];
            let mut hit = false;
            for k in 0..area.len() {
                let ix_min = c.x_min.max(x_min[k]);
                let ix_max = c.x_max.min(x_max[k]);
                let iy_min = c.y_min.max(y_min[k]);
                let iy_max = c.y_max.min(y_max[k]);
                let intersection = (ix_max - ix_min) * (iy_max - iy_min);
                let union = c.area + area[k] - intersection;
                // Each `a > b` here is `suppressed_by`'s `!(a <= b)` where neither is NaN; where
                // one is, the intersection or the union is NaN, and both answers are no.
                hit |= (ix_max > ix_min)
                    & (iy_max > iy_min)
                    & (intersection > 0.0)
                    & (c.area > 0.0)
                    & (area[k] > 0.0)
                    & (union > 0.0)
                    & (intersection / union > iou_threshold);
            }
            if hit {
                return true;
            }
            start = end;
        }
        false
    }
}

/// The selected `(batch, class, box)` triples, in ONNX's order: batch, class, then score descending
/// (equal scores by box index).
pub(crate) fn select(
    layout: BoxRepr,
    boxes: &[f32],
    scores: &[f32],
    (batches, classes, count): (usize, usize, usize),
    max_per_class: i64,
    iou_threshold: f32,
    score_threshold: Option<f32>,
) -> Vec<[i64; 3]> {
    let max_per_class = usize::try_from(max_per_class.max(0)).unwrap_or(usize::MAX);
    let mut selected = vec![];
    if max_per_class == 0 {
        return selected;
    }
    let mut kept = Kept::default();
    let mut candidates: Vec<(f32, usize)> = Vec::with_capacity(count);
    for batch in 0..batches {
        let batch_boxes = &boxes[batch * count * 4..(batch + 1) * count * 4];
        for class in 0..classes {
            let row = &scores[(batch * classes + class) * count..][..count];
            candidates.clear();
            candidates.extend(
                row.iter()
                    .copied()
                    .enumerate()
                    .filter(|(_, s)| score_threshold.is_none_or(|t| *s > t))
                    .map(|(i, s)| (s, i)),
            );
            // Stable: equal scores keep the lower box index first.
            candidates.sort_by(|a, b| b.0.partial_cmp(&a.0).unwrap_or(std::cmp::Ordering::Equal));
            kept.clear();
            for &(_, index) in &candidates {
                if kept.len() >= max_per_class {
                    break;
                }
                // Corners for the boxes met only: a high score threshold leaves few of many.
                let candidate = Corners::of(layout, &batch_boxes[index * 4..index * 4 + 4]);
                if !kept.suppress(&candidate, iou_threshold) {
                    kept.push(candidate);
                    selected.push([batch as i64, class as i64, index as i64]);
                }
            }
        }
    }
    selected
}

impl Op for BoxNms {
    fn name(&self) -> StaticName {
        "BoxNms".into()
    }

    fn mints_runtime_symbols(&self) -> bool {
        true
    }

    op_as_typed_op!();
}

impl EvalOp for BoxNms {
    op_out_of_plan!();

    fn eval(&self, ctx: &EvalContext, inputs: TVec<TValue>) -> TractResult<TVec<TValue>> {
        let float32 = inputs.first().is_some_and(|b| b.datum_type() == f32::datum_type())
            && inputs.get(1).is_some_and(|s| s.datum_type() == f32::datum_type());
        if !float32 {
            return self.stock.eval(ctx, inputs);
        }
        ensure!(inputs.len() >= 4, "NonMaxSuppression takes at least 4 inputs here");
        let (boxes, scores) = (&inputs[0], &inputs[1]);
        let (bs, ss) = (boxes.shape(), scores.shape());
        ensure!(bs.len() == 3 && bs[2] == 4, "boxes must be [batches, boxes, 4], got {bs:?}");
        ensure!(
            ss.len() == 3 && ss[0] == bs[0] && ss[2] == bs[1],
            "scores must be [batches, classes, boxes] for boxes {bs:?}, got {ss:?}"
        );
        let max_per_class = *inputs[2].try_as_plain_ram()?.to_scalar::<i64>()?;
        let iou_threshold = *inputs[3].try_as_plain_ram()?.to_scalar::<f32>()?;
        let score_threshold = match inputs.get(4) {
            Some(t) if self.stock.has_score_threshold => Some(*t.try_as_plain_ram()?.to_scalar::<f32>()?),
            _ => None,
        };
        let (boxes, scores) = (boxes.try_as_plain_ram()?, scores.try_as_plain_ram()?);
        let selected = select(
            self.stock.center_point_box,
            boxes.as_slice::<f32>()?,
            scores.as_slice::<f32>()?,
            (ss[0], ss[1], ss[2]),
            max_per_class,
            iou_threshold,
            score_threshold,
        );
        let rows = selected.len();
        let values: Vec<i64> = selected.into_iter().flatten().collect();
        Ok(tvec!(tract_ndarray::ArrayD::from_shape_vec(&*tvec![rows, 3], values)?.into_tvalue()))
    }
}

impl TypedOp for BoxNms {
    as_op!();

    fn output_facts(&self, inputs: &[&TypedFact]) -> TractResult<TVec<TypedFact>> {
        self.stock.output_facts(inputs)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The definition, written out as onnx's reference writes it, for comparison.
    fn reference(
        layout: BoxRepr,
        boxes: &[f32],
        scores: &[f32],
        (batches, classes, count): (usize, usize, usize),
        max_per_class: i64,
        iou: f32,
        threshold: Option<f32>,
    ) -> Vec<[i64; 3]> {
        let mut out = vec![];
        let max_per_class = max_per_class.max(0) as usize;
        for b in 0..batches {
            for c in 0..classes {
                let mut cands: Vec<usize> = (0..count)
                    .filter(|&i| threshold.is_none_or(|t| scores[(b * classes + c) * count + i] > t))
                    .collect();
                // highest score first, equal scores by lower index
                cands.sort_by(|&i, &j| {
                    let (si, sj) = (scores[(b * classes + c) * count + i], scores[(b * classes + c) * count + j]);
                    sj.partial_cmp(&si).unwrap_or(std::cmp::Ordering::Equal).then(i.cmp(&j))
                });
                let mut kept: Vec<usize> = vec![];
                for i in cands {
                    if kept.len() >= max_per_class {
                        break;
                    }
                    let bi = Corners::of(layout, &boxes[(b * count + i) * 4..][..4]);
                    if kept
                        .iter()
                        .all(|&k| !bi.suppressed_by(&Corners::of(layout, &boxes[(b * count + k) * 4..][..4]), iou))
                    {
                        kept.push(i);
                        out.push([b as i64, c as i64, i as i64]);
                    }
                }
            }
        }
        out
    }

    #[test]
    fn selects_as_the_definition_on_random_boxes_with_ties() {
        let mut seed = 7u64;
        let mut next = move || {
            seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            ((seed >> 33) as f32) / (1u64 << 31) as f32
        };
        for (layout, batches, classes, count, max, iou, threshold) in [
            (BoxRepr::TwoPoints, 2, 3, 200, 10, 0.5, Some(0.3)),
            (BoxRepr::TwoPoints, 1, 1, 500, 1000, 0.3, None),
            (BoxRepr::CenterWidthHeight, 2, 2, 150, 5, 0.6, Some(0.1)),
            (BoxRepr::TwoPoints, 1, 2, 50, 0, 0.5, None),
            (BoxRepr::TwoPoints, 1, 2, 50, -3, 0.5, None),
        ] {
            let boxes: Vec<f32> = (0..batches * count * 4).map(|_| (next() * 20.0).round()).collect();
            // scores on a coarse grid, so that many are equal
            let scores: Vec<f32> = (0..batches * classes * count).map(|_| (next() * 8.0).round() / 8.0).collect();
            let got = select(layout, &boxes, &scores, (batches, classes, count), max, iou, threshold);
            let want = reference(layout, &boxes, &scores, (batches, classes, count), max, iou, threshold);
            assert_eq!(got, want, "{layout:?} {batches}x{classes}x{count} max {max}");
            if max <= 0 {
                assert!(got.is_empty());
            } else {
                assert!(!got.is_empty());
            }
        }
    }

    #[test]
    fn nan_and_signed_zero_coordinates_and_thresholds_decide_as_the_definition() {
        let mut seed = 3u64;
        let mut next = move || {
            seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            (seed >> 33) as u32
        };
        let specials = [f32::NAN, 0.0, -0.0, f32::INFINITY, f32::NEG_INFINITY, 1e-40];
        for iou in [0.5, 0.0, -1.0, f32::NAN, 1.0] {
            for layout in [BoxRepr::TwoPoints, BoxRepr::CenterWidthHeight] {
                let count = 120;
                let boxes: Vec<f32> = (0..count * 4)
                    .map(|_| {
                        let r = next();
                        if r % 11 == 0 {
                            specials[(r / 11) as usize % specials.len()]
                        } else {
                            (r % 16) as f32 - 4.0
                        }
                    })
                    .collect();
                let scores: Vec<f32> = (0..count).map(|_| (next() % 9) as f32 / 8.0).collect();
                let got = select(layout, &boxes, &scores, (1, 1, count), 1000, iou, None);
                let want = reference(layout, &boxes, &scores, (1, 1, count), 1000, iou, None);
                assert_eq!(got, want, "{layout:?} iou {iou}");
                assert!(got.len() > 16, "{} kept: groups of sixteen not all exercised", got.len());
            }
        }
    }

    #[test]
    fn zero_area_boxes_and_empty_overlaps_never_suppress() {
        // two identical boxes of area 0, then two overlapping boxes
        let boxes = [0.0, 0.0, 0.0, 5.0, 0.0, 0.0, 0.0, 5.0, 0.0, 0.0, 4.0, 4.0, 0.0, 0.0, 4.0, 4.0];
        let scores = [0.9, 0.8, 0.7, 0.6];
        let got = select(BoxRepr::TwoPoints, &boxes, &scores, (1, 1, 4), 10, -1.0, None);
        assert_eq!(got, vec![[0, 0, 0], [0, 0, 1], [0, 0, 2]]);
    }
}
