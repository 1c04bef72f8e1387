//! Byte-string mutations for the never-panic properties of every reader of
//! untrusted input (shared with `lockmeter-wire`'s decoder tests).

use proptest::prelude::*;

/// Cases per property: modest by default (each mutated fixture is 100 KB
/// parsed in a debug build); `PROPTEST_CASES` raises it.
pub fn config(default: u32) -> ProptestConfig {
    let cases = std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|c| c.parse().ok())
        .unwrap_or(default);
    ProptestConfig {
        cases,
        ..ProptestConfig::default()
    }
}

/// One edit of a byte string.
#[derive(Debug, Clone)]
pub enum Edit {
    Flip(usize, u8),
    Set(usize, u8),
    Insert(usize, Vec<u8>),
    Delete(usize, usize),
    Truncate(usize),
    Duplicate(usize, usize),
}

pub fn edit() -> impl Strategy<Value = Edit> {
    let token = prop_oneof![
        Just(b"{".to_vec()),
        Just(b"}".to_vec()),
        Just(b"[".to_vec()),
        Just(b"\"".to_vec()),
        Just(b",".to_vec()),
        Just(b"null".to_vec()),
        Just(b"-1".to_vec()),
        Just(b"1e400".to_vec()),
        Just(b"99999999999999999999999".to_vec()),
        Just(b"\\u0000".to_vec()),
        Just("\u{1F600}".as_bytes().to_vec()),
        proptest::collection::vec(any::<u8>(), 1..8),
    ];
    prop_oneof![
        (any::<usize>(), any::<u8>()).prop_map(|(p, b)| Edit::Flip(p, b)),
        (any::<usize>(), any::<u8>()).prop_map(|(p, b)| Edit::Set(p, b)),
        (any::<usize>(), token).prop_map(|(p, t)| Edit::Insert(p, t)),
        (any::<usize>(), 1usize..64).prop_map(|(p, n)| Edit::Delete(p, n)),
        any::<usize>().prop_map(Edit::Truncate),
        (any::<usize>(), 1usize..256).prop_map(|(p, n)| Edit::Duplicate(p, n)),
    ]
}

pub fn apply(bytes: &mut Vec<u8>, e: &Edit) {
    let at = |p: usize, len: usize| if len == 0 { 0 } else { p % (len + 1) };
    match e {
        Edit::Flip(p, b) if !bytes.is_empty() => {
            let i = p % bytes.len();
            bytes[i] ^= b | 1;
        }
        Edit::Set(p, b) if !bytes.is_empty() => {
            let i = p % bytes.len();
            bytes[i] = *b;
        }
        Edit::Insert(p, t) => {
            let i = at(*p, bytes.len());
            bytes.splice(i..i, t.iter().copied());
        }
        Edit::Delete(p, n) => {
            let i = at(*p, bytes.len());
            let j = (i + n).min(bytes.len());
            bytes.drain(i..j);
        }
        Edit::Truncate(p) => {
            let i = at(*p, bytes.len());
            bytes.truncate(i);
        }
        Edit::Duplicate(p, n) => {
            let i = at(*p, bytes.len());
            let j = (i + n).min(bytes.len());
            let copy = bytes[i..j].to_vec();
            bytes.splice(j..j, copy);
        }
        _ => {}
    }
}

/// The depths nesting is tried at: serde_json's recursion limit is 128.
pub const NESTING_DEPTHS: [usize; 3] = [64, 1_000, 100_000];

/// JSON nested `depth` deep: closed arrays, closed objects, and unclosed.
pub fn nested(depth: usize) -> [String; 3] {
    [
        format!("{}{}", "[".repeat(depth), "]".repeat(depth)),
        format!("{}1{}", "{\"a\":".repeat(depth), "}".repeat(depth)),
        "[{\"a\":".repeat(depth),
    ]
}
