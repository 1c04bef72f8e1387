//! Any bytes given to `parse_snapshot` give a snapshot or an error; a
//! snapshot that loaded writes back as JSON that loads again.
#![no_main]

use libfuzzer_sys::fuzz_target;
use lockmeter_model::{parse_snapshot, render};

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    if let Ok(snap) = parse_snapshot(&text) {
        let again = render::json(&snap);
        if let Err(e) = parse_snapshot(&again) {
            panic!("a loaded snapshot did not round-trip: {e}");
        }
    }
});
