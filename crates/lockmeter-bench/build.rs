//! Generates `sites.rs`: one function with 10,000 distinct call sites.
//!
//! A snapshot's cost grows with recorded call sites, and 10,000 distinct
//! `lock()` call expressions cannot be written by hand or by `macro_rules!`
//! (every expansion of one macro call shares its source location). So this
//! writes them out: `take_at(lock, i)` reaches a `#[track_caller]` helper
//! from the i-th line of the generated file, and each line is a call site
//! of its own.

use std::fmt::Write as _;
use std::path::PathBuf;

/// Distinct call sites generated.
const SITES: usize = 10_000;

fn main() {
    let mut src = String::new();
    let _ = writeln!(src, "/// Distinct call sites in [`take_at`].");
    let _ = writeln!(src, "pub const GENERATED_SITES: usize = {SITES};");
    let _ = writeln!(
        src,
        "/// Takes `lock` at generated call site `i` (nothing if `i >= GENERATED_SITES`)."
    );
    let _ = writeln!(
        src,
        "pub fn take_at(lock: &lockmeter::SpinLock<u64>, i: usize) {{\n    match i {{"
    );
    for i in 0..SITES {
        let _ = writeln!(src, "        {i} => take(lock),");
    }
    let _ = writeln!(src, "        _ => {{}}\n    }}\n}}");
    let out = PathBuf::from(std::env::var_os("OUT_DIR").unwrap_or_default()).join("sites.rs");
    if let Err(e) = std::fs::write(&out, src) {
        println!("cargo::error=cannot write {}: {e}", out.display());
    }
    println!("cargo::rerun-if-changed=build.rs");
}
