//! libjpeg-turbo's chroma upsampling with `do_fancy_upsampling` (its default): a triangle filter
//! for the 2:1 ratios (`h2v1`, `h1v2`, `h2v2`: nearer sample 3/4, farther 1/4, halves rounded down
//! and up alternately), replication for other integral ratios (and for rows of at most two
//! samples), edges extended. Then its YCbCr to RGB conversion in 16-bit fixed point.

/// A component's samples: `width` by `height` of them, the row stride `stride`.
pub(crate) struct Plane<'a> {
    /// The samples, `stride` apart between rows (blocks beyond the image included).
    pub data: &'a [u8],
    /// Row stride.
    pub stride: usize,
    /// Samples per row (`ceil(image width * h / h_max)`).
    pub width: usize,
    /// Rows (`ceil(image height * v / v_max)`).
    pub height: usize,
}

impl Plane<'_> {
    /// Row `y`, rows past the last one reading the last (libjpeg duplicates it at the bottom edge).
    fn row(&self, y: isize) -> &[u8] {
        let y = y.clamp(0, self.height as isize - 1) as usize;
        &self.data[y * self.stride..y * self.stride + self.width]
    }
}

/// The plane upsampled by `(h, v)` (`h_max / h_comp`, `v_max / v_comp`), `out_w` by `out_h`
/// samples (the image's, at most `width * h` by `height * v`).
pub(crate) fn upsample(p: &Plane<'_>, h: usize, v: usize, out_w: usize, out_h: usize) -> Vec<u8> {
    let mut out = Vec::with_capacity(out_w * out_h);
    let fancy = p.width > 2;
    for y in 0..out_h {
        let (in_y, half) = ((y / v) as isize, y % v);
        let mut line: Vec<u8> = match (h, v) {
            (2, 1) if fancy => h2(p.row(in_y)),
            (1, 2) => vertical(p.row(in_y), p.row(if half == 0 { in_y - 1 } else { in_y + 1 }), half),
            (2, 2) if fancy => h2v2(p.row(in_y), p.row(if half == 0 { in_y - 1 } else { in_y + 1 })),
            _ => p.row(in_y).iter().flat_map(|&s| std::iter::repeat_n(s, h)).collect(),
        };
        line.truncate(out_w);
        out.extend_from_slice(&line);
    }
    out
}

/// `h2v1_fancy_upsample`.
fn h2(row: &[u8]) -> Vec<u8> {
    let n = row.len();
    let s = |i: usize| row[i] as u32;
    let mut out = Vec::with_capacity(2 * n);
    out.push(row[0]);
    out.push(((s(0) * 3 + s(1) + 2) >> 2) as u8);
    for i in 1..n - 1 {
        out.push(((s(i) * 3 + s(i - 1) + 1) >> 2) as u8);
        out.push(((s(i) * 3 + s(i + 1) + 2) >> 2) as u8);
    }
    out.push(((s(n - 1) * 3 + s(n - 2) + 1) >> 2) as u8);
    out.push(row[n - 1]);
    out
}

/// `h1v2_fancy_upsample`: the upper output row (`half` 0) rounds halves down, the lower one up.
fn vertical(near: &[u8], far: &[u8], half: usize) -> Vec<u8> {
    let bias = if half == 0 { 1 } else { 2 };
    near.iter().zip(far).map(|(&a, &b)| ((a as u32 * 3 + b as u32 + bias) >> 2) as u8).collect()
}

/// `h2v2_fancy_upsample`: column sums `3 * near + far`, then the horizontal triangle in sixteenths.
fn h2v2(near: &[u8], far: &[u8]) -> Vec<u8> {
    let n = near.len();
    let sum: Vec<u32> = near.iter().zip(far).map(|(&a, &b)| a as u32 * 3 + b as u32).collect();
    let mut out = Vec::with_capacity(2 * n);
    out.push(((sum[0] * 4 + 8) >> 4) as u8);
    out.push(((sum[0] * 3 + sum[1] + 7) >> 4) as u8);
    for i in 1..n - 1 {
        out.push(((sum[i] * 3 + sum[i - 1] + 8) >> 4) as u8);
        out.push(((sum[i] * 3 + sum[i + 1] + 7) >> 4) as u8);
    }
    out.push(((sum[n - 1] * 3 + sum[n - 2] + 8) >> 4) as u8);
    out.push(((sum[n - 1] * 4 + 7) >> 4) as u8);
    out
}

const SCALEBITS: u32 = 16;
const ONE_HALF: i64 = 1 << (SCALEBITS - 1);
// FIX(x) = round(x * 2^16).
const FIX_1_40200: i64 = 91881;
const FIX_1_77200: i64 = 116130;
const FIX_0_71414: i64 = 46802;
const FIX_0_34414: i64 = 22554;

/// `ycc_rgb_convert`: one pixel's R, G, B.
pub(crate) fn ycc_to_rgb(y: u8, cb: u8, cr: u8) -> [u8; 3] {
    let (y, cb, cr) = (y as i64, cb as i64 - 128, cr as i64 - 128);
    let r = y + ((FIX_1_40200 * cr + ONE_HALF) >> SCALEBITS);
    let g = y + ((-FIX_0_34414 * cb + ONE_HALF - FIX_0_71414 * cr) >> SCALEBITS);
    let b = y + ((FIX_1_77200 * cb + ONE_HALF) >> SCALEBITS);
    [r, g, b].map(|v| v.clamp(0, 255) as u8)
}
