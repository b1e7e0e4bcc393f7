//! Hostile inputs, image decoders (issue 30, points 1 and 2): small files declaring huge images
//! (decompression bombs) are refused from their header, before the decoders allocate, with one error
//! naming the node; images under Pillow's pixel limit whose decoding needs more memory than the
//! process can allocate are refused the same way; a constant image is decoded while analysing only
//! within the analysis budget. Every CLI call runs under a 1 GiB address-space limit (the bombs
//! asked for 3.5 to 38 GB) and the CLI deadline.

mod common;

use common::cli::{scratch, sliceops_limited, Limits};
use common::onnx_build::{Builder, A, D};
use tract_onnx::pb::tensor_proto::DataType;
use tract_onnx::prelude::*;

const LIMIT: Limits = Limits { file_size: None, address_space: Some(1 << 30) };

fn crc32(data: &[u8]) -> u32 {
    let mut crc = !0u32;
    for &byte in data {
        crc ^= byte as u32;
        for _ in 0..8 {
            crc = if crc & 1 == 1 { (crc >> 1) ^ 0xEDB8_8320 } else { crc >> 1 };
        }
    }
    !crc
}

fn png_chunk(kind: &[u8], body: &[u8]) -> Vec<u8> {
    let mut chunk = kind.to_vec();
    chunk.extend_from_slice(body);
    let mut out = (body.len() as u32).to_be_bytes().to_vec();
    out.extend_from_slice(&chunk);
    out.extend_from_slice(&crc32(&chunk).to_be_bytes());
    out
}

/// A 1-bit grey PNG of `side` x `side` pixels, with an IDAT of stored (uncompressed) zlib blocks
/// holding its first rows.
fn png_bilevel(side: u32) -> Vec<u8> {
    let mut ihdr = side.to_be_bytes().to_vec();
    ihdr.extend_from_slice(&side.to_be_bytes());
    ihdr.extend_from_slice(&[1, 0, 0, 0, 0]);
    let row = 1 + side.div_ceil(8) as usize;
    let raw = vec![0u8; row * 40];
    let mut z = vec![0x78, 0x01];
    for (i, block) in raw.chunks(65535).enumerate() {
        let last = (i + 1) * 65535 >= raw.len();
        z.push(u8::from(last));
        z.extend_from_slice(&(block.len() as u16).to_le_bytes());
        z.extend_from_slice(&(!(block.len() as u16)).to_le_bytes());
        z.extend_from_slice(block);
    }
    let mut out = b"\x89PNG\r\n\x1a\n".to_vec();
    out.extend(png_chunk(b"IHDR", &ihdr));
    out.extend(png_chunk(b"IDAT", &z));
    out.extend(png_chunk(b"IEND", &[]));
    out
}

/// A progressive (`SOF2`) or baseline (`SOF0`) YCbCr JPEG header of `width` x `height`, with a
/// quantization table and a first DC scan of a few bytes (the standard Huffman tables implied).
fn jpeg(width: u16, height: u16, progressive: bool) -> Vec<u8> {
    let mut out = vec![0xFF, 0xD8];
    out.extend_from_slice(&[0xFF, 0xDB, 0, 67, 0]);
    out.extend_from_slice(&[1; 64]);
    out.extend_from_slice(&[0xFF, if progressive { 0xC2 } else { 0xC0 }, 0, 17, 8]);
    out.extend_from_slice(&height.to_be_bytes());
    out.extend_from_slice(&width.to_be_bytes());
    out.extend_from_slice(&[3, 1, 0x11, 0, 2, 0x11, 0, 3, 0x11, 0]);
    let (ss, se) = if progressive { (0, 0) } else { (0, 63) };
    out.extend_from_slice(&[0xFF, 0xDA, 0, 12, 3, 1, 0x00, 2, 0x11, 3, 0x11, ss, se, 0]);
    out.extend_from_slice(&[0x00; 2000]);
    out.extend_from_slice(&[0xFF, 0xD9]);
    out
}

/// A bare JPEG 2000 codestream: `SIZ` of `side` x `side` grey pixels in tiles of `tile` x `tile`,
/// a `COD` of 5 levels with 4x4 code blocks and precincts of 2^`precinct` when given, a `QCD`, then
/// one tile part with no data.
fn j2k(side: u32, tile: u32, precinct: Option<u8>) -> Vec<u8> {
    let mut s = vec![0xFF, 0x4F, 0xFF, 0x51, 0, 41, 0, 0];
    for v in [side, side, 0, 0, tile, tile, 0, 0] {
        s.extend_from_slice(&v.to_be_bytes());
    }
    s.extend_from_slice(&[0, 1, 7, 1, 1]);
    let levels = 5u8;
    let precincts: Vec<u8> = precinct.map(|p| vec![p << 4 | p; levels as usize + 1]).unwrap_or_default();
    s.extend_from_slice(&[0xFF, 0x52, 0, 12 + precincts.len() as u8, u8::from(precinct.is_some()), 0, 0, 1, 0]);
    s.extend_from_slice(&[levels, 0, 0, 0, 1]);
    s.extend_from_slice(&precincts);
    let qcd: Vec<u8> = std::iter::once(0x40).chain(std::iter::repeat_n(0x48, 3 * levels as usize + 1)).collect();
    s.extend_from_slice(&[0xFF, 0x5C, 0, 2 + qcd.len() as u8]);
    s.extend_from_slice(&qcd);
    s.extend_from_slice(&[0xFF, 0x90, 0, 10, 0, 0, 0, 0, 0, 14, 0, 1]);
    s.extend_from_slice(&[0xFF, 0x93, 0, 0, 0xFF, 0xD9]);
    s
}

/// A one-node model decoding `data`: an input (`None`) or a constant.
fn decoder(data: Option<&[u8]>) -> Vec<u8> {
    let b = Builder::new(20);
    let b = match data {
        Some(d) => b.init("data", DataType::Uint8, &[d.len() as i64], d.to_vec()),
        None => b.input("data", DataType::Uint8, &[D::S("n")]),
    };
    b.node("ImageDecoder", "", "dec", &["data"], &["y"], vec![("pixel_format", A::S("RGB"))]).output("y").bytes()
}

/// Each bomb: name, bytes, and what the one error line says after the node.
fn bombs() -> Vec<(&'static str, Vec<u8>, &'static str)> {
    vec![
        (
            "progressive_jpeg_25000",
            jpeg(25000, 25000, true),
            "the image declares 25000x25000 pixels (625000000), over the decompression-bomb limit of 178956970 pixels",
        ),
        (
            "baseline_jpeg_30000",
            jpeg(30000, 30000, false),
            "the image declares 30000x30000 pixels (900000000), over the decompression-bomb limit of 178956970 pixels",
        ),
        (
            "bilevel_png_50000",
            png_bilevel(50000),
            "the image declares 50000x50000 pixels (2500000000), over the decompression-bomb limit of 178956970 pixels",
        ),
        (
            "j2k_20000",
            j2k(20000, 20000, None),
            "the image declares 20000x20000 pixels (400000000), over the decompression-bomb limit of 178956970 pixels",
        ),
        // Under the pixel limit, over what 1 GiB holds: three 13000x13000 planes of 2-byte coefficients.
        (
            "progressive_jpeg_13000",
            jpeg(13000, 13000, true),
            "decoding the image needs more memory than this process can allocate",
        ),
        // 62,500 tiles of 16x16 pixels with 2x2 precincts: millions of code blocks and precincts.
        ("j2k_4000_small_precincts", j2k(4000, 16, Some(1)), "the JPEG 2000 code blocks after"),
    ]
}

fn write(dir: &std::path::Path, name: &str, bytes: &[u8]) -> String {
    let path = dir.join(name);
    std::fs::write(&path, bytes).unwrap();
    path.display().to_string()
}

#[test]
fn bombs_are_refused_from_their_header_when_run() {
    let d = scratch("hostile_images", "bombs_are_refused_from_their_header_when_run");
    let model = write(&d, "decoder.onnx", &decoder(None));
    for (name, bytes, want) in bombs() {
        let npy = d.join(format!("{name}.npy"));
        sliceops::npy::write_npy(&npy, &tensor1(&bytes)).unwrap();
        let out = d.join(format!("{name}.out")).display().to_string();
        let run = sliceops_limited(
            &["run", &model, "--input", &format!("data={}", npy.display()), "--output-dir", &out],
            LIMIT,
        );
        let line = run.error();
        assert!(line.starts_with("error: node 'dec' (ImageDecoder): ") && line.contains(want), "{name}: {line}");
        assert!(!std::path::Path::new(&out).join("y.npy").exists(), "{name}");
    }
}

#[test]
fn constant_bombs_are_refused_by_infer_and_fold_and_large_images_decoded_later() {
    let d = scratch("hostile_images", "constant_bombs_are_refused_by_infer_and_fold_and_large_images_decoded_later");
    for (name, bytes, want) in bombs() {
        let model = write(&d, &format!("{name}.onnx"), &decoder(Some(&bytes)));
        let folded = d.join(format!("{name}.folded.onnx")).display().to_string();
        if want.starts_with("the image declares") {
            for args in [vec!["infer", &model], vec!["fold", &model, "-o", &folded]] {
                let run = sliceops_limited(&args, LIMIT);
                let line = run.error();
                assert!(
                    line.starts_with("error: node 'dec' (ImageDecoder): ") && line.contains(want),
                    "{name}: {line}"
                );
            }
        } else {
            // Over the analysis budget: typed with the node's own symbols, decoded (and refused) when run.
            let run = sliceops_limited(&["infer", &model], LIMIT);
            run.ok();
            assert!(
                run.stdout.lines().any(|l| l.trim_end() == "y     uint8  [dec_height, dec_width, 3]"),
                "{name}\n{run:#?}"
            );
        }
    }
}

/// A constant image within the analysis budget still gets its exact dims; one past it (whose decoding
/// takes more than 4 MiB) gets symbols, and both run to Pillow's pixels.
#[test]
fn constant_images_are_decoded_while_analysing_within_the_budget() {
    let small = std::fs::read(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/image_decoder/png_palette.bin")).unwrap();
    let facts = sliceops::Model::load_bytes(&decoder(Some(&small))).unwrap().infer().unwrap();
    let y = facts.iter().find(|f| f.name == "y").unwrap();
    assert_eq!(y.shape, [11.to_dim(), 19.to_dim(), 3.to_dim()]);
    // 1024x1024 grey PNG rows of zeros (stored zlib): its 1 MiB of samples and the 6 MiB of output.
    let mut ihdr = 1024u32.to_be_bytes().to_vec();
    ihdr.extend_from_slice(&1024u32.to_be_bytes());
    ihdr.extend_from_slice(&[8, 0, 0, 0, 0]);
    let raw = vec![0u8; 1025 * 1024];
    let mut z = vec![0x78, 0x01];
    let blocks: Vec<&[u8]> = raw.chunks(65535).collect();
    for (i, block) in blocks.iter().enumerate() {
        z.push(u8::from(i + 1 == blocks.len()));
        z.extend_from_slice(&(block.len() as u16).to_le_bytes());
        z.extend_from_slice(&(!(block.len() as u16)).to_le_bytes());
        z.extend_from_slice(block);
    }
    let adler = {
        let (mut a, mut b) = (1u32, 0u32);
        for &x in &raw {
            a = (a + x as u32) % 65521;
            b = (b + a) % 65521;
        }
        b << 16 | a
    };
    z.extend_from_slice(&adler.to_be_bytes());
    let mut png = b"\x89PNG\r\n\x1a\n".to_vec();
    png.extend(png_chunk(b"IHDR", &ihdr));
    png.extend(png_chunk(b"IDAT", &z));
    png.extend(png_chunk(b"IEND", &[]));
    let model = sliceops::Model::load_bytes(&decoder(Some(&png))).unwrap();
    let facts = model.infer().unwrap();
    let y = facts.iter().find(|f| f.name == "y").unwrap();
    let dims: Vec<String> = y.shape.iter().map(sliceops::format_dim).collect();
    assert_eq!(dims, ["dec_height", "dec_width", "3"]);
    let out = model.run(vec![]).unwrap().remove(0).1;
    assert_eq!(out.shape(), [1024, 1024, 3]);
    assert!(out.try_as_plain_ram().unwrap().as_slice::<u8>().unwrap().iter().all(|&v| v == 0));
}

/// JPEG 2000 tile counts past what a codestream may hold give the empty image, as any invalid stream.
#[test]
fn too_many_jpeg2000_tiles_are_an_invalid_stream() {
    let d = scratch("hostile_images", "too_many_jpeg2000_tiles_are_an_invalid_stream");
    let model = write(&d, "decoder.onnx", &decoder(None));
    let npy = d.join("tiles.npy");
    sliceops::npy::write_npy(&npy, &tensor1(&j2k(4000, 1, None))).unwrap();
    let out = d.join("out");
    let args =
        ["run", &model, "--input", &format!("data={}", npy.display()), "--output-dir", &out.display().to_string()];
    sliceops_limited(&args, LIMIT).ok();
    let y = sliceops::npy::read_npy(&out.join("y.npy")).unwrap();
    assert_eq!(y.shape(), [0, 0, 3]);
}
