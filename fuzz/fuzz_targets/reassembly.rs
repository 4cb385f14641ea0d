//! TCP reassembly and HTTP/1.1 framing as a system: exchanges built from structured
//! parts, written as a pcap in order and with segments split, swapped, duplicated and
//! overlapped, must read back as the same exchanges.
#![no_main]

use arbitrary::Arbitrary;
use libfuzzer_sys::fuzz_target;

#[path = "../../tests/common/mangle.rs"]
mod mangle;

#[derive(Debug, Arbitrary)]
struct Ex {
    method: u8,
    path: u16,
    body: Vec<u8>,
    status: u16,
    framing: u8,
    resp_body: Vec<u8>,
    chunks: Vec<u8>,
}

#[derive(Debug, Arbitrary)]
struct Input {
    exchanges: Vec<Ex>,
    plan: Vec<u8>,
}

fuzz_target!(|input: Input| {
    if input.exchanges.is_empty() || input.exchanges.len() > 8 {
        return;
    }
    let specs: Vec<mangle::ExSpec> = input
        .exchanges
        .into_iter()
        .map(|e| mangle::ExSpec {
            method: e.method,
            path: e.path,
            body: e.body,
            status: e.status,
            framing: e.framing,
            resp_body: e.resp_body,
            chunks: e.chunks,
        })
        .collect();
    let in_order = mangle::exchanges(&mangle::capture(&specs, None));
    let mangled = mangle::exchanges(&mangle::capture(&specs, Some(&input.plan)));
    assert_eq!(in_order, mangled);
});
