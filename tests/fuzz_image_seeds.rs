//! The image-decoder fuzz targets' shared body (fuzz/fuzz_targets/image/mod.rs, on the public API)
//! run on their seed corpora, each seed whole and cut short: pixels in the format's channels, the
//! empty image, or an error naming the node. This also keeps the harness compiling with the crate
//! (the fuzz workspace is built only by cargo-fuzz).
//! Requires the `image-decoder` feature (on by default).

#![cfg(feature = "image-decoder")]

#[path = "../fuzz/fuzz_targets/image/mod.rs"]
mod image;

use std::path::Path;

/// Each format's corpus folder and the signature its target puts in front of bytes that lack it.
const TARGETS: [(&str, &[u8]); 7] = [
    ("image_bmp", b"BM"),
    ("image_jpeg", b"\xff\xd8\xff"),
    ("image_jpeg2000", b"\xff\x4f\xff\x51"),
    ("image_png", b"\x89PNG\r\n\x1a\n"),
    ("image_pnm", b"P6 "),
    ("image_tiff", b"II*\0"),
    ("image_webp", b"RIFF\0\0\0\0WEBP"),
];

#[test]
fn every_seed_whole_and_cut_short_decodes_or_is_an_error_naming_the_node() {
    let corpus = Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz/corpus");
    for (target, signature) in TARGETS {
        let mut seeds: Vec<_> = std::fs::read_dir(corpus.join(target)).unwrap().map(|e| e.unwrap().path()).collect();
        seeds.sort();
        assert!(!seeds.is_empty(), "{target}: no seeds");
        for seed in seeds {
            let data = std::fs::read(&seed).unwrap();
            for len in [data.len(), data.len() / 2, signature.len() + 1] {
                image::check(signature, &data[..len.min(data.len())]);
            }
        }
    }
}

/// A xorshift generator: the mutations below, reproducible from a seed.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

/// Values that decide header fields: sizes, counts, offsets at and past their limits.
const INTERESTING: [u32; 12] = [0, 1, 2, 0x7f, 0x80, 0xff, 0x100, 0x7fff, 0xffff, 0x1_0000, 0x7fff_ffff, 0xffff_ffff];

/// `data` changed by one to four mutations: bit flips, interesting values written over one, two or
/// four bytes (either byte order), chunks removed, repeated or inserted, cuts, splices with `other`.
fn mutate(rng: &mut Rng, data: &[u8], other: &[u8]) -> Vec<u8> {
    let mut d = data.to_vec();
    for _ in 0..1 + rng.below(4) {
        let len = d.len();
        match rng.below(7) {
            0 if len > 0 => {
                let i = rng.below(len);
                d[i] ^= 1 << rng.below(8);
            }
            1 if len > 0 => {
                let v = INTERESTING[rng.below(INTERESTING.len())];
                let width = [1, 2, 4][rng.below(3)];
                let bytes = if rng.below(2) == 0 { v.to_be_bytes() } else { v.to_le_bytes() };
                let i = rng.below(len);
                let src = if rng.below(2) == 0 { &bytes[4 - width..] } else { &bytes[..width] };
                for (k, b) in src.iter().enumerate() {
                    if let Some(slot) = d.get_mut(i + k) {
                        *slot = *b;
                    }
                }
            }
            2 if len > 1 => {
                let (a, n) = (rng.below(len), 1 + rng.below(64));
                d.drain(a..(a + n).min(len));
            }
            3 if len > 0 => {
                let (a, n) = (rng.below(len), 1 + rng.below(256));
                let chunk: Vec<u8> = d[a..(a + n).min(len)].to_vec();
                let at = rng.below(len);
                d.splice(at..at, chunk);
            }
            4 => {
                let at = rng.below(len + 1);
                let fresh: Vec<u8> = (0..1 + rng.below(32)).map(|_| rng.next() as u8).collect();
                d.splice(at..at, fresh);
            }
            5 if len > 0 => d.truncate(rng.below(len)),
            6 if !other.is_empty() => {
                let (cut, from) = (rng.below(len + 1), rng.below(other.len()));
                d.truncate(cut);
                d.extend_from_slice(&other[from..]);
            }
            _ => {}
        }
    }
    d.truncate(1 << 20);
    d
}

/// A fuzz driver without coverage feedback, for machines without cargo-fuzz: mutated seeds of one
/// target (`FUZZ_TARGET`, e.g. `image_png`) through the targets' body for `FUZZ_SECONDS`, seeded by
/// `FUZZ_SEED`. Before each run the input is written to `FUZZ_OUT/<target>.last` (what an abort or
/// a hang leaves behind); an input that panics is kept as `FUZZ_OUT/<target>-crash-<n>` and the
/// test fails at the end. Run it under a bounded address space, as the libFuzzer targets:
/// `ulimit -v 4000000; FUZZ_TARGET=image_png FUZZ_SECONDS=180 FUZZ_OUT=/tmp/f cargo test --release
/// --test fuzz_image_seeds -- --ignored`.
#[test]
#[ignore = "a fuzz driver: run on purpose, see its docs"]
fn mutated_seeds() {
    let var = |k: &str| std::env::var(k).ok();
    let target = var("FUZZ_TARGET").expect("FUZZ_TARGET: one of the image targets");
    let (_, signature) = *TARGETS.iter().find(|(t, _)| *t == target).expect("an image target");
    let seconds: u64 = var("FUZZ_SECONDS").map_or(60, |s| s.parse().expect("FUZZ_SECONDS"));
    let mut rng = Rng(var("FUZZ_SEED").map_or(0x9e37_79b9_7f4a_7c15, |s| s.parse().expect("FUZZ_SEED")) | 1);
    let out = std::path::PathBuf::from(var("FUZZ_OUT").unwrap_or_else(|| "target/fuzz-out".into()));
    std::fs::create_dir_all(&out).unwrap();
    let corpus = Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz/corpus").join(&target);
    let seeds: Vec<Vec<u8>> =
        std::fs::read_dir(corpus).unwrap().map(|e| std::fs::read(e.unwrap().path()).unwrap()).collect();
    let start = std::time::Instant::now();
    let (mut runs, mut crashes) = (0u64, 0u64);
    std::panic::set_hook(Box::new(|_| {}));
    while start.elapsed().as_secs() < seconds {
        let a = &seeds[rng.below(seeds.len())];
        let b = &seeds[rng.below(seeds.len())];
        let data = mutate(&mut rng, a, b);
        std::fs::write(out.join(format!("{target}.last")), &data).unwrap();
        if std::panic::catch_unwind(|| image::check(signature, &data)).is_err() {
            std::fs::write(out.join(format!("{target}-crash-{crashes}")), &data).unwrap();
            crashes += 1;
        }
        runs += 1;
    }
    let _ = std::panic::take_hook();
    println!("{target}: {runs} runs in {} s, {crashes} panics", start.elapsed().as_secs());
    assert_eq!(crashes, 0, "{target}: inputs that panic are in {}", out.display());
}
