#![cfg(feature = "image-decoder")]
//! ONNX `ImageDecoder` (src/ops/image_decoder/): images of every format and variant decoded
//! exactly as Pillow decodes them (the fixtures of `tests/image_decoder/`, written by its
//! `generate.py`, and `generate_edge.py` for streams that bend the format: no DHT, a 17-bit Huffman
//! code, a TIFF IFD pointing to itself), in the three pixel formats; symbolic and constant shapes; hostile input (corrupt,
//! truncated, unknown, huge declared sizes, wrong tensors, mutated files) giving the specification's
//! empty image or an error naming the node, never a panic.

mod common;

use common::onnx_build::{Builder, A, D};
use common::{inferred, load_error};
use sliceops::Model;
use std::path::PathBuf;
use tract_onnx::pb::tensor_proto::DataType;
use tract_onnx::prelude::*;

fn fixtures_dir() -> PathBuf {
    PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/image_decoder"))
}

/// The fixtures' names (each `NAME.bin` with `NAME.rgb.npy` and `NAME.gray.npy`).
fn fixtures() -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(fixtures_dir())
        .unwrap()
        .filter_map(|e| e.unwrap().file_name().to_str().and_then(|n| n.strip_suffix(".bin")).map(String::from))
        .collect();
    names.sort();
    assert!(names.len() >= 22, "fixtures missing: {names:?}");
    names
}

fn fixture(name: &str) -> Vec<u8> {
    std::fs::read(fixtures_dir().join(format!("{name}.bin"))).unwrap()
}

/// A one-node model decoding its input `data` (1-D uint8 of length `n`) in `format`.
fn decoder(format: &str) -> Model {
    let b = Builder::new(20).input("data", DataType::Uint8, &[D::S("n")]).node(
        "ImageDecoder",
        "",
        "dec",
        &["data"],
        &["y"],
        vec![("pixel_format", A::S(Box::leak(format.to_string().into_boxed_str())))],
    );
    Model::load_bytes(&b.output("y").bytes()).unwrap()
}

fn run(model: &Model, bytes: &[u8]) -> anyhow::Result<Tensor> {
    Ok(model.run(vec![tensor1(bytes)])?.remove(0).1)
}

fn shape_of(model: &Model, bytes: &[u8]) -> Vec<usize> {
    run(model, bytes).unwrap().shape().to_vec()
}

#[test]
fn every_fixture_is_decoded_as_pillow_decodes_it() {
    let (rgb, bgr, grey) = (decoder("RGB"), decoder("BGR"), decoder("Grayscale"));
    let mut failures = vec![];
    for name in fixtures() {
        let data = fixture(&name);
        let want_rgb = sliceops::npy::read_npy(&fixtures_dir().join(format!("{name}.rgb.npy"))).unwrap();
        let want_grey = sliceops::npy::read_npy(&fixtures_dir().join(format!("{name}.gray.npy"))).unwrap();
        let rgb_values = want_rgb.try_as_plain_ram().unwrap().as_slice::<u8>().unwrap().to_vec();
        let bgr_values: Vec<u8> = rgb_values.chunks(3).flat_map(|p| [p[2], p[1], p[0]]).collect();
        let want_bgr = tract_ndarray::ArrayD::from_shape_vec(want_rgb.shape(), bgr_values).unwrap().into_tensor();
        for (format, model, want) in
            [("RGB", &rgb, &want_rgb), ("BGR", &bgr, &want_bgr), ("Grayscale", &grey, &want_grey)]
        {
            match run(model, &data) {
                Ok(got) if &got == want => {}
                Ok(got) => {
                    failures.push(format!("{name} {format}: {:?}, not Pillow's {:?}", got.shape(), want.shape()))
                }
                Err(e) => failures.push(format!("{name} {format}: {e:#}")),
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn arithmetic_coded_jpeg_is_refused_by_name() {
    // The baseline frame marker (SOF0) made SOF9, arithmetic coding.
    let mut data = fixture("jpeg_444");
    let at = data.windows(2).position(|w| w == [0xFF, 0xC0]).unwrap();
    data[at + 1] = 0xC9;
    let e = format!("{:#}", run(&decoder("RGB"), &data).unwrap_err());
    assert!(e.contains("node 'dec' (ImageDecoder)") && e.contains("arithmetic-coded JPEG"), "{e}");
}

#[test]
fn dims_are_symbols_of_the_node_and_channels_exact() {
    let bytes = |format: &'static str| {
        Builder::new(20)
            .input("data", DataType::Uint8, &[D::S("n")])
            .node("ImageDecoder", "", "dec", &["data"], &["y"], vec![("pixel_format", A::S(format))])
            .output("y")
            .bytes()
    };
    assert_eq!(inferred(&bytes("BGR"), &["y"]), ["U8 [dec_height, dec_width, 3]"]);
    assert_eq!(inferred(&bytes("Grayscale"), &["y"]), ["U8 [dec_height, dec_width, 1]"]);
}

#[test]
fn a_constant_image_has_exact_dims() {
    let data = fixture("jpeg_422");
    let b = Builder::new(20)
        .init("data", DataType::Uint8, &[data.len() as i64], data)
        .node("ImageDecoder", "", "dec", &["data"], &["y"], vec![("pixel_format", A::S("Grayscale"))])
        .output("y");
    assert_eq!(inferred(&b.bytes(), &["y"]), ["U8 [11, 19, 1]"]);
}

#[test]
fn undecodable_streams_give_the_empty_image() {
    let (rgb, grey) = (decoder("RGB"), decoder("Grayscale"));
    let png = fixture("png_palette");
    let jpeg = fixture("jpeg_444");
    let mut flipped = jpeg.clone();
    let n = flipped.len();
    flipped[n / 2..n - 2].iter_mut().for_each(|b| *b = 0xFF);
    for (what, data) in [
        ("nothing", vec![]),
        ("unknown", b"GIF89a not decoded".to_vec()),
        ("truncated PNG", png[..png.len() / 2].to_vec()),
        ("truncated JPEG", jpeg[..jpeg.len() - 40].to_vec()),
        ("JPEG scan cut by a marker", flipped),
        ("bare BMP signature", b"BM".to_vec()),
        ("PNM without a raster", b"P6 4 4 255\n".to_vec()),
    ] {
        assert_eq!(shape_of(&rgb, &data), [0, 0, 3], "{what}");
        assert_eq!(shape_of(&grey, &data), [0, 0, 1], "{what}");
    }
}

/// A BMP header declaring `width` x `height` 24-bit pixels, and no pixels.
fn bmp_header(width: i32, height: i32) -> Vec<u8> {
    let mut b = b"BM".to_vec();
    b.extend_from_slice(&[0; 8]);
    b.extend_from_slice(&54u32.to_le_bytes());
    b.extend_from_slice(&40u32.to_le_bytes());
    b.extend_from_slice(&width.to_le_bytes());
    b.extend_from_slice(&height.to_le_bytes());
    b.extend_from_slice(&1u16.to_le_bytes());
    b.extend_from_slice(&24u16.to_le_bytes());
    b.extend_from_slice(&[0; 24]);
    b
}

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

/// A PNG signature and a valid IHDR declaring `width` x `height` 8-bit RGB pixels, and nothing else.
fn png_header(width: u32, height: u32) -> Vec<u8> {
    let mut chunk = b"IHDR".to_vec();
    chunk.extend_from_slice(&width.to_be_bytes());
    chunk.extend_from_slice(&height.to_be_bytes());
    chunk.extend_from_slice(&[8, 2, 0, 0, 0]);
    let mut b = b"\x89PNG\r\n\x1a\n".to_vec();
    b.extend_from_slice(&13u32.to_be_bytes());
    b.extend_from_slice(&chunk);
    b.extend_from_slice(&crc32(&chunk).to_be_bytes());
    b
}

#[test]
fn huge_declared_sizes_are_refused_before_decoding() {
    let rgb = decoder("RGB");
    let huge = 2_000_000_000;
    for (what, data) in [
        ("BMP", bmp_header(huge, huge)),
        ("BMP top-down", bmp_header(huge, -huge)),
        ("PNG", png_header(huge as u32, huge as u32)),
        ("PNM", format!("P6 {huge} {huge} 255\n").into_bytes()),
        ("PBM", format!("P4 {huge} {huge}\n").into_bytes()),
    ] {
        let e = format!("{:#}", run(&rgb, &data).unwrap_err());
        let want = "the image declares 2000000000x2000000000 pixels (4000000000000000000), over the \
                    decompression-bomb limit of 178956970 pixels";
        assert!(e.contains("node 'dec' (ImageDecoder)") && e.contains(want), "{what}: {e}");
    }
}

#[test]
fn malformed_nodes_and_inputs_are_errors_naming_the_node() {
    let with = |format: &'static str, dt: DataType, dims: &[D]| {
        Builder::new(20)
            .input("data", dt, dims)
            .node("ImageDecoder", "", "dec", &["data"], &["y"], vec![("pixel_format", A::S(format))])
            .output("y")
            .bytes()
    };
    let e = load_error(&with("RGBA", DataType::Uint8, &[D::S("n")]));
    assert!(e.contains("node 'dec' (ImageDecoder)") && e.contains("pixel_format is \"RGBA\""), "{e}");
    let e = load_error(&with("RGB", DataType::Float, &[D::S("n")]));
    assert!(e.contains("'dec'") && e.contains("1-D uint8 tensor, got F32 of rank 1"), "{e}");
    let e = load_error(&with("RGB", DataType::Uint8, &[D::N(2), D::S("n")]));
    assert!(e.contains("'dec'") && e.contains("1-D uint8 tensor, got U8 of rank 2"), "{e}");
}

/// Every fixture truncated and with bytes changed (a fixed pseudo-random walk): each run gives an
/// image or an error, never a panic.
#[test]
fn mutated_files_never_panic() {
    let model = decoder("RGB");
    let mut state = 0x9E37_79B9_7F4A_7C15u64;
    let mut next = move |n: usize| {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        (state % n as u64) as usize
    };
    for name in fixtures() {
        let data = fixture(&name);
        for round in 0..24 {
            let mut m = data.clone();
            if round % 3 == 0 {
                m.truncate(next(m.len()));
            } else {
                for _ in 0..1 + next(8) {
                    let at = next(m.len());
                    m[at] = next(256) as u8;
                }
            }
            if let Err(e) = run(&model, &m) {
                let text = format!("{e:#}");
                assert!(text.contains("'dec'") && !text.contains("panicked"), "{name} round {round}: {text}");
            }
        }
    }
}
