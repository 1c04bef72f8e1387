//! Property tests for the snapshot and recording parsers: they never panic — on arbitrary
//! input, on mutations of a real snapshot, on huge numbers and deep
//! nesting — and a recording cut at any byte of its last line still loads
//! every complete frame.

use lockmeter_model::render::{csv_table, text_table, TableOptions};
use lockmeter_model::{parse_recording, parse_snapshot, ReadError, Snapshot};
use proptest::prelude::*;

mod mutate;
use mutate::{apply, config, edit, nested, NESTING_DEPTHS};

const FIXTURE: &str = include_str!("fixtures/v1-demo.json");

/// The fixture cut down to its first `locks` locks, as one compact line.
fn small_snapshot(locks: usize) -> String {
    let mut snap = parse_snapshot(FIXTURE).expect("fixture loads");
    snap.locks.truncate(locks);
    serde_json::to_string(&snap).expect("serializes")
}

/// Whatever parsed must also render.
fn render_if_ok(parsed: Result<Snapshot, ReadError>) {
    if let Ok(snap) = parsed {
        let opts = TableOptions::default();
        std::hint::black_box(text_table(&snap, &opts));
        std::hint::black_box(csv_table(&snap, &opts));
    }
}

proptest! {
    #![proptest_config(config(256))]

    #[test]
    fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..512)) {
        let text = String::from_utf8_lossy(&bytes);
        render_if_ok(parse_snapshot(&text));
        let _ = parse_recording(&text);
    }

    #[test]
    fn arbitrary_strings_never_panic(text in "\\PC{0,256}") {
        render_if_ok(parse_snapshot(&text));
        let _ = parse_recording(&text);
    }

    #[test]
    fn json_shaped_junk_never_panics(
        text in r#"[\{\}\[\]",:0-9a-z\- .eE\n]{0,300}"#,
    ) {
        render_if_ok(parse_snapshot(&text));
        let _ = parse_recording(&text);
    }
}

proptest! {
    #![proptest_config(config(128))]

    #[test]
    fn mutated_fixture_never_panics(edits in proptest::collection::vec(edit(), 1..6)) {
        let mut bytes = FIXTURE.as_bytes().to_vec();
        for e in &edits {
            apply(&mut bytes, e);
        }
        let text = String::from_utf8_lossy(&bytes);
        render_if_ok(parse_snapshot(&text));
        // The same bytes as a recording line.
        let line = text.replace('\n', " ");
        let _ = parse_recording(&format!("{line}\n{line}"));
    }

    #[test]
    fn mutated_small_recordings_never_panic(edits in proptest::collection::vec(edit(), 1..8)) {
        let line = small_snapshot(3);
        let mut bytes = format!("{line}\n{line}\n{line}").into_bytes();
        for e in &edits {
            apply(&mut bytes, e);
        }
        let text = String::from_utf8_lossy(&bytes);
        if let Ok(rec) = parse_recording(&text) {
            prop_assert!(!rec.frames.is_empty());
            prop_assert!(rec.frames.len() <= text.lines().count());
            for f in rec.frames {
                render_if_ok(Ok(f));
            }
        }
    }
}

#[test]
fn the_fixture_itself_loads() {
    let snap = parse_snapshot(FIXTURE).expect("fixture loads");
    assert!(!snap.locks.is_empty());
}

#[test]
fn huge_and_odd_numbers_are_errors_or_values_never_panics() {
    let odd = [
        "18446744073709551615",
        "18446744073709551616",
        "-1",
        "-0",
        "1.5",
        "1e308",
        "1e999",
        "-1e999",
        "NaN",
        "Infinity",
        "null",
        "\"7\"",
        "[]",
        "{}",
        "99999999999999999999999999999999999999999999999999",
    ];
    let fields = [
        "\"version\": ",
        "\"pid\": ",
        "\"elapsed_ns\": ",
        "\"start_unix_ns\": ",
        "\"acquisitions\": ",
        "\"contended\": ",
        "\"instances\": ",
        "\"dropped_records\": ",
        "\"count\": ",
    ];
    let mut loaded = 0;
    for field in fields {
        let Some(at) = FIXTURE.find(field) else {
            continue;
        };
        let start = at + field.len();
        let end = start
            + FIXTURE[start..]
                .find([',', '\n', '}'])
                .expect("a value ends");
        for n in odd {
            let text = format!("{}{n}{}", &FIXTURE[..start], &FIXTURE[end..]);
            let parsed = parse_snapshot(&text);
            loaded += usize::from(parsed.is_ok());
            render_if_ok(parsed);
        }
    }
    // u64::MAX itself is a valid counter everywhere.
    assert!(loaded >= 1, "u64::MAX should load at least somewhere");
}

#[test]
fn deep_nesting_is_an_error_not_a_stack_overflow() {
    for depth in NESTING_DEPTHS {
        let texts = nested(depth);
        for text in &texts {
            assert!(parse_snapshot(text).is_err());
            assert!(parse_recording(text).is_err());
        }
        let arrays = &texts[0];
        // Nesting inside an otherwise valid snapshot.
        let inside = FIXTURE.replacen(
            "\"name\": \"lockmeter-demo\"",
            &format!("\"name\": \"x\", \"extra\": {arrays}"),
            1,
        );
        render_if_ok(parse_snapshot(&inside));
    }
}

#[test]
fn a_recording_cut_at_any_byte_of_its_last_line_keeps_every_complete_frame() {
    // One lock keeps the line short: every offset is one parse.
    let line = small_snapshot(1);
    let frames = 2;
    let head = format!("{line}\n").repeat(frames - 1);
    let mut cuts = 0;
    for cut in 0..=line.len() {
        if !line.is_char_boundary(cut) {
            continue;
        }
        cuts += 1;
        let text = format!("{head}{}", &line[..cut]);
        let rec =
            parse_recording(&text).unwrap_or_else(|e| panic!("cut at {cut}/{}: {e}", line.len()));
        if cut == line.len() {
            assert_eq!(rec.frames.len(), frames, "complete last line at {cut}");
            assert!(rec.warnings.is_empty());
        } else {
            assert_eq!(rec.frames.len(), frames - 1, "cut at {cut}");
            assert_eq!(rec.warnings.len(), usize::from(cut > 0), "cut at {cut}");
        }
    }
    // A recording of one frame cut short holds no complete frame: an
    // error that says so, not a panic.
    for cut in [1, line.len() / 2, line.len() - 1] {
        assert!(matches!(
            parse_recording(&line[..cut]),
            Err(ReadError::EmptyRecording)
        ));
    }
    println!(
        "[readers] cut a {}-byte last line at {cuts} offsets",
        line.len()
    );
}
