//! The `.npy` header parser against tables of headers (exact results and exact errors), and the reader
//! and writer on every dtype, byte order and layout.

use super::write::descr_for;
use super::*;

/// A version 1.0 file with the given header text and data.
fn npy(text: &str, data: &[u8]) -> Vec<u8> {
    let mut out = b"\x93NUMPY\x01\x00".to_vec();
    out.extend((text.len() as u16).to_le_bytes());
    out.extend(text.as_bytes());
    out.extend(data);
    out
}

fn header_error(text: &str) -> String {
    parse_header(&npy(text, &[])).unwrap_err().to_string()
}

#[test]
fn headers() {
    let ok = |text: &str| parse_header(&npy(text, &[])).unwrap();
    let text = "{'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), }          \n";
    let h = ok(text);
    assert_eq!(
        h,
        NpyHeader { descr: "<f4".into(), fortran_order: false, shape: vec![3, 4], data_offset: 10 + text.len() }
    );
    let h = ok("{\"shape\": (7,), \"descr\": \"|b1\", \"fortran_order\": True}");
    assert_eq!((h.descr.as_str(), h.fortran_order, h.shape), ("|b1", true, vec![7]));
    assert_eq!(ok("{'descr':'<i8','fortran_order':False,'shape':()}").shape, Vec::<usize>::new());
    // Python 2 wrote longs with an L.
    assert_eq!(ok("{'descr': '<i8', 'fortran_order': False, 'shape': (2L, 3L), }").shape, vec![2, 3]);
}

#[test]
fn header_errors() {
    let table: &[(&str, &str)] = &[
        (
            "{'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), 'shape': (1099511627776,), }",
            "the .npy header has the key 'shape' twice",
        ),
        (
            "{'descr': '<f4', 'descr': '<f8', 'fortran_order': False, 'shape': (3,), }",
            "the .npy header has the key 'descr' twice",
        ),
        (
            "{'descr': '<f4', 'fortran_order': False, 'fortran_order': True, 'shape': (3,), }",
            "the .npy header has the key 'fortran_order' twice",
        ),
        (
            "{'descr': '<f4', 'fortran_order': False, 'shape': (3,), 'extra': 1}",
            "the .npy header has an unknown key 'extra'",
        ),
        ("{'descr': '<f4', 'shape': (3,)}", "the .npy header has no 'fortran_order'"),
        ("{'fortran_order': False, 'shape': (3,)}", "the .npy header has no 'descr'"),
        ("{'descr': '<f4', 'fortran_order': False}", "the .npy header has no 'shape'"),
        (
            "{'descr': '<f4', 'fortran_order': False, 'shape': (-1, 4), }",
            "the .npy header's 'shape' has a negative dim",
        ),
        (
            "{'descr': '<f4', 'fortran_order': False, 'shape': (a,), }",
            "the .npy header's 'shape' is not a tuple of integers",
        ),
        (
            "{'descr': '<f4', 'fortran_order': False, 'shape': [3], }",
            "unreadable .npy header at byte 50: expected a string, True, False or a tuple",
        ),
        (
            "{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999999999999999,), }",
            "the .npy header's shape has a dim too large: 99999999999999999999999",
        ),
        (
            "{'descr': '<f4', 'fortran_order': 0, 'shape': (3,), }",
            "unreadable .npy header at byte 34: expected a string, True, False or a tuple",
        ),
        (
            "{'descr': '<f4', 'fortran_order': 'no', 'shape': (3,), }",
            "the .npy header's 'fortran_order' is not True or False",
        ),
        (
            "{'descr': 3, 'fortran_order': False, 'shape': (3,), }",
            "unreadable .npy header at byte 10: expected a string, True, False or a tuple",
        ),
        (
            "{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (3,), }",
            "the .npy header's 'descr' describes a structured dtype, which is not supported",
        ),
        (
            "{'descr': '<f4', 'fortran_order': False, 'shape': (3, 4)",
            "unreadable .npy header at byte 56: expected ',' or '}'",
        ),
        ("[1, 2, 3]", "unreadable .npy header at byte 0: expected '{'"),
        (
            "{'descr': '<\\x66', 'fortran_order': False, 'shape': (3,)}",
            "unreadable .npy header at byte 10: escape sequences are not supported",
        ),
        (
            "{'descr': '<f4', 'fortran_order': False, 'shape': (3,)} x",
            "unreadable .npy header at byte 56: unexpected text after the dict",
        ),
        ("{'descr': 'é'}", "the .npy header is not ASCII text"),
    ];
    let mut failures = vec![];
    for (text, want) in table {
        let got = header_error(text);
        if got != *want {
            failures.push(format!("{text:?}: want {want:?}, got {got:?}"));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    let many = format!("{{'descr': '<f4', 'fortran_order': False, 'shape': ({}), }}", vec!["1"; 1025].join(", "));
    assert_eq!(header_error(&many), "the .npy header's shape has more than 1024 dims");
}

#[test]
fn prefix_errors() {
    let err = |bytes: &[u8]| read_npy_bytes(bytes).unwrap_err().to_string();
    assert_eq!(err(b"hello, world\n"), "not a .npy file (it does not start with numpy's magic string)");
    assert_eq!(err(b"\x93NUM"), "not a .npy file (it does not start with numpy's magic string)");
    assert_eq!(err(b"\x93NUMPY\x04\x00\x10\x00\x00\x00"), "unsupported .npy format version 4.0");
    assert_eq!(err(b"\x93NUMPY\x01\x00\x10"), "truncated .npy file: it ends inside its header");
    let mut v2 = b"\x93NUMPY\x02\x00".to_vec();
    v2.extend(u32::MAX.to_le_bytes());
    assert_eq!(err(&v2), "the .npy header is 4294967295 bytes long; the limit is 65536");
    let mut v2 = b"\x93NUMPY\x02\x00".to_vec();
    v2.extend(100u32.to_le_bytes());
    v2.extend(b"{'descr'");
    assert_eq!(err(&v2), "truncated .npy header: it claims 112 bytes but the file holds 20");
}

#[test]
fn data_length_is_checked_before_allocating() {
    let text = "{'descr': '<f4', 'fortran_order': False, 'shape': (1099511627776, 1099511627776), }";
    assert_eq!(
        read_npy_bytes(&npy(text, &[0; 16])).unwrap_err().to_string(),
        "holds 16 bytes of data but its header says shape [1099511627776, 1099511627776] of <f4"
    );
    let text = "{'descr': '<f4', 'fortran_order': False, 'shape': (3,), }";
    assert_eq!(
        read_npy_bytes(&npy(text, &[0; 16])).unwrap_err().to_string(),
        "holds 16 bytes of data but its header says shape [3] of <f4"
    );
}

#[test]
fn unsupported_dtypes_are_named() {
    let table = [
        ("<U5", "numpy dtype '<U5' (strings) is not supported: only numbers and bool are"),
        ("|S3", "numpy dtype '|S3' (strings) is not supported: only numbers and bool are"),
        ("|O", "numpy dtype '|O' (Python objects) is not supported: only numbers and bool are"),
        ("<c8", "numpy dtype '<c8' (complex numbers) is not supported: only numbers and bool are"),
        ("<M8[s]", "numpy dtype '<M8[s]' (dates and times) is not supported: only numbers and bool are"),
        ("<f16", "numpy dtype '<f16' is not supported: only numbers and bool are"),
    ];
    for (descr, want) in table {
        let text = format!("{{'descr': '{descr}', 'fortran_order': False, 'shape': (1,), }}");
        assert_eq!(read_npy_bytes(&npy(&text, &[0; 8])).unwrap_err().to_string(), want);
    }
}

/// `0, 1, 2, ..` as a tensor of `dt` and shape.
fn ramp(dt: DatumType, shape: &[usize]) -> Tensor {
    let n: usize = shape.iter().product();
    let t =
        tract_ndarray::ArrayD::from_shape_vec(shape, (0..n as i64).map(|v| v % 100).collect()).unwrap().into_tensor();
    if dt == DatumType::Bool {
        return t
            .cast_to::<i64>()
            .unwrap()
            .into_owned()
            .into_plain_array::<i64>()
            .unwrap()
            .mapv(|v| v % 3 == 1)
            .into_tensor();
    }
    t.cast_to_dt(dt).unwrap().into_owned()
}

const TYPES: [DatumType; 12] = [
    DatumType::Bool,
    DatumType::I8,
    DatumType::U8,
    DatumType::I16,
    DatumType::U16,
    DatumType::I32,
    DatumType::U32,
    DatumType::I64,
    DatumType::U64,
    DatumType::F16,
    DatumType::F32,
    DatumType::F64,
];

#[test]
fn every_dtype_round_trips_and_reads_big_endian_and_fortran_order() {
    for dt in TYPES {
        let t = ramp(dt, &[2, 3, 4]);
        let mut bytes = vec![];
        write_npy_to(&mut bytes, &t).unwrap();
        assert_eq!(bytes.len() % 64, (24 * dt.size_of()) % 64, "{dt:?}: the data starts at a multiple of 64");
        assert_eq!(read_npy_bytes(&bytes).unwrap(), t, "{dt:?}");
        let header = parse_header(&bytes).unwrap();
        let descr = descr_for(dt).unwrap();
        let size = dt.size_of();
        let data = t.try_as_plain_ram().unwrap().as_bytes().to_vec();
        // Big-endian: every element's bytes reversed.
        let be: Vec<u8> = data.chunks(size).flat_map(|c| c.iter().rev().copied().collect::<Vec<_>>()).collect();
        let be_descr = descr.replace('<', ">");
        let text = format!("{{'descr': '{be_descr}', 'fortran_order': False, 'shape': (2, 3, 4), }}");
        assert_eq!(read_npy_bytes(&npy(&text, &be)).unwrap(), t, "{dt:?} big-endian");
        // Fortran order: the data of the transposed array, in row-major order.
        let transposed = t.clone().permute_axes(&[2, 1, 0]).unwrap();
        let text = format!("{{'descr': '{descr}', 'fortran_order': True, 'shape': (2, 3, 4), }}");
        let fo = transposed.try_as_plain_ram().unwrap().as_bytes().to_vec();
        assert_eq!(read_npy_bytes(&npy(&text, &fo)).unwrap(), t, "{dt:?} Fortran order");
        assert_eq!(header.shape, vec![2, 3, 4]);
    }
}

#[test]
fn bool_bytes_other_than_0_and_1_read_as_true() {
    let text = "{'descr': '|b1', 'fortran_order': False, 'shape': (4,), }";
    let t = read_npy_bytes(&npy(text, &[0, 1, 2, 255])).unwrap();
    assert_eq!(t, tensor1(&[false, true, true, true]));
}

#[test]
fn headers_as_numpy_writes_them() {
    let mut bytes = vec![];
    write_npy_to(&mut bytes, &tensor0(1.5f32)).unwrap();
    let text = "{'descr': '<f4', 'fortran_order': False, 'shape': (), }";
    let mut want = npy(&format!("{text}{}\n", " ".repeat(128 - 10 - text.len() - 1)), &1.5f32.to_le_bytes());
    assert_eq!(bytes, want);
    bytes.clear();
    write_npy_to(&mut bytes, &tensor1(&[7u8])).unwrap();
    let text = "{'descr': '|u1', 'fortran_order': False, 'shape': (1,), }";
    want = npy(&format!("{text}{}\n", " ".repeat(128 - 10 - text.len() - 1)), &[7]);
    assert_eq!(bytes, want);
}

#[test]
fn strings_are_refused_before_writing() {
    let t = tensor1(&["a".to_string()]);
    assert_eq!(
        check_writable(&t).unwrap_err().to_string(),
        "a tensor of str cannot be written as .npy (only numbers and bool can)"
    );
    let mut bytes = vec![];
    assert!(write_npy_to(&mut bytes, &t).is_err());
    assert!(bytes.is_empty());
}
