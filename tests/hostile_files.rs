//! Hostile files, part 2 (issue 15): `.npy` headers with one answer, atomic writes (a failed write
//! leaves the target untouched and no temporary file), only regular files read, bounded sizes,
//! external data and `uint64_data` initializers, write-back without dangling references, unique node
//! names in linear time, hostile dim expressions. Every test is bounded: small generated files,
//! deadlines on every CLI call, resource limits where the point is memory or file size.

mod common;

use common::cli::{files_in, scratch, sliceops, sliceops_limited, Limits};
use common::onnx_build::{chain_model, Builder, D};
use std::path::{Path, PathBuf};
use tract_onnx::pb::tensor_proto::DataType;
use tract_onnx::prelude::*;

fn dir(test: &str) -> PathBuf {
    scratch("hostile_files", test)
}

/// A version 1.0 `.npy` file with the given header text and data.
fn npy_with_header(text: &str, data: &[u8]) -> Vec<u8> {
    let mut out = b"\x93NUMPY\x01\x00".to_vec();
    out.extend((text.len() as u16).to_le_bytes());
    out.extend(text.as_bytes());
    out.extend(data);
    out
}

/// `.npy` bytes of a tensor, written by the crate.
fn npy_of(t: &Tensor) -> Vec<u8> {
    let mut bytes = vec![];
    sliceops::npy::write_npy_to(&mut bytes, t).unwrap();
    bytes
}

/// `y = x[1::2]` over float [N] (ONNX Slice).
fn half_model() -> Vec<u8> {
    Builder::new(13)
        .input("x", DataType::Float, &[D::S("N")])
        .init_i64("starts", &[1])
        .init_i64("ends", &[i64::MAX])
        .init_i64("axes", &[0])
        .init_i64("steps", &[2])
        .node("Slice", "", "slice", &["x", "starts", "ends", "axes", "steps"], &["y"], vec![])
        .output("y")
        .bytes()
}

fn f32s(n: usize) -> Tensor {
    tract_ndarray::Array1::from_iter((0..n).map(|v| v as f32)).into_tensor()
}

fn path_arg(p: &Path) -> String {
    p.display().to_string()
}

/// `sliceops run MODEL --input x=X --output-dir OUT`, as the CLI ran it.
fn run_x(model: &Path, x: &Path, out: &Path) -> common::cli::Run {
    sliceops(&["run", &path_arg(model), "--input", &format!("x={}", x.display()), "--output-dir", &path_arg(out)])
}

/// The f32 values of `dir/y.npy`, the output a run wrote.
fn y_values(dir: &Path) -> Vec<f32> {
    let y = sliceops::npy::read_npy(&dir.join("y.npy")).unwrap();
    y.try_as_plain_ram().unwrap().as_slice::<f32>().unwrap().to_vec()
}

// ------------------------------------------------------------------------------------------------
// .npy: one parser, one answer.

#[test]
fn npy_with_a_duplicated_shape_is_refused_by_the_cli() {
    let d = dir("npy_with_a_duplicated_shape_is_refused_by_the_cli");
    let model = d.join("model.onnx");
    std::fs::write(&model, half_model()).unwrap();
    // The first shape matches the data; the second claims 4 TB.
    let x = d.join("x.npy");
    let text = "{'descr': '<f4', 'fortran_order': False, 'shape': (4,), 'shape': (1099511627776,), }";
    std::fs::write(&x, npy_with_header(text, &[0; 16])).unwrap();
    let out = d.join("out");
    let run = run_x(&model, &x, &out);
    assert_eq!(run.error(), format!("error: input 'x': {}: the .npy header has the key 'shape' twice", x.display()));
    assert!(!out.exists());
}

#[test]
fn npy_inputs_that_are_not_regular_files_are_refused() {
    let d = dir("npy_inputs_that_are_not_regular_files_are_refused");
    let model = d.join("model.onnx");
    std::fs::write(&model, half_model()).unwrap();
    let fifo = d.join("fifo.npy");
    let c = std::ffi::CString::new(fifo.as_os_str().as_encoded_bytes()).unwrap();
    // Safety: mkfifo reads the NUL-terminated path for the duration of the call.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    for (path, what) in [(fifo.as_path(), "a named pipe (FIFO)"), (Path::new("/dev/zero"), "a character device")] {
        let run = sliceops(&["run", &path_arg(&model), "--input", &format!("x={}", path.display())]);
        assert_eq!(
            run.error(),
            format!("error: input 'x': cannot read {}: it is {what}, not a regular file", path.display())
        );
    }
}

#[test]
fn every_fixture_npy_is_rewritten_byte_for_byte() {
    // numpy wrote these; our writer must give the same bytes for what our reader read.
    let mut count = 0;
    for f in common::fixtures::fixtures() {
        for sub in ["inputs", "expected"] {
            let Ok(entries) = std::fs::read_dir(f.dir().join(sub)) else { continue };
            for e in entries {
                let path = e.unwrap().path();
                let original = std::fs::read(&path).unwrap();
                let t = sliceops::npy::read_npy(&path).unwrap();
                assert_eq!(npy_of(&t), original, "{}", path.display());
                count += 1;
            }
        }
    }
    assert!(count > 100, "only {count} fixture files");
}

/// The peak resident memory of this process, or of its largest waited-for child, in KiB.
fn max_rss_kib(who: libc::c_int) -> i64 {
    // Safety: getrusage fills the zeroed struct it is given and reads nothing else.
    unsafe {
        let mut usage: libc::rusage = std::mem::zeroed();
        assert_eq!(libc::getrusage(who, &mut usage), 0);
        usage.ru_maxrss
    }
}

/// This process's peak resident memory since it started its program (`VmHWM`), in KiB. Unlike
/// `getrusage`, it does not carry over the parent's peak across `fork` and `exec`.
fn peak_rss_kib() -> i64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let line = status.lines().find_map(|l| l.strip_prefix("VmHWM:")).unwrap();
    line.trim().trim_end_matches("kB").trim().parse().unwrap()
}

const CHILD: &str = "SLICEOPS_HOSTILE_FILES_CHILD";

/// Runs one test of this binary in a child process, with [`CHILD`] set to `value` and the CLI calls'
/// deadline; returns its stdout.
fn in_child(test: &str, value: &str) -> String {
    let mut command = std::process::Command::new(std::env::current_exe().unwrap());
    command.args([test, "--exact", "--nocapture", "--test-threads=1"]).env(CHILD, value);
    let run = common::cli::run_command(command, Limits::default());
    assert_eq!(run.code, Some(0), "{run:#?}");
    run.stdout
}

/// The two numbers after `tag` in a child's output.
fn reported(stdout: &str, tag: &str) -> (i64, i64) {
    let line = stdout.lines().find_map(|l| l.strip_prefix(tag)).unwrap_or_else(|| panic!("no {tag} in {stdout}"));
    let v: Vec<i64> = line.split_whitespace().map(|s| s.parse().unwrap()).collect();
    (v[0], v[1])
}

/// 64 MiB of float32.
const BIG: usize = 16 << 20;

#[test]
fn reading_npy_holds_the_data_once() {
    if let Ok(path) = std::env::var(CHILD) {
        let before = peak_rss_kib();
        let t = sliceops::npy::read_npy(Path::new(&path)).unwrap();
        assert_eq!(t.len(), BIG);
        assert_eq!(t.try_as_plain_ram().unwrap().as_slice::<f32>().unwrap()[BIG - 1], (BIG - 1) as f32);
        println!("\nRSS {before} {}", peak_rss_kib());
        return;
    }
    let d = dir("reading_npy_holds_the_data_once");
    let x = d.join("x.npy");
    std::fs::write(&x, npy_of(&f32s(BIG))).unwrap();
    let (before, after) = reported(&in_child("reading_npy_holds_the_data_once", &path_arg(&x)), "RSS ");
    let data_kib = (BIG * 4 / 1024) as i64;
    let grown = after - before;
    assert!(grown <= data_kib + data_kib / 10, "reading {data_kib} KiB of data took {grown} KiB");
}

#[test]
fn run_holds_input_and_output_once() {
    if let Ok(spec) = std::env::var(CHILD) {
        // Two runs in turn, each peak read after it: a tiny input, then the big one.
        let (model, small, big, out) = {
            let p: Vec<&str> = spec.split('\n').collect();
            (p[0].to_string(), p[1].to_string(), p[2].to_string(), p[3].to_string())
        };
        sliceops(&["run", &model, "--input", &format!("x={small}"), "--output-dir", &out]).ok();
        let baseline = max_rss_kib(libc::RUSAGE_CHILDREN);
        sliceops(&["run", &model, "--input", &format!("x={big}"), "--output-dir", &out]).ok();
        // Each child's peak starts from its parent's (this process, small) at fork.
        println!("\nRSS {baseline} {}", max_rss_kib(libc::RUSAGE_CHILDREN));
        return;
    }
    let d = dir("run_holds_input_and_output_once");
    let model = d.join("model.onnx");
    std::fs::write(&model, half_model()).unwrap();
    let (small, big) = (d.join("small.npy"), d.join("big.npy"));
    std::fs::write(&small, npy_of(&f32s(16))).unwrap();
    std::fs::write(&big, npy_of(&f32s(BIG))).unwrap();
    let out = d.join("out");
    let spec = [&model, &small, &big, &out].map(|p| path_arg(p)).join("\n");
    let (baseline, peak) = reported(&in_child("run_holds_input_and_output_once", &spec), "RSS ");
    let y = y_values(&out);
    assert_eq!(y.len(), BIG / 2);
    assert_eq!(y[..3], [1.0, 3.0, 5.0]);
    let (input, output) = ((BIG * 4 / 1024) as i64, (BIG * 2 / 1024) as i64);
    let grown = peak - baseline;
    assert!(
        grown <= (input + output) + (input + output) / 10,
        "run on {input} KiB in, {output} KiB out grew by {grown} KiB over a tiny run"
    );
}

// ------------------------------------------------------------------------------------------------
// Atomic writes.

/// `y = x + w` over float [4096] with `w` a 16 KiB initializer, so that fold and lower write it back.
fn weighted_model() -> Vec<u8> {
    let w: Vec<f32> = (0..4096).map(|v| v as f32).collect();
    Builder::new(13)
        .input("x", DataType::Float, &[D::N(4096)])
        .init_f32("w", &[4096], &w)
        .node("Add", "", "add", &["x", "w"], &["y"], vec![])
        .output("y")
        .bytes()
}

/// The temporary files left in `dir` (`.NAME.tmp-PID-N`).
fn temporaries(dir: &Path) -> Vec<String> {
    files_in(dir).into_iter().filter(|n| n.contains(".tmp-")).collect()
}

#[test]
fn fold_and_lower_onto_their_input_under_a_file_size_limit_leave_it_whole() {
    let d = dir("fold_and_lower_onto_their_input_under_a_file_size_limit_leave_it_whole");
    let model = d.join("model.onnx");
    let original = weighted_model();
    for cmd in ["fold", "lower"] {
        std::fs::write(&model, &original).unwrap();
        let limits = Limits { file_size: Some(8 << 10), ..Limits::default() };
        let run = sliceops_limited(&[cmd, &path_arg(&model), "-o", &path_arg(&model)], limits);
        assert_eq!(
            run.error(),
            format!("error: cannot write {}: File too large (os error 27)", model.display()),
            "{cmd}"
        );
        assert_eq!(std::fs::read(&model).unwrap(), original, "{cmd}: the input changed");
        assert_eq!(temporaries(&d), Vec::<String>::new(), "{cmd}");
        // Without the limit, writing over the input works and gives a model that runs.
        sliceops(&[cmd, &path_arg(&model), "-o", &path_arg(&model)]).ok();
        let x = d.join("x.npy");
        std::fs::write(&x, npy_of(&f32s(4096))).unwrap();
        let out = d.join(format!("out_{cmd}"));
        run_x(&model, &x, &out).ok();
        assert_eq!(y_values(&out)[..3], [0.0, 2.0, 4.0], "{cmd}");
        assert_eq!(temporaries(&d), Vec::<String>::new(), "{cmd}");
    }
}

#[test]
fn run_outputs_are_all_or_nothing() {
    let d = dir("run_outputs_are_all_or_nothing");
    let model = d.join("model.onnx");
    std::fs::write(&model, half_model()).unwrap();
    let x = d.join("x.npy");
    std::fs::write(&x, npy_of(&f32s(8192))).unwrap();
    let out = d.join("out");
    std::fs::create_dir_all(&out).unwrap();
    std::fs::write(out.join("y.npy"), b"the previous output").unwrap();
    // The 16 KiB output does not fit under an 8 KiB limit: the previous file stays as it was.
    let limits = Limits { file_size: Some(8 << 10), ..Limits::default() };
    let args = ["run", &path_arg(&model), "--input", &format!("x={}", x.display()), "--output-dir", &path_arg(&out)];
    let run = sliceops_limited(&args, limits);
    assert_eq!(
        run.error(),
        format!("error: cannot write {}: File too large (os error 27)", out.join("y.npy").display())
    );
    assert_eq!(std::fs::read(out.join("y.npy")).unwrap(), b"the previous output");
    assert_eq!(files_in(&out), vec!["y.npy"]);
    sliceops(&args).ok();
    assert_eq!(
        std::fs::read(out.join("y.npy")).unwrap(),
        npy_of(&tract_ndarray::Array1::from_iter((0..4096).map(|v| (2 * v + 1) as f32)).into_tensor())
    );
    assert_eq!(files_in(&out), vec!["y.npy"]);
}

#[test]
fn a_string_output_writes_no_file_at_all() {
    let d = dir("a_string_output_writes_no_file_at_all");
    let strings = tract_onnx::pb::TensorProto {
        name: "s".into(),
        data_type: DataType::String as i32,
        dims: vec![2],
        string_data: vec![b"a".to_vec(), b"b".to_vec()],
        ..Default::default()
    };
    let model_bytes = Builder::new(13)
        .input("x", DataType::Float, &[D::N(2)])
        .initializer(strings)
        .node("Identity", "", "ix", &["x"], &["y"], vec![])
        .node("Identity", "", "is", &["s"], &["z"], vec![])
        .output("y")
        .output("z")
        .bytes();
    let model = d.join("model.onnx");
    std::fs::write(&model, model_bytes).unwrap();
    let x = d.join("x.npy");
    std::fs::write(&x, npy_of(&f32s(2))).unwrap();
    let out = d.join("out");
    let run = run_x(&model, &x, &out);
    assert_eq!(run.error(), "error: output 'z': a tensor of str cannot be written as .npy (only numbers and bool can)");
    assert!(!out.exists(), "the output folder was created: {:?}", files_in(&out));
}

// ------------------------------------------------------------------------------------------------
// Only regular files, bounded size.

fn mkfifo(path: &Path) {
    let c = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()).unwrap();
    // Safety: mkfifo reads the NUL-terminated path for the duration of the call.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0, "mkfifo {}", path.display());
}

#[test]
fn model_files_must_be_regular_and_at_most_2_gib() {
    let d = dir("model_files_must_be_regular_and_at_most_2_gib");
    let fifo = d.join("fifo.onnx");
    mkfifo(&fifo);
    // Sparse: 2 GiB of apparent size, no disk used.
    let big = d.join("big.onnx");
    std::fs::File::create(&big).unwrap().set_len(1 << 31).unwrap();
    let cases = [
        (PathBuf::from("/dev/zero"), "it is a character device, not a regular file".to_string()),
        (fifo.clone(), "it is a named pipe (FIFO), not a regular file".to_string()),
        (big.clone(), "it is 2147483648 bytes long; an ONNX model is at most 2 GiB (protobuf's limit)".to_string()),
    ];
    let out = d.join("out.onnx");
    for (path, why) in &cases {
        for args in [vec!["infer", &path_arg(path)], vec!["fold", &path_arg(path), "-o", &path_arg(&out)]] {
            let run = sliceops(&args);
            assert_eq!(run.error(), format!("error: cannot read {}: {why}", path.display()), "{args:?}");
        }
        let err = sliceops::Model::load_path(path).unwrap_err();
        assert_eq!(format!("{err:#}"), format!("cannot read {}: {why}", path.display()));
    }
    assert!(!out.exists());
}

/// An external-data initializer `w` (float [4]) with the given `external_data` entries.
fn external_w(entries: &[(&str, &str)]) -> tract_onnx::pb::TensorProto {
    tract_onnx::pb::TensorProto {
        name: "w".into(),
        data_type: DataType::Float as i32,
        dims: vec![4],
        data_location: Some(tract_onnx::pb::tensor_proto::DataLocation::External as i32),
        external_data: entries
            .iter()
            .map(|(k, v)| tract_onnx::pb::StringStringEntryProto { key: k.to_string(), value: v.to_string() })
            .collect(),
        ..Default::default()
    }
}

/// `y = x + w` over float [4], `w` external.
fn external_model(entries: &[(&str, &str)]) -> Vec<u8> {
    Builder::new(13)
        .input("x", DataType::Float, &[D::N(4)])
        .initializer(external_w(entries))
        .node("Add", "", "add", &["x", "w"], &["y"], vec![])
        .output("y")
        .bytes()
}

const W: [f32; 4] = [1.5, -2.0, 3.25, 8.0];

/// `w.bin`: 8 padding bytes, then `W`.
fn write_w_bin(d: &Path) {
    let mut bytes = vec![0xAB; 8];
    bytes.extend(W.iter().flat_map(|v| v.to_le_bytes()));
    std::fs::write(d.join("w.bin"), bytes).unwrap();
}

#[test]
fn external_data_is_read_by_us_after_checks() {
    let d = dir("external_data_is_read_by_us_after_checks");
    write_w_bin(&d);
    let x = d.join("x.npy");
    std::fs::write(&x, npy_of(&f32s(4))).unwrap();
    // Valid: through the CLI, and through the library from the path and from bytes with a folder.
    let model = d.join("model.onnx");
    let bytes = external_model(&[("location", "w.bin"), ("offset", "8"), ("length", "16")]);
    std::fs::write(&model, &bytes).unwrap();
    let out = d.join("out");
    run_x(&model, &x, &out).ok();
    let want: Vec<f32> = W.iter().enumerate().map(|(i, w)| i as f32 + w).collect();
    assert_eq!(y_values(&out), want);
    let m = sliceops::Model::load_bytes_in(&bytes, Some(&d)).unwrap();
    let y = m.run(vec![f32s(4)]).unwrap().remove(0).1;
    assert_eq!(y.try_as_plain_ram().unwrap().as_slice::<f32>().unwrap(), want);
    let err = sliceops::Model::load_bytes(&bytes).unwrap_err();
    assert_eq!(
        format!("{err:#}"),
        "tensor 'w' keeps its data in the external file 'w.bin', but the model was given without a folder to find it in"
    );
}

#[test]
fn external_data_locations_and_ranges_are_checked() {
    let d = dir("external_data_locations_and_ranges_are_checked");
    write_w_bin(&d);
    let folder = d.canonicalize().unwrap();
    mkfifo(&d.join("fifo.bin"));
    std::fs::create_dir_all(d.join("sub.bin")).unwrap();
    std::fs::write(d.join("empty.bin"), b"").unwrap();
    std::os::unix::fs::symlink("/etc/hostname", d.join("link.bin")).unwrap();
    let outside = d.parent().unwrap().join("outside.bin");
    std::fs::write(&outside, [0u8; 16]).unwrap();
    let fifo = folder.join("fifo.bin");
    let sub = folder.join("sub.bin");
    let cases: Vec<(Vec<(&str, &str)>, String)> = vec![
        (vec![("location", "fifo.bin")], format!("tensor 'w': external data: cannot read {}: it is a named pipe (FIFO), not a regular file", fifo.display())),
        (vec![("location", "sub.bin")], format!("tensor 'w': external data: cannot read {}: it is a directory, not a regular file", sub.display())),
        (vec![("location", "empty.bin")], "tensor 'w' needs 16 bytes of data but its external data has 0".into()),
        (vec![("location", "")], "tensor 'w' keeps its data in an external file but gives no location".into()),
        (vec![("offset", "0")], "tensor 'w' keeps its data in an external file but gives no location".into()),
        (vec![("location", "../outside.bin")], "tensor 'w': external data location '../outside.bin' must be a relative path inside the model's folder".into()),
        (vec![("location", "/etc/hostname")], "tensor 'w': external data location '/etc/hostname' must be a relative path inside the model's folder".into()),
        (vec![("location", "link.bin")], "tensor 'w': external data location 'link.bin' resolves outside the model's folder".into()),
        (vec![("location", "w.bin"), ("offset", "8"), ("length", "100")], "tensor 'w': its external data (offset 8, length 100) goes past the end of 'w.bin' (24 bytes)".into()),
        (vec![("location", "w.bin"), ("offset", "1000")], "tensor 'w': its external data offset 1000 is past the end of 'w.bin' (24 bytes)".into()),
        (vec![("location", "w.bin"), ("offset", "18446744073709551615"), ("length", "16")], "tensor 'w': its external data offset 18446744073709551615 is past the end of 'w.bin' (24 bytes)".into()),
        (vec![("location", "w.bin"), ("offset", "-8")], "tensor 'w': its external data offset '-8' is not a non-negative integer".into()),
        (vec![("location", "w.bin"), ("offset", "8"), ("length", "12")], "tensor 'w' needs 16 bytes of data but its external data has 12".into()),
        (vec![("location", "w.bin")], "tensor 'w' needs 16 bytes of data but its external data has 24".into()),
        (vec![("location", "w.bin"), ("location", "x.bin")], "tensor 'w': its external data gives 'location' twice".into()),
        (vec![("location", "nope.bin")], format!("tensor 'w': cannot find its external data file 'nope.bin' in {}: No such file or directory (os error 2)", folder.display())),
    ];
    let out = d.join("out.onnx");
    for (i, (entries, want)) in cases.iter().enumerate() {
        let model = d.join(format!("model{i}.onnx"));
        std::fs::write(&model, external_model(entries)).unwrap();
        for args in [vec!["infer", &path_arg(&model)], vec!["fold", &path_arg(&model), "-o", &path_arg(&out)]] {
            assert_eq!(sliceops(&args).error(), format!("error: {want}"), "{entries:?} {args:?}");
        }
    }
    assert!(!out.exists());
}

#[test]
fn external_data_in_a_constant_node_attribute_is_read_too() {
    let d = dir("external_data_in_a_constant_node_attribute_is_read_too");
    write_w_bin(&d);
    let mut node_bytes = Builder::new(13)
        .input("x", DataType::Float, &[D::N(4)])
        .node("Constant", "", "c", &[], &["w"], vec![])
        .node("Add", "", "add", &["x", "w"], &["y"], vec![])
        .output("y")
        .bytes();
    // The Constant's value: the external tensor.
    let mut model = <tract_onnx::pb::ModelProto as prost::Message>::decode(&*node_bytes).unwrap();
    let constant = &mut model.graph.as_mut().unwrap().node[0];
    constant.attribute.push(tract_onnx::pb::AttributeProto {
        name: "value".into(),
        r#type: tract_onnx::pb::attribute_proto::AttributeType::Tensor as i32,
        t: Some(external_w(&[("location", "w.bin"), ("offset", "8")])),
        ..Default::default()
    });
    node_bytes = prost::Message::encode_to_vec(&model);
    let m = sliceops::Model::load_bytes_in(&node_bytes, Some(&d)).unwrap();
    let y = m.run(vec![f32s(4)]).unwrap().remove(0).1;
    let want: Vec<f32> = W.iter().enumerate().map(|(i, w)| i as f32 + w).collect();
    assert_eq!(y.try_as_plain_ram().unwrap().as_slice::<f32>().unwrap(), want);
}

// ------------------------------------------------------------------------------------------------
// UINT32 / UINT64 initializers in uint64_data.

/// `y = Identity(u)`, `u` an initializer of `dt` with `dims`, its values in `uint64_data`.
fn uint_model(dt: DataType, dims: &[i64], values: &[u64]) -> Vec<u8> {
    let u = tract_onnx::pb::TensorProto {
        name: "u".into(),
        data_type: dt as i32,
        dims: dims.to_vec(),
        uint64_data: values.to_vec(),
        ..Default::default()
    };
    Builder::new(13).initializer(u).node("Identity", "", "id", &["u"], &["y"], vec![]).output("y").bytes()
}

#[test]
fn uint64_data_initializers_give_their_exact_values() {
    let d = dir("uint64_data_initializers_give_their_exact_values");
    let big = [0u64, (1 << 63) + 5, u64::MAX];
    let small = [7u64, u32::MAX as u64];
    let cases = [
        (uint_model(DataType::Uint64, &[3], &big), tract_ndarray::arr1(&big).into_tensor()),
        (uint_model(DataType::Uint32, &[2, 1], &small), tract_ndarray::arr2(&[[7u32], [u32::MAX]]).into_tensor()),
    ];
    for (i, (bytes, want)) in cases.iter().enumerate() {
        let got = sliceops::Model::load_bytes(bytes).unwrap().run(vec![]).unwrap().remove(0).1;
        assert_eq!(&got, want);
        let model = d.join(format!("model{i}.onnx"));
        std::fs::write(&model, bytes).unwrap();
        let out = d.join(format!("out{i}"));
        sliceops(&["run", &path_arg(&model), "--output-dir", &path_arg(&out)]).ok();
        assert_eq!(&sliceops::npy::read_npy(&out.join("y.npy")).unwrap(), want);
    }
    let err = |bytes: &[u8]| format!("{:#}", sliceops::Model::load_bytes(bytes).unwrap_err());
    assert_eq!(
        err(&uint_model(DataType::Uint32, &[1], &[1 << 32])),
        "tensor 'u' (uint32) holds 4294967296, out of range"
    );
    assert_eq!(
        err(&uint_model(DataType::Uint64, &[3], &[1, 2])),
        "tensor 'u' has dims [3] (3 elements) but holds 2 values"
    );
}

// ------------------------------------------------------------------------------------------------
// Write-back: no dangling external references.

/// Every tensor of a model (our proto types) that still points at external data, by name.
fn external_tensors(m: &sliceops::onnx::proto::ModelProto) -> Vec<String> {
    let g = m.graph.as_ref().unwrap();
    g.initializer
        .iter()
        .filter(|t| t.data_location == Some(1) || !t.external_data.is_empty())
        .map(|t| t.name.clone().unwrap_or_default())
        .collect()
}

#[test]
fn fold_and_lower_elsewhere_inline_external_data() {
    let d = dir("fold_and_lower_elsewhere_inline_external_data");
    let (a, b) = (d.join("a"), d.join("b"));
    std::fs::create_dir_all(&a).unwrap();
    std::fs::create_dir_all(&b).unwrap();
    write_w_bin(&a);
    // A decoy w.bin next to the output: a copied relative reference would silently read it.
    std::fs::write(b.join("w.bin"), [0u8; 24]).unwrap();
    let model = a.join("model.onnx");
    std::fs::write(&model, external_model(&[("location", "w.bin"), ("offset", "8"), ("length", "16")])).unwrap();
    let x = d.join("x.npy");
    std::fs::write(&x, npy_of(&f32s(4))).unwrap();
    let want: Vec<f32> = W.iter().enumerate().map(|(i, w)| i as f32 + w).collect();
    for cmd in ["fold", "lower"] {
        let out = b.join(format!("{cmd}.onnx"));
        let run = sliceops(&[cmd, &path_arg(&model), "-o", &path_arg(&out)]);
        run.ok();
        assert_eq!(run.stderr, "note: external data inlined (1 tensor)\n", "{cmd}");
        let written =
            <sliceops::onnx::proto::ModelProto as prost::Message>::decode(&*std::fs::read(&out).unwrap()).unwrap();
        assert_eq!(external_tensors(&written), Vec::<String>::new(), "{cmd}");
        let w = written.graph.as_ref().unwrap().initializer.iter().find(|t| t.name.as_deref() == Some("w")).unwrap();
        assert_eq!(w.raw_data.as_deref(), Some(&W.iter().flat_map(|v| v.to_le_bytes()).collect::<Vec<u8>>()[..]));
        let y_dir = d.join(format!("y_{cmd}"));
        run_x(&out, &x, &y_dir).ok();
        assert_eq!(y_values(&y_dir), want, "{cmd}");
    }
    // A model without external data gets no note.
    let plain = d.join("plain.onnx");
    std::fs::write(&plain, half_model()).unwrap();
    let run = sliceops(&["fold", &path_arg(&plain), "-o", &path_arg(&b.join("plain.onnx"))]);
    assert_eq!(run.ok().stderr, "");
}

// ------------------------------------------------------------------------------------------------
// Unique node names in linear time.

/// A chain of `n` Identity nodes over float [2], named by `name(i)`.
fn identity_chain(n: usize, name: impl Fn(usize) -> String) -> Vec<u8> {
    let mut b = Builder::new(13).input("x", DataType::Float, &[D::N(2)]);
    for i in 0..n {
        let input = if i == 0 { "x".to_string() } else { format!("v{}", i - 1) };
        let output = if i + 1 == n { "y".to_string() } else { format!("v{i}") };
        b = b.node("Identity", "", &name(i), &[&input], &[&output], vec![]);
    }
    b.output("y").bytes()
}

/// The node names tract was given (graph order, the input first).
fn node_names(bytes: &[u8]) -> Vec<String> {
    let m = sliceops::Model::load_bytes(bytes).unwrap();
    m.inference_model().nodes().iter().map(|n| n.name.clone()).collect()
}

#[test]
fn duplicate_node_names_are_renamed_as_before() {
    let names = ["n", "n", "n.1", "n", "", "m"];
    let bytes = identity_chain(names.len(), |i| names[i].to_string());
    // `n.1` is taken: the duplicates take `n.2` and `n.3`; the unnamed node is named after its output.
    assert_eq!(node_names(&bytes), ["x", "n", "n.2", "n.1", "n.3", "v4", "m"]);
}

#[test]
fn forty_thousand_nodes_sharing_one_name_load_quickly() {
    // Quadratic renaming took minutes here; the child process has a 60 s deadline.
    const N: usize = 40_000;
    if std::env::var(CHILD).is_ok() {
        let names = node_names(&identity_chain(N, |_| "same".to_string()));
        let want: Vec<String> =
            ["x".to_string(), "same".to_string()].into_iter().chain((1..N).map(|i| format!("same.{i}"))).collect();
        assert_eq!(names, want);
        println!("\nNAMES {} {}", names.len(), names.iter().collect::<std::collections::HashSet<_>>().len());
        return;
    }
    let stdout = in_child("forty_thousand_nodes_sharing_one_name_load_quickly", "1");
    assert_eq!(reported(&stdout, "NAMES "), (N as i64 + 1, N as i64 + 1));
}

#[test]
fn fifty_thousand_node_chains_are_analysed_in_linear_time() {
    // Translating node by node into one tract model was quadratic (tract compares each new node's
    // name with every node): `infer` on 50,000 Relus took over 120 s. The CLI calls have a 60 s
    // deadline; `benches/chain_scale.py` measures the scaling.
    let d = dir("fifty_thousand_node_chains_are_analysed_in_linear_time");
    for (kind, relu) in [("relu", true), ("slice", false)] {
        let model = d.join(format!("{kind}.onnx"));
        std::fs::write(&model, chain_model(50_000, |_| !relu)).unwrap();
        let run = sliceops(&["infer", &path_arg(&model)]);
        let rows: Vec<&str> = run.ok().stdout.lines().collect();
        assert_eq!(rows.len(), 50_002, "{kind}: header, x and every node output");
        assert_eq!(
            rows[rows.len() - 1].split_whitespace().collect::<Vec<_>>(),
            ["y", "float32", "[4,", "8]"],
            "{kind}"
        );
    }
}

// ------------------------------------------------------------------------------------------------
// Write-back keeps the fields of the current ONNX IR.

#[test]
fn device_configurations_survive_fold_and_lower() {
    use prost::Message;
    use sliceops::onnx::proto;
    let s = |v: &str| Some(v.to_string());
    let configuration = vec![proto::DeviceConfigurationProto {
        name: s("pair"),
        num_devices: Some(2),
        device: vec!["npu:0".into(), "npu:1".into()],
    }];
    let placement = vec![proto::NodeDeviceConfigurationProto {
        configuration_id: s("pair"),
        sharding_spec: vec![proto::ShardingSpecProto {
            tensor_name: s("xs"),
            device: vec![-1],
            index_to_device_group_map: vec![proto::IntIntListEntryProto { key: Some(-1), value: vec![0, 1] }],
            sharded_dim: vec![proto::ShardedDimProto {
                axis: Some(1),
                simple_sharding: vec![proto::SimpleShardedDimProto {
                    dim: Some(proto::simple_sharded_dim_proto::Dim::DimValue(4)),
                    num_shards: Some(2),
                }],
            }],
        }],
        pipeline_stage: Some(3),
    }];
    let int_attr = |name: &str, v: i64| proto::AttributeProto {
        name: s(name),
        r#type: Some(proto::attribute_proto::AttributeType::Int as i32),
        i: Some(v),
        ..Default::default()
    };
    let ints = |name: &str, v: &[i64]| proto::TensorProto {
        name: s(name),
        data_type: Some(DataType::Int64 as i32),
        dims: vec![v.len() as i64],
        int64_data: v.to_vec(),
        ..Default::default()
    };
    let value = |name: &str| {
        let dims = [
            proto::tensor_shape_proto::dimension::Value::DimParam("N".into()),
            proto::tensor_shape_proto::dimension::Value::DimValue(4),
        ];
        proto::ValueInfoProto {
            name: s(name),
            r#type: Some(proto::TypeProto {
                value: Some(proto::type_proto::Value::TensorType(proto::type_proto::Tensor {
                    elem_type: Some(DataType::Float as i32),
                    shape: Some(proto::TensorShapeProto {
                        dim: dims
                            .into_iter()
                            .map(|d| proto::tensor_shape_proto::Dimension { value: Some(d), denotation: None })
                            .collect(),
                    }),
                })),
                denotation: None,
            }),
            ..Default::default()
        }
    };
    let relu = proto::NodeProto {
        name: s("relu"),
        op_type: s("Relu"),
        domain: s(""),
        input: vec!["xs".into()],
        output: vec!["y".into()],
        device_configurations: placement.clone(),
        ..Default::default()
    };
    let model = proto::ModelProto {
        ir_version: Some(11),
        opset_import: vec![
            proto::OperatorSetIdProto { domain: s(""), version: Some(13) },
            proto::OperatorSetIdProto { domain: s("ai.sliceops"), version: Some(1) },
        ],
        configuration: configuration.clone(),
        graph: Some(proto::GraphProto {
            name: s("g"),
            input: vec![value("x")],
            output: vec![proto::ValueInfoProto { name: s("y"), ..Default::default() }],
            initializer: vec![ints("b", &[0]), ints("e", &[0]), ints("st", &[2])],
            node: vec![
                proto::NodeProto {
                    name: s("ss"),
                    op_type: s("StridedSlice"),
                    domain: s("ai.sliceops"),
                    input: vec!["x".into(), "b".into(), "e".into(), "st".into()],
                    output: vec!["xs".into()],
                    attribute: vec![int_attr("begin_mask", 1), int_attr("end_mask", 1)],
                    ..Default::default()
                },
                relu.clone(),
            ],
            ..Default::default()
        }),
        ..Default::default()
    };
    let bytes = model.encode_to_vec();
    let d = dir("device_configurations_survive_fold_and_lower");
    let path = d.join("model.onnx");
    std::fs::write(&path, &bytes).unwrap();
    for (cmd, f) in [
        ("fold", sliceops::fold::fold_bytes as fn(&[u8], Option<&Path>) -> anyhow::Result<Vec<u8>>),
        ("lower", sliceops::onnx::lower),
    ] {
        let out_path = d.join(format!("{cmd}.onnx"));
        sliceops(&[cmd, &path_arg(&path), "-o", &path_arg(&out_path)]).ok();
        for (how, out) in [("library", f(&bytes, Some(&d)).unwrap()), ("CLI", std::fs::read(&out_path).unwrap())] {
            let back = proto::ModelProto::decode(&*out).unwrap();
            let encoded =
                |c: &[proto::DeviceConfigurationProto]| c.iter().map(Message::encode_to_vec).collect::<Vec<_>>();
            assert_eq!(encoded(&back.configuration), encoded(&configuration), "{cmd} ({how})");
            let g = back.graph.unwrap();
            let kept = g.node.iter().find(|n| n.name.as_deref() == Some("relu")).unwrap();
            assert_eq!(kept.encode_to_vec(), relu.encode_to_vec(), "{cmd} ({how})");
            if cmd == "lower" {
                assert!(g.node.iter().all(|n| n.domain.as_deref() != Some("ai.sliceops")), "{how}");
            }
        }
    }
}

// ------------------------------------------------------------------------------------------------
// Hostile dim expressions on the command line.

#[test]
fn hostile_dim_expressions_are_quick_clear_errors() {
    let d = dir("hostile_dim_expressions_are_quick_clear_errors");
    let model = d.join("model.onnx");
    std::fs::write(&model, half_model()).unwrap();
    let m = path_arg(&model);
    let nested = format!("{}N{}", "(".repeat(10_000), ")".repeat(10_000));
    let minuses = format!("{}N", "-".repeat(100_000));
    let product = vec!["N"; 20_000].join("*");
    // A long text in an error: its first 60 characters and its length in bytes.
    let excerpt = |t: &str| match t.char_indices().nth(60) {
        None => t.to_string(),
        Some((cut, _)) => format!("{}... ({} bytes)", &t[..cut], t.len()),
    };
    let cases: Vec<(Vec<String>, String)> = vec![
        (
            vec!["--assume".into(), format!("{nested}>=2")],
            format!("bad assumption '{}': the expression is 20004 bytes long; the limit is 4096", excerpt(&format!("{nested}>=2"))),
        ),
        (
            vec!["--input-shape".into(), format!("x={minuses}")],
            format!("bad dim '{}' for input 'x': the expression is 100001 bytes long; the limit is 4096", excerpt(&minuses)),
        ),
        (
            vec!["--assume".into(), format!("{product}>=1")],
            format!("bad assumption '{}': the expression is 40002 bytes long; the limit is 4096", excerpt(&format!("{product}>=1"))),
        ),
        (
            vec!["--assume".into(), format!("{}N{}>=1", "(".repeat(65), ")".repeat(65))],
            format!("bad assumption '{}': nesting deeper than 64 parentheses at column 65", excerpt(&format!("{}N{}>=1", "(".repeat(65), ")".repeat(65)))),
        ),
        (
            vec!["--assume".into(), "N>=2 || N<=9".into()],
            "bad assumption 'N>=2 || N<=9': unexpected '||' at column 6: assumptions can only be joined with && (all of them hold)".into(),
        ),
        (
            vec!["--input-shape".into(), "x=N/M".into()],
            "bad dim 'N/M' for input 'x': division by a symbolic expression is not supported (at column 2): divide by a positive integer".into(),
        ),
    ];
    for (extra, want) in cases {
        let mut args = vec!["infer".to_string(), m.clone()];
        args.extend(extra);
        assert_eq!(sliceops(&args).error(), format!("error: {want}"));
    }
    // Valid ones still work: joined assumptions simplify the shapes.
    let run = sliceops(&["infer", &m, "--assume", "N>=2 && N<=100", "--format", "json"]);
    let json: serde_json::Value = serde_json::from_str(&run.ok().stdout).unwrap();
    assert_eq!(json["values"][1]["shape"][0], "N/2");
}

// ------------------------------------------------------------------------------------------------
// A graph output that is a graph input.

#[test]
fn a_graph_input_that_is_also_an_output_goes_through_every_command() {
    let d = dir("a_graph_input_that_is_also_an_output_goes_through_every_command");
    let x = tract_ndarray::arr2(&[[-2f32, -1., 0.], [1., 2., 3.]]).into_tensor();
    let relu = tract_ndarray::arr2(&[[0f32, 0., 0.], [1., 2., 3.]]).into_tensor();
    let x_path = d.join("x.npy");
    std::fs::write(&x_path, npy_of(&x)).unwrap();
    let x_arg = format!("x={}", x_path.display());
    let with_node = Builder::new(13)
        .input("x", DataType::Float, &[D::S("N"), D::N(3)])
        .node("Relu", "", "r", &["x"], &["y"], vec![])
        .output("x")
        .output("y")
        .bytes();
    let no_node = Builder::new(13).input("x", DataType::Float, &[D::S("N"), D::N(3)]).output("x").bytes();
    type Case<'t> = (&'static str, Vec<u8>, Vec<(&'static str, &'t Tensor)>);
    let cases: [Case; 2] =
        [("with_node", with_node, vec![("x", &x), ("y", &relu)]), ("no_node", no_node, vec![("x", &x)])];
    for (name, bytes, want) in cases {
        let model = d.join(format!("{name}.onnx"));
        std::fs::write(&model, bytes).unwrap();
        let infer = sliceops(&["infer", &path_arg(&model)]);
        let rows: Vec<String> =
            infer.ok().stdout.lines().skip(1).map(|l| l.split_whitespace().collect::<Vec<_>>().join(" ")).collect();
        let want_rows: Vec<String> = want.iter().map(|(n, _)| format!("{n} float32 [N, 3]")).collect();
        assert_eq!(rows, want_rows, "{name}: infer");
        // The model, then its folded and lowered forms: same outputs, the input's exactly as given.
        let folded = d.join(format!("{name}.folded.onnx"));
        let lowered = d.join(format!("{name}.lowered.onnx"));
        sliceops(&["fold", &path_arg(&model), "-o", &path_arg(&folded)]).ok();
        sliceops(&["lower", &path_arg(&model), "-o", &path_arg(&lowered)]).ok();
        for (form, path) in [("model", &model), ("folded", &folded), ("lowered", &lowered)] {
            let out = d.join(format!("{name}.{form}.out"));
            sliceops(&["run", &path_arg(path), "--input", &x_arg, "--output-dir", &path_arg(&out)]).ok();
            let names: Vec<String> = want.iter().map(|(n, _)| format!("{n}.npy")).collect();
            assert_eq!(files_in(&out), names, "{name} {form}");
            for (n, t) in &want {
                assert_eq!(std::fs::read(out.join(format!("{n}.npy"))).unwrap(), npy_of(t), "{name} {form}: {n}");
            }
        }
    }
}
