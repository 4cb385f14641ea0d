//! The SSE parser on any bytes, split at any point (with an empty feed between the
//! halves, as a decoder that produced nothing gives): the same events either way.
#![no_main]

use libfuzzer_sys::fuzz_target;
use mcpsift::sse::SseParser;

fuzz_target!(|data: &[u8]| {
    if data.is_empty() {
        return;
    }
    let cut = data[0] as usize % data.len();
    let mut whole = Vec::new();
    let mut p = SseParser::new(1 << 16);
    p.feed(data, None, &mut |e| whole.push(e));
    let a = p.finish();
    let mut split = Vec::new();
    let mut q = SseParser::new(1 << 16);
    q.feed(&data[..cut], None, &mut |e| split.push(e));
    q.feed(&[], None, &mut |e| split.push(e));
    q.feed(&data[cut..], None, &mut |e| split.push(e));
    let b = q.finish();
    assert_eq!(whole, split);
    assert_eq!(a.0, b.0);
});
