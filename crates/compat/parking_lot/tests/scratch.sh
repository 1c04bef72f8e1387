# Sourced by the compat crate's test scripts: the repository root, the
# target dir they share, and the scratch cargo packages they build there.

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../../../.." && pwd)
# CARGO_TARGET_DIR, absolute (default target/compat).
compat_target=${CARGO_TARGET_DIR:-$root/target/compat}
case $compat_target in /*) ;; *) compat_target=$root/$compat_target ;; esac

# scratch_package DIR NAME: DIR/src and the head of DIR/Cargo.toml, an
# unpublished package NAME in a workspace of its own (so the repository's
# workspace never sees it); the caller appends its dependencies.
scratch_package() {
    mkdir -p "$1/src"
    cat >"$1/Cargo.toml" <<TOML
[workspace]
[package]
name = "$2"
version = "0.0.0"
edition = "2021"
publish = false
TOML
}
