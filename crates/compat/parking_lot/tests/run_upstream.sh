#!/usr/bin/env bash
# Runs parking_lot 0.12's own unit tests for Mutex, RwLock, Condvar,
# ReentrantMutex and FairMutex (a) against `lockmeter::` and (b) against
# this compat crate. The tests are taken at test time from the crate's
# published source in the cargo registry; none of it is committed.
#
# Usage: bash crates/compat/parking_lot/tests/run_upstream.sh
# Env:   CARGO_TARGET_DIR (default target/compat), PARKING_LOT_VERSION
#        (default 0.12.5, the version whose tests are run).
# Prints one `upstream <mode>: N passed, M failed` line per mode; exits
# non-zero if a mode fails to build or any test fails.
set -euo pipefail
. "$(dirname "$0")/scratch.sh"
cd "$root"
version=${PARKING_LOT_VERSION:-0.12.5}
export CARGO_TARGET_DIR=$compat_target
scratch=$CARGO_TARGET_DIR/upstream
modules="mutex rwlock condvar remutex fair_mutex"

# 1. Fetch parking_lot's source through an ordinary dependency, and ask
#    cargo where it put it.
scratch_package "$scratch/fetch" fetch-parking-lot-source
cat >>"$scratch/fetch/Cargo.toml" <<TOML
[dependencies]
parking_lot = "=$version"
TOML
: >"$scratch/fetch/src/lib.rs"
src=$(cargo metadata --quiet --format-version 1 --manifest-path "$scratch/fetch/Cargo.toml" |
    grep -o "\"manifest_path\":\"[^\"]*/parking_lot-$version/Cargo.toml\"" | head -n1 |
    sed -e 's/^"manifest_path":"//' -e 's|/Cargo.toml"$|/src|')
[ -d "$src" ] || { echo "run_upstream: parking_lot $version's source not found" >&2; exit 1; }
echo "upstream tests from $src"

# 2. One test crate per mode: each module's `#[cfg(test)]` tail (the test
#    modules are the last items of these files), with `use crate::`
#    pointed at the crate under test. Three Condvar tests call parking_lot's
#    private `Condvar::wait_while_until_internal`, which lockmeter's
#    condvar offers (hidden) for them.
make_crate() { # name, dependency line, import root
    local dir=$scratch/$1
    rm -rf "$dir/src" && scratch_package "$dir" "$1"
    cat >>"$dir/Cargo.toml" <<TOML
[dependencies]
$2
lock_api = "0.5"
[dev-dependencies]
rand = "0.8"
[lints.rust]
# The tests are cfg'd on parking_lot's features (serde, arc_lock), which
# these crates do not have: those tests are left out.
unexpected_cfgs = "allow"
TOML
    cat >"$dir/src/lib.rs" <<'RS'
//! parking_lot 0.12's unit tests, extracted by run_upstream.sh.
RS
    for m in $modules; do
        local file=$src/$m.rs
        grep -q '^#\[cfg(test)\]' "$file" || { echo "run_upstream: no tests in $file" >&2; exit 1; }
        sed -n '/^#\[cfg(test)\]/,$p' "$file" |
            sed -e "s/\buse crate::/use $3::/g" >"$dir/src/$m.rs"
        echo "mod $m;" >>"$dir/src/lib.rs"
    done
}
make_crate upstream_via_lockmeter "lockmeter = { path = \"$root/crates/lockmeter\", default-features = false }" lockmeter
make_crate upstream_via_compat "parking_lot = { path = \"$root/crates/compat/parking_lot\" }
lockmeter = { path = \"$root/crates/lockmeter\", default-features = false }" parking_lot

# 3. Run both; count what passed.
status=0
for mode in lockmeter compat; do
    log=$scratch/$mode.log
    if cargo test --manifest-path "$scratch/upstream_via_$mode/Cargo.toml" --lib >"$log" 2>&1; then
        ok=1
    else
        ok=0
        status=1
    fi
    passed=$(sed -n 's/^test result: [a-zA-Z]*\. \([0-9]*\) passed; \([0-9]*\) failed.*/\1/p' "$log" | head -n1)
    failed=$(sed -n 's/^test result: [a-zA-Z]*\. \([0-9]*\) passed; \([0-9]*\) failed.*/\2/p' "$log" | head -n1)
    if [ -z "$passed" ]; then
        echo "via-$mode: did not build or run; last lines of $log:"
        grep -E '^error' -A6 "$log" | head -n 60 || tail -n 40 "$log"
        continue
    fi
    [ "$ok" = 1 ] || grep -E '^---- |panicked' "$log" | head -n 40
    echo "via-$mode: $passed passed, $failed failed"
done
exit $status
