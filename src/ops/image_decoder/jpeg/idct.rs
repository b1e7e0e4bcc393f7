//! libjpeg's accurate integer inverse DCT (`jpeg_idct_islow`, the default `JDCT_ISLOW`): the
//! Loeffler-Ligtenberg-Moschytz algorithm in 13-bit fixed point, two extra bits kept between the
//! column pass and the row pass, then libjpeg's range limiting (the value taken modulo 1024 as a
//! signed number, shifted by 128 and clamped to 0..=255).

const CONST_BITS: u32 = 13;
const PASS1_BITS: u32 = 2;

// The cosine constants, each `round(x * 2^13)` as libjpeg writes them.
const FIX_0_298631336: i64 = 2446;
const FIX_0_390180644: i64 = 3196;
const FIX_0_541196100: i64 = 4433;
const FIX_0_765366865: i64 = 6270;
const FIX_0_899976223: i64 = 7373;
const FIX_1_175875602: i64 = 9633;
const FIX_1_501321110: i64 = 12299;
const FIX_1_847759065: i64 = 15137;
const FIX_1_961570560: i64 = 16069;
const FIX_2_053119869: i64 = 16819;
const FIX_2_562915447: i64 = 20995;
const FIX_3_072711026: i64 = 25172;

fn descale(x: i64, n: u32) -> i64 {
    (x + (1 << (n - 1))) >> n
}

/// libjpeg's post-IDCT range limit: `x` modulo 1024 read as a signed 10-bit number, plus 128,
/// clamped to a sample.
fn range_limit(x: i64) -> u8 {
    let wrapped = ((x & 1023) ^ 512) - 512;
    (wrapped + 128).clamp(0, 255) as u8
}

/// One 1-D pass over eight values `v[0..8]` (even part from 0, 2, 4, 6, odd part from 1, 3, 5, 7),
/// the outputs before descaling, in order 0..8.
fn pass(v: [i64; 8]) -> [i64; 8] {
    // Even part.
    let z1 = (v[2] + v[6]) * FIX_0_541196100;
    let tmp2 = z1 + v[6] * -FIX_1_847759065;
    let tmp3 = z1 + v[2] * FIX_0_765366865;
    let tmp0 = (v[0] + v[4]) << CONST_BITS;
    let tmp1 = (v[0] - v[4]) << CONST_BITS;
    let (tmp10, tmp13, tmp11, tmp12) = (tmp0 + tmp3, tmp0 - tmp3, tmp1 + tmp2, tmp1 - tmp2);
    // Odd part.
    let (t0, t1, t2, t3) = (v[7], v[5], v[3], v[1]);
    let (z1, z2, z3, z4) = (t0 + t3, t1 + t2, t0 + t2, t1 + t3);
    let z5 = (z3 + z4) * FIX_1_175875602;
    let (t0, t1, t2, t3) = (t0 * FIX_0_298631336, t1 * FIX_2_053119869, t2 * FIX_3_072711026, t3 * FIX_1_501321110);
    let (z1, z2) = (z1 * -FIX_0_899976223, z2 * -FIX_2_562915447);
    let z3 = z3 * -FIX_1_961570560 + z5;
    let z4 = z4 * -FIX_0_390180644 + z5;
    let (t0, t1, t2, t3) = (t0 + z1 + z3, t1 + z2 + z4, t2 + z2 + z3, t3 + z1 + z4);
    [tmp10 + t3, tmp11 + t2, tmp12 + t1, tmp13 + t0, tmp13 - t0, tmp12 - t1, tmp11 - t2, tmp10 - t3]
}

/// The samples of one block of dequantized coefficients (natural order, row-major), written to
/// `out` at `stride` between rows.
pub(crate) fn idct_islow(coefs: &[i32; 64], out: &mut [u8], stride: usize) {
    let mut ws = [0i64; 64];
    for c in 0..8 {
        let col: [i64; 8] = std::array::from_fn(|r| coefs[r * 8 + c] as i64);
        if col[1..].iter().all(|&v| v == 0) {
            for r in 0..8 {
                ws[r * 8 + c] = col[0] << PASS1_BITS;
            }
            continue;
        }
        let o = pass(col);
        for r in 0..8 {
            ws[r * 8 + c] = descale(o[r], CONST_BITS - PASS1_BITS);
        }
    }
    for r in 0..8 {
        let row: [i64; 8] = std::array::from_fn(|c| ws[r * 8 + c]);
        let line = &mut out[r * stride..r * stride + 8];
        if row[1..].iter().all(|&v| v == 0) {
            line.fill(range_limit(descale(row[0], PASS1_BITS + 3)));
            continue;
        }
        let o = pass(row);
        for (x, v) in line.iter_mut().zip(o) {
            *x = range_limit(descale(v, CONST_BITS + PASS1_BITS + 3));
        }
    }
}
