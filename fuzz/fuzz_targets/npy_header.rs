//! Arbitrary bytes as a `.npy` file (`sliceops::npy`). Reading must return (never panic, and never
//! allocate more than the bytes themselves justify: the data length is checked against the header
//! first); a file that reads agrees with `parse_header`, and writes back to bytes that read to the same
//! tensor.

#![no_main]

use libfuzzer_sys::fuzz_target;
use sliceops::npy::{datum_type_of, parse_header, read_npy_bytes, write_npy_to};

fuzz_target!(|data: &[u8]| {
    let header = parse_header(data);
    let Ok(tensor) = read_npy_bytes(data) else { return };
    let header = header.expect("a file that reads has a header that parses");
    assert_eq!(tensor.shape(), &header.shape[..]);
    assert_eq!(tensor.datum_type(), datum_type_of(&header.descr).expect("a readable dtype"));
    let mut bytes = vec![];
    write_npy_to(&mut bytes, &tensor).expect("a tensor read from .npy writes back");
    let back = read_npy_bytes(&bytes).expect("what we write reads back");
    assert_eq!(back.shape(), tensor.shape());
    assert_eq!(back.datum_type(), tensor.datum_type());
    // Bytes, not values: NaN payloads must survive too.
    assert_eq!(back.try_as_plain_ram().unwrap().as_bytes(), tensor.try_as_plain_ram().unwrap().as_bytes());
});
