//! What a hostile client or server can send: request and response lines,
//! and the raw byte stream split by `LineReader`, never panic and never
//! yield a line over the limit.
#![no_main]

use std::io::Cursor;

use libfuzzer_sys::fuzz_target;
use lockmeter_wire::{decode_request, decode_response, LineReader};

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let _ = decode_request(&text);
    let _ = decode_response(&text);

    let limit = usize::from(data.first().copied().unwrap_or(0));
    let mut reader = LineReader::new(limit);
    let mut src = Cursor::new(data);
    for _ in 0..=data.len() + 1 {
        match reader.read_line(&mut src) {
            Ok(Some(line)) => {
                assert!(line.len() <= limit);
                let _ = decode_request(&line);
            }
            Ok(None) | Err(_) => break,
        }
    }
});
