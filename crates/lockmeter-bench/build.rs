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

/// `take_cold`: the generic 50-site function.
fn cold_sites() -> String {
    let mut src = String::new();
    let _ = writeln!(src, "/// Distinct call sites in [`take_cold`].");
    let _ = writeln!(src, "pub const COLD_SITES: usize = {COLD_SITES};");
    let _ = writeln!(
        src,
        "/// Takes `lock` at generated call site `i` (nothing if `i >= COLD_SITES`)."
    );
    let _ = writeln!(
        src,
        "#[inline(never)]\npub fn take_cold<L: Take>(lock: &L, i: usize) {{\n    match i {{"
    );
    for i in 0..COLD_SITES {
        let _ = writeln!(src, "        {i} => lock.take(),");
    }
    let _ = writeln!(src, "        _ => {{}}\n    }}\n}}");
    src
}

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
    write("sites.rs", &src);
    write("cold_sites.rs", &cold_sites());
    println!("cargo::rerun-if-changed=build.rs");
}
