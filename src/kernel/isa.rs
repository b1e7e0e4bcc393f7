//! The x86-64 instruction sets our vectorized element loops are compiled for, as the running CPU
//! reports them.

/// The widest instruction set our element loops are compiled for that this CPU has.
#[cfg(target_arch = "x86_64")]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Isa {
    /// AVX-512F (with AVX2 and FMA).
    Avx512,
    /// AVX2 and FMA.
    Fma,
}

#[cfg(target_arch = "x86_64")]
impl Isa {
    /// This CPU's, or `None` when it lacks AVX2 or FMA (the plain loops then).
    pub(crate) fn here() -> Option<Isa> {
        use std::arch::is_x86_feature_detected as has;
        let fma = has!("avx2") && has!("fma");
        if fma && has!("avx512f") {
            Some(Isa::Avx512)
        } else if fma {
            Some(Isa::Fma)
        } else {
            None
        }
    }
}
