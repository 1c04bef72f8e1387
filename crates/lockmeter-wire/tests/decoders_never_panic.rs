//! Property tests for everything the wire reads from a peer: request and
//! response decoders and the line splitter never panic, never yield a line
//! over the cap, and refuse deep nesting and over-long lines with errors.

use std::io::Cursor;

use lockmeter_model::parse_snapshot;
use lockmeter_wire::{decode_request, decode_response, encode, LineReader, Request, Response};
use lockmeter_wire::{WireError, MAX_REQUEST_LINE};
use proptest::prelude::*;

#[path = "../../lockmeter-model/tests/mutate/mod.rs"]
mod mutate;
use mutate::{apply, config, edit, nested, NESTING_DEPTHS};

const FIXTURE: &str = include_str!("../../lockmeter-model/tests/fixtures/v1-demo.json");

fn decode_both(text: &str) {
    let _ = decode_request(text);
    let _ = decode_response(text);
}

proptest! {
    #![proptest_config(config(256))]

    #[test]
    fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..512)) {
        decode_both(&String::from_utf8_lossy(&bytes));
    }

    #[test]
    fn json_shaped_junk_never_panics(text in r#"[\{\}\[\]",:0-9a-z\- .eE\n]{0,300}"#) {
        decode_both(&text);
    }

    #[test]
    fn line_reader_never_panics(
        bytes in proptest::collection::vec(any::<u8>(), 0..2048),
        limit in 0usize..128,
    ) {
        let mut reader = LineReader::new(limit);
        let mut src = Cursor::new(bytes.clone());
        // Each call consumes input or ends: bound the loop anyway.
        for _ in 0..=bytes.len() + 1 {
            match reader.read_line(&mut src) {
                Ok(Some(line)) => prop_assert!(line.len() <= limit),
                Ok(None) | Err(_) => break,
            }
        }
    }
}

proptest! {
    #![proptest_config(config(128))]

    #[test]
    fn mutated_messages_never_panic(
        which in 0usize..6,
        edits in proptest::collection::vec(edit(), 1..6),
    ) {
        let mut snap = parse_snapshot(FIXTURE).expect("fixture loads");
        snap.locks.truncate(2);
        let valid = match which {
            0 => encode(&Request::Snapshot),
            1 => encode(&Request::Subscribe { interval_ms: 100 }),
            2 => encode(&Request::Reset),
            3 => encode(&Request::Stats),
            4 => encode(&Response::Snapshot { snapshot: snap.clone() }),
            _ => encode(&Response::Update { seq: 1, interval: snap.clone(), cumulative: snap }),
        };
        let mut bytes = valid.into_bytes();
        for e in &edits {
            apply(&mut bytes, e);
        }
        decode_both(&String::from_utf8_lossy(&bytes));
    }

    #[test]
    fn a_mutated_snapshot_inside_a_response_never_panics(
        edits in proptest::collection::vec(edit(), 1..6),
    ) {
        let mut bytes = FIXTURE.as_bytes().to_vec();
        for e in &edits {
            apply(&mut bytes, e);
        }
        let line = String::from_utf8_lossy(&bytes).replace('\n', " ");
        let _ = decode_response(&format!("{{\"type\":\"snapshot\",\"snapshot\":{line}}}"));
    }
}

#[test]
fn deep_nesting_is_an_error_not_a_stack_overflow() {
    for depth in NESTING_DEPTHS {
        for text in &nested(depth) {
            assert!(decode_request(text).is_err());
            assert!(decode_response(text).is_err());
        }
    }
}

#[test]
fn over_long_lines_are_refused() {
    let long = format!("{{\"type\":\"snapshot\"{}}}", " ".repeat(MAX_REQUEST_LINE));
    assert!(matches!(
        decode_request(&long),
        Err(WireError::LineTooLong { .. })
    ));
}
