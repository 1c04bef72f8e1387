//! Any bytes given to `parse_recording` give frames or an error; frames
//! that loaded are never more than the lines there are.
#![no_main]

use libfuzzer_sys::fuzz_target;
use lockmeter_model::parse_recording;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    if let Ok(rec) = parse_recording(&text) {
        assert!(!rec.frames.is_empty());
        assert!(rec.frames.len() <= text.lines().count());
    }
});
