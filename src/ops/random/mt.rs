//! The generator of numpy's legacy `numpy.random.RandomState`, which onnx's reference implementation
//! draws its random ops from: MT19937 seeded by `init_genrand` with a 32-bit seed, doubles in
//! `[0, 1)` from two 32-bit outputs, `(a>>5 · 2^26 + b>>6) / 2^53`, normals by the polar
//! Box-Muller method (the second value of each pair kept for the next draw) and `binomial(1, p)`
//! by inversion, each as numpy's legacy distributions compute them, so a seeded op draws the
//! reference's values bit for bit.

const N: usize = 624;
const M: usize = 397;

/// One MT19937 stream with the state numpy's legacy distributions keep beside it.
#[derive(Clone)]
pub(crate) struct LegacyRng {
    mt: Box<[u32; N]>,
    next: usize,
    /// The second normal of the last pair drawn, not yet given.
    gauss: Option<f64>,
}

impl LegacyRng {
    /// The stream `RandomState(seed)` starts (Matsumoto and Nishimura's `init_genrand`).
    pub(crate) fn new(seed: u32) -> Self {
        let mut mt = Box::new([0u32; N]);
        mt[0] = seed;
        for i in 1..N {
            let prev = mt[i - 1];
            mt[i] = 1_812_433_253u32.wrapping_mul(prev ^ (prev >> 30)).wrapping_add(i as u32);
        }
        LegacyRng { mt, next: N, gauss: None }
    }

    fn refill(&mut self) {
        let mt = &mut self.mt;
        for k in 0..N {
            let y = (mt[k] & 0x8000_0000) | (mt[(k + 1) % N] & 0x7fff_ffff);
            let mag = if y & 1 == 1 { 0x9908_b0df } else { 0 };
            mt[k] = mt[(k + M) % N] ^ (y >> 1) ^ mag;
        }
        self.next = 0;
    }

    /// The next 32-bit output, tempered.
    pub(crate) fn next_u32(&mut self) -> u32 {
        if self.next >= N {
            self.refill();
        }
        let mut y = self.mt[self.next];
        self.next += 1;
        y ^= y >> 11;
        y ^= (y << 7) & 0x9d2c_5680;
        y ^= (y << 15) & 0xefc6_0000;
        y ^ (y >> 18)
    }

    /// A double in `[0, 1)` with 53 random bits (`random_sample`).
    pub(crate) fn next_double(&mut self) -> f64 {
        let a = (self.next_u32() >> 5) as f64;
        let b = (self.next_u32() >> 6) as f64;
        (a * 67_108_864.0 + b) / 9_007_199_254_740_992.0
    }

    /// A standard normal (`randn`): the polar method, two values per accepted pair.
    pub(crate) fn gauss(&mut self) -> f64 {
        if let Some(g) = self.gauss.take() {
            return g;
        }
        loop {
            let x1 = 2.0 * self.next_double() - 1.0;
            let x2 = 2.0 * self.next_double() - 1.0;
            let r2 = x1 * x1 + x2 * x2;
            if r2 < 1.0 && r2 != 0.0 {
                let f = (-2.0 * r2.ln() / r2).sqrt();
                self.gauss = Some(f * x1);
                return f * x2;
            }
        }
    }

    /// `binomial(1, p)` for `p` in `[0, 1]` (checked by the caller): numpy's inversion for one
    /// trial, on `min(p, 1-p)`. Every call draws at least one double, `p` 0 or 1 included.
    pub(crate) fn bernoulli(&mut self, p: f64) -> bool {
        if p <= 0.5 {
            self.inversion(p)
        } else {
            !self.inversion(1.0 - p)
        }
    }

    /// One trial's inversion: the count is 0 when the uniform falls within `P(0) = 1-p`, else 1;
    /// a count past the bound (only through rounding) starts again with a new uniform.
    fn inversion(&mut self, p: f64) -> bool {
        let q = 1.0 - p;
        let qn = q.ln().exp();
        let bound = (p + 10.0 * (p * q + 1.0).sqrt()).min(1.0) as i64;
        let mut x = 0i64;
        let mut px = qn;
        let mut u = self.next_double();
        while u > px {
            x += 1;
            if x > bound {
                x = 0;
                px = qn;
                u = self.next_double();
            } else {
                u -= px;
                px = (p * px) / (x as f64 * q);
            }
        }
        x == 1
    }
}

#[cfg(test)]
mod tests {
    use super::LegacyRng;

    #[test]
    fn first_outputs_of_seed_5489() {
        // The reference sequence of mt19937ar.c's default seed.
        let mut r = LegacyRng::new(5489);
        let got: Vec<u32> = (0..3).map(|_| r.next_u32()).collect();
        assert_eq!(got, [3_499_211_612, 581_869_302, 3_890_346_734]);
    }

    #[test]
    fn first_double_of_seed_0() {
        // numpy.random.RandomState(0).random_sample() == 0.5488135039273248
        assert_eq!(LegacyRng::new(0).next_double(), 0.548_813_503_927_324_8);
    }
}
