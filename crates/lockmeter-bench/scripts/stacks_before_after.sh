#!/usr/bin/env bash
# Issue 13's "same-run overhead" check: the uncontended observed lock+unlock
# of the code before stacks (OLD, default c403996) against this checkout,
# with stacks on and off (LOCKMETER_STACK_RATE=0), and optionally more revs.
#
#   crates/lockmeter-bench/scripts/stacks_before_after.sh [callgrind] [timed]
#
# One probe (written below) is built against each tree's crates/lockmeter:
# the same loops as lockmeter-bench's uncontended rows (`same_op!`), the
# same bare locks (this checkout's bench/src/bare.rs), a global layer.
# - callgrind: instructions per op inside one never-inlined function
#   (valgrind --toggle-collect), after a warm-up; exact, load-independent.
# - timed: ALTS alternations of the probe binaries; each run times PAIRS
#   interleaved bare/lockmeter batches per row in thread CPU time and prints
#   the median ratio; printed: medians and IQRs over the runs, and of the
#   per-alternation quotient against OLD. Needs python3.
# docs/performance.md, "Stacks (issue 13)", has the figures of session 5.
# Env: OLD=c403996 REVS="" (more revs, e.g. 6775112) ALTS=20 PAIRS=15
#      BATCH_MS=10 OPS=200000 WORK=target/stacks-before-after
set -euo pipefail
ROOT=$(git rev-parse --show-toplevel)
OLD=${OLD:-c403996} REVS=${REVS:-} ALTS=${ALTS:-20} PAIRS=${PAIRS:-15}
BATCH_MS=${BATCH_MS:-10} OPS=${OPS:-200000}
WORK=${WORK:-$ROOT/target/stacks-before-after}
MODES=${*:-callgrind timed}
mkdir -p "$WORK"
export CARGO_INCREMENTAL=0
TREES=()
cleanup() { for t in "${TREES[@]}"; do git -C "$ROOT" worktree remove --force "$t" || true; done; }
trap cleanup EXIT

# build LABEL TREE: the probe against TREE's lockmeter, as $WORK/LABEL/probe.
build() {
  local dir=$WORK/$1 feat=""
  mkdir -p "$dir/src"
  # lockmeter::sync (the sync::Mutex row) is younger than OLD.
  [ -d "$2/crates/lockmeter/src/sync" ] && feat='"sync"'
  cat >"$dir/Cargo.toml" <<EOF
[package]
name = "probe"
version = "0.0.0"
edition = "2021"
[workspace]
[features]
default = [$feat]
sync = []
[dependencies]
lockmeter = { path = "$2/crates/lockmeter" }
parking_lot = "0.13"
tracing = "0.1"
tracing-subscriber = "0.3"
libc = "0.2"
[profile.release]
debug = 1
EOF
  cp "$2/Cargo.lock" "$dir/Cargo.lock"
  sed "s|@BARE@|$ROOT/crates/lockmeter-bench/src/bare.rs|" >"$dir/src/main.rs" <<'EOF'
#[path = "@BARE@"]
mod bare;
use std::hint::black_box;
fn cpu_ns() -> u128 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: `ts` is a valid, writable timespec.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    ts.tv_sec as u128 * 1_000_000_000 + ts.tv_nsec as u128
}
fn ns(n: u64, f: &mut impl FnMut(u64)) -> f64 { let t = cpu_ns(); f(n); (cpu_ns() - t) as f64 / n as f64 }
fn median(v: &mut [f64]) -> f64 { v.sort_by(|a, b| a.total_cmp(b)); let n = v.len(); (v[(n - 1) / 2] + v[n / 2]) / 2.0 }
#[inline(never)]
fn callgrind_measured(ops: u64, run: &mut impl FnMut(u64)) { run(ops) }
/// `cg:SIDE:OPS` counts one side; `timed:PAIRS:BATCH_MS` prints "row bare inst ratio".
fn pair(mode: &str, row: &str, mut b: impl FnMut(u64), mut i: impl FnMut(u64)) {
    let a: Vec<&str> = mode.split(':').collect();
    if a[0] == "cg" {
        let ops: u64 = a[2].parse().unwrap();
        let f: &mut dyn FnMut(u64) = if a[1] == "bare" { &mut b } else { &mut i };
        f(ops / 10 + 1);
        callgrind_measured(black_box(ops), &mut |n| f(n));
        return;
    }
    let (pairs, batch): (usize, f64) = (a[1].parse().unwrap(), a[2].parse::<f64>().unwrap() * 1e6);
    let iters = (batch / ns(100_000, &mut i).max(ns(100_000, &mut b))) as u64;
    let (mut bs, mut is, mut rs) = (vec![], vec![], vec![]);
    for _ in 0..pairs {
        let (x, y) = (ns(iters, &mut b), ns(iters, &mut i));
        bs.push(x); is.push(y); rs.push(y / x);
    }
    println!("{row} {:.3} {:.3} {:.4}", median(&mut bs), median(&mut is), median(&mut rs));
}
macro_rules! same_op {
    ($mode:expr, $row:expr, $bare:expr, $inst:expr, $l:ident => $op:expr) => {{
        let (bare, inst) = (black_box(&$bare), black_box(&$inst));
        pair($mode, $row, |n| for _ in 0..n { let $l = bare; $op; }, |n| for _ in 0..n { let $l = inst; $op; })
    }};
}
fn main() {
    let a: Vec<String> = std::env::args().collect();
    let (mode, only) = (a[1].as_str(), a.get(2).map(|s| s.as_str()));
    use tracing_subscriber::prelude::*;
    if !mode.starts_with("cg:bare") {
        tracing::subscriber::set_global_default(tracing_subscriber::registry().with(lockmeter::Layer::new())).unwrap();
    }
    let go = |r: &str| only.is_none_or(|o| o == r);
    if go("spinlock") {
        let (b, i) = (bare::BareSpinLock::new(0u64), lockmeter::SpinLock::named("bench.spinlock", 0u64));
        same_op!(mode, "spinlock", b, i, l => *l.lock() += 1)
    }
    if go("mutex") {
        let (b, i) = (parking_lot::Mutex::new(0u64), lockmeter::Mutex::named("bench.mutex", 0u64));
        same_op!(mode, "mutex", b, i, l => *l.lock() += 1)
    }
    #[cfg(feature = "sync")]
    if go("sync_mutex") {
        let (b, i) = (std::sync::Mutex::new(0u64), lockmeter::sync::Mutex::named("bench.sync_mutex", 0u64));
        same_op!(mode, "sync_mutex", b, i, l => *l.lock().unwrap() += 1)
    }
    if go("rwlock_read") {
        let (b, i) = (parking_lot::RwLock::new(1u64), lockmeter::RwLock::named("bench.rwlock", 1u64));
        same_op!(mode, "rwlock_read", b, i, l => black_box(*l.read()))
    }
    if go("rwlock_write") {
        let (b, i) = (parking_lot::RwLock::new(0u64), lockmeter::RwLock::named("bench.rwlock", 0u64));
        same_op!(mode, "rwlock_write", b, i, l => *l.write() += 1)
    }
    if go("semaphore") {
        let (b, i) = (bare::BareSemaphore::new(1), lockmeter::Semaphore::named("bench.semaphore", 1));
        same_op!(mode, "semaphore", b, i, l => { l.down(); l.up(); })
    }
}
EOF
  echo "building the probe against $2 ($1)" >&2
  cargo build -q --release --manifest-path "$dir/Cargo.toml" --target-dir "$WORK/target-$1"
  cp "$WORK/target-$1/release/probe" "$dir/probe"
}

# tree LABEL REV: REV checked out as a temporary worktree, the probe built on it.
tree() {
  local t=$WORK/tree-$1
  git -C "$ROOT" worktree remove --force "$t" 2>/dev/null || true # left by a killed run
  git -C "$ROOT" worktree add -q --detach "$t" "$2"
  TREES+=("$t")
  build "$1" "$t"
}
# "old" is OLD, each of REVS its own label, "new" this checkout as it is.
LABELS=(old)
tree old "$OLD"
for r in $REVS; do tree "$r" "$r"; LABELS+=("$r"); done
build new "$ROOT"
# Sides: LABEL or LABEL-nostacks (the same binary, LOCKMETER_STACK_RATE=0).
SIDES=("${LABELS[@]}" new new-nostacks)
run() { # SIDE ARGS...
  local l=${1%-nostacks} env=(); [ "$1" != "$l" ] && env=(LOCKMETER_STACK_RATE=0)
  shift; env "${env[@]}" "$WORK/$l/probe" "$@"
}
ROWS="spinlock mutex sync_mutex rwlock_read rwlock_write semaphore"
echo "# $(date -u +%FT%TZ) $(uptime | sed 's/.*load/load/'); OLD=$OLD, new=$(git -C "$ROOT" rev-parse --short HEAD)"

if [[ $MODES == *callgrind* ]]; then
  ir() { # SIDE ROW BARE|observed: Ir/op, or - when the tree has no such row
    local out=$WORK/cg.out e=(); rm -f "$out"
    [ -x "$WORK/${1%-nostacks}/probe" ] || return 1; [[ $1 == *-nostacks ]] && e=(LOCKMETER_STACK_RATE=0)
    env "${e[@]}" valgrind --tool=callgrind --callgrind-out-file="$out" --toggle-collect='*callgrind_measured*' \
      "$WORK/${1%-nostacks}/probe" "cg:$3:$OPS" "$2" >/dev/null 2>&1 || true
    local n; n=$(awk '/^(totals|summary):/ {print $2; exit}' "$out" 2>/dev/null || true)
    if [ "${n:-0}" -gt 0 ]; then awk -v n="$n" -v o="$OPS" 'BEGIN{printf "%.1f", n/o}'; else printf -- -; fi
  }
  echo "## callgrind, observed lock+unlock, Ir/op ($OPS ops after warm-up)"
  echo "# each side: Ir/op (its ratio to old's)"
  printf '%-13s %6s' row bare; for s in "${SIDES[@]}"; do printf ' %15s' "$s"; done; echo
  for r in $ROWS; do
    printf '%-13s %6s' "$r" "$(ir new "$r" bare)"; o=-
    for s in "${SIDES[@]}"; do
      v=$(ir "$s" "$r" observed); [ "$s" = old ] && o=$v
      if [[ $s != old && $o != - && $v != - ]]; then v=$(awk -v o="$o" -v v="$v" 'BEGIN{printf "%.1f (%.3f)", v, v/o}'); fi
      printf ' %15s' "$v"
    done; echo
  done
fi

if [[ $MODES == *timed* ]]; then
  log=$WORK/timed.txt; : >"$log"
  for ((k = 0; k < ALTS; k++)); do
    for s in "${SIDES[@]}"; do run "$s" "timed:$PAIRS:$BATCH_MS" | sed "s/^/$k $s /" >>"$log"; done
  done
  echo "## timed (thread CPU time), $ALTS alternations x $PAIRS pairs; $(uptime | sed 's/.*load/load/')"
  echo "# ratio = lockmeter/bare within one run; vs old = that ratio over old's in the same alternation"
  python3 - "$log" "${SIDES[@]}" <<'EOF'
import sys, statistics as st
rows = [l.split() for l in open(sys.argv[1])]
sides = sys.argv[2:]
def q(v):
    v = sorted(v); a = st.quantiles(v, n=4) if len(v) > 1 else v * 3
    return f"{st.median(v):.3f} ({a[0]:.3f}-{a[2]:.3f})"
d = {(k, s, r): (float(b), float(i), float(x)) for k, s, r, b, i, x in rows}
names = list(dict.fromkeys(r[2] for r in rows))
print(f"{'row':13} {'side':13} {'bare ns':>8} {'lockmeter ns':>12}  {'ratio (IQR)':22} vs old (IQR)")
for r in names:
    for s in sides:
        ks = sorted({int(k) for k, s2, r2 in d if s2 == s and r2 == r})
        if not ks: continue
        v = [d[(str(k), s, r)] for k in ks]
        rel = [d[(str(k), s, r)][2] / d[(str(k), "old", r)][2] for k in ks if (str(k), "old", r) in d]
        print(f"{r:13} {s:13} {st.median(x[0] for x in v):8.2f} {st.median(x[1] for x in v):12.2f}  "
              f"{q([x[2] for x in v]):22} {q(rel) if rel and s != 'old' else ''}")
EOF
fi
