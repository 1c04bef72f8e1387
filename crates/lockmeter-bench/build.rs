//! Generates `sites.rs`: one function with 10,000 distinct call sites,
//! and `cold_sites.rs`: one with 50, generic over the lock.
//!
//! A snapshot's cost grows with recorded call sites, and 10,000 distinct
//! `lock()` call expressions cannot be written by hand or by `macro_rules!`
//! (every expansion of one macro call shares its source location). So this
//! writes them out: `take_at(lock, i)` reaches a `#[track_caller]` helper
//! from the i-th line of the generated file, and each line is a call site
//! of its own. `take_cold(lock, i)` does the same through the contended
//! rows' `Take` trait, for the row of a lock taken at many sites.

use std::fmt::Write as _;
use std::path::PathBuf;

/// Distinct call sites generated.
const SITES: usize = 10_000;
/// Distinct call sites of `take_cold`.
const COLD_SITES: usize = 50;

/// Writes `src` to `OUT_DIR/name`.
fn write(name: &str, src: &str) {
    let out = PathBuf::from(std::env::var_os("OUT_DIR").unwrap_or_default()).join(name);
    if let Err(e) = std::fs::write(&out, src) {
        println!("cargo::error=cannot write {}: {e}", out.display());
    }
}

/// Source of `pub fn {name}{signature}`: a `match i` whose `count` arms
/// each run `call` (a call site of their own), and of the const `konst`
/// that says how many there are.
fn sites(name: &str, signature: &str, call: &str, konst: &str, count: usize) -> String {
    let mut src = String::new();
    let _ = writeln!(src, "/// Distinct call sites in [`{name}`].");
    let _ = writeln!(src, "pub const {konst}: usize = {count};");
    let _ = writeln!(
        src,
        "/// Takes `lock` at generated call site `i` (nothing if `i >= {konst}`)."
    );
    let _ = writeln!(
        src,
        "#[inline(never)]\npub fn {name}{signature} {{\n    match i {{"
    );
    for i in 0..count {
        let _ = writeln!(src, "        {i} => {call},");
    }
    let _ = writeln!(src, "        _ => {{}}\n    }}\n}}");
    src
}

fn main() {
    let snapshot = sites(
        "take_at",
        "(lock: &lockmeter::SpinLock<u64>, i: usize)",
        "take(lock)",
        "GENERATED_SITES",
        SITES,
    );
    write("sites.rs", &snapshot);
    let cold = sites(
        "take_cold",
        "<L: Take>(lock: &L, i: usize)",
        "lock.take()",
        "COLD_SITES",
        COLD_SITES,
    );
    write("cold_sites.rs", &cold);
    println!("cargo::rerun-if-changed=build.rs");
}
