#!/usr/bin/env bash
# What a user's project sees when it patches parking_lot 0.12 with this
# crate: the patch takes (every parking_lot 0.12 in the graph is this
# crate) unless a crate in lockmeter's own dependency tree also wants
# parking_lot 0.12, which closes a cycle that cargo refuses. The case
# tested is tracing-subscriber's `parking_lot` feature (docs/guide.md says
# what to do about it).
#
# Usage: bash crates/compat/parking_lot/tests/patch_cycle.sh
set -euo pipefail
. "$(dirname "$0")/scratch.sh"
scratch=$compat_target/patch_cycle

project() { # name, tracing-subscriber features
    local dir=$scratch/$1
    scratch_package "$dir" "$1"
    : >"$dir/src/lib.rs"
    cat >>"$dir/Cargo.toml" <<TOML
[dependencies]
# Without the prometheus feature: prometheus-client wants parking_lot 0.12 too
# (no backquotes in this unquoted heredoc: they would run a command).
lockmeter = { path = "$root/crates/lockmeter", default-features = false }
tracing-subscriber = { version = "0.3", features = [$2] }
# Something that depends on parking_lot 0.12, as a user's tree would.
parking_lot = "0.12"
[patch.crates-io]
parking_lot = { path = "$root/crates/compat/parking_lot" }
TOML
    echo "$dir/Cargo.toml"
}

fail() { echo "patch_cycle: $*" >&2; exit 1; }

# Without the feature: resolves, and parking_lot 0.12 is the compat crate.
ok=$(project patch_ok '"registry"')
meta=$(cargo metadata --quiet --format-version 1 --manifest-path "$ok") ||
    fail "the patched project without tracing-subscriber/parking_lot does not resolve"
grep -q "\"manifest_path\":\"$root/crates/compat/parking_lot/Cargo.toml\"" <<<"$meta" ||
    fail "parking_lot 0.12 did not resolve to the compat crate"
if grep -Eq '"id":"registry\+[^"]*#parking_lot@0\.12\.' <<<"$meta"; then
    fail "a registry parking_lot 0.12 is still in the graph"
fi
echo "patch_cycle: without tracing-subscriber/parking_lot the patch applies"

# With it: cargo refuses the cycle, naming it.
bad=$(project patch_cycle '"registry", "parking_lot"')
if out=$(cargo metadata --quiet --format-version 1 --manifest-path "$bad" 2>&1 >/dev/null); then
    fail "expected cargo to refuse the cycle through tracing-subscriber/parking_lot"
fi
grep -q "cyclic package dependency" <<<"$out" || fail "unexpected error: $out"
echo "patch_cycle: with tracing-subscriber/parking_lot cargo refuses the cycle:"
grep "cyclic package dependency" <<<"$out" | head -n1
echo "patch_cycle: 2 passed, 0 failed"
