#!/usr/bin/env bash
# Same-run before/after of lockmeter-bench: the bench of OLD (a git rev)
# and of this checkout, each built from its own tree, alternated ALTS
# times; for every row both have, the median over the alternations of
# (this ratio / OLD's ratio), with its range. A quotient above 1 means the
# row got worse (for throughput rows, where higher is better, the quotient
# is inverted so that above 1 is worse there too).
#
#   crates/lockmeter-bench/scripts/bench_before_after.sh OLD [bench args]
#   e.g. ... 563802a --quick --only unobserved,observed
#
# Judged per row by the median quotient's 90 % confidence interval (order
# statistics; distribution-free): WORSE when all of it lies above 1.03,
# both for the ratio and for the instrumented side's own figure (a ratio
# can move because the unchanged bare code landed elsewhere in one binary).
# ALSO="dir ..." adds the alternations kept in earlier runs' WORK dirs.
#
# Alternations in which either side's host probe (`host_probe_ns`, see
# src/host.rs) ran 1.15x or more slower than the fastest probe of any
# process compared for that row were measured on a shared core and are
# left out of the row's quotients, as long as 3 or more are left ("quiet"
# column); with fewer, all are used and the row is marked SHARED.
#
# Env: ALTS=6 WORK=target/bench-before-after ALSO="" (ALTS=0 re-reads the
# alternations WORK holds without running more)
set -euo pipefail
ROOT=$(git rev-parse --show-toplevel)
OLD=${1:?usage: $0 OLD_REV [lockmeter-bench args]}
shift
ARGS=("$@")
ALTS=${ALTS:-6}
ALSO=${ALSO:-}
WORK=${WORK:-$ROOT/target/bench-before-after}
mkdir -p "$WORK"
export CARGO_INCREMENTAL=0
TREE=$WORK/old-tree
git -C "$ROOT" worktree remove --force "$TREE" 2>/dev/null || true
git -C "$ROOT" worktree add -q --detach "$TREE" "$OLD"
trap 'git -C "$ROOT" worktree remove --force "$TREE" || true' EXIT

echo "building the bench of $OLD and of this checkout" >&2
CARGO_TARGET_DIR=$WORK/target-old cargo build -q --release -p lockmeter-bench --manifest-path "$TREE/Cargo.toml"
cargo build -q --release -p lockmeter-bench --manifest-path "$ROOT/Cargo.toml"
OLD_BIN=$WORK/target-old/release/lockmeter-bench
NEW_BIN=${CARGO_TARGET_DIR:-$ROOT/target}/release/lockmeter-bench

# This run's alternations only: a longer earlier run's would be read too.
if [ "$ALTS" -gt 0 ]; then rm -f "$WORK"/old.*.json "$WORK"/new.*.json; fi
for i in $(seq 1 "$ALTS"); do
  echo "alternation $i/$ALTS (load $(cut -d' ' -f1 /proc/loadavg))" >&2
  "$OLD_BIN" --json "${ARGS[@]}" >"$WORK/old.$i.json" 2>/dev/null
  "$NEW_BIN" --json "${ARGS[@]}" >"$WORK/new.$i.json" 2>/dev/null
done

python3 - "$WORK" $ALSO <<'PY'
import glob, json, math, statistics, sys

def runs_in(d):
    n = len(glob.glob(f"{d}/old.*.json"))
    return [(json.load(open(f"{d}/old.{i}.json")), json.load(open(f"{d}/new.{i}.json")))
            for i in range(1, n + 1)]

runs = [r for d in sys.argv[1:] for r in runs_in(d)]
n = len(runs)

def median_ci(xs, level=0.90):
    """Distribution-free CI of the median: order statistics (k, n+1-k) with
    the largest k whose binomial coverage still reaches `level`."""
    xs, m = sorted(xs), len(xs)
    best = None
    for k in range(1, m // 2 + 1):
        cover = 1 - 2 * sum(math.comb(m, i) for i in range(k)) / 2 ** m
        if cover >= level:
            best = k
    return (xs[best - 1], xs[m - best]) if best else (xs[0], xs[-1])

rows = [k for k in runs[0][1] if all(k in o and k in nw for o, nw in runs)]

SHARED_CORE, MIN_QUIET = 1.15, 3

def quiet_runs(k):
    """The alternations to compare row `k` over, and how many ran it on a
    core of their own (both processes, by the host probe): those, or all
    when fewer than MIN_QUIET did (None when the bench wrote no probe)."""
    probes = [(o[k].get("host_probe_ns"), nw[k].get("host_probe_ns")) for o, nw in runs]
    if any(a is None or b is None for a, b in probes):
        return runs, None
    best = min(min(a, b) for a, b in probes)
    quiet = [r for r, (a, b) in zip(runs, probes) if max(a, b) < SHARED_CORE * best]
    return (quiet if len(quiet) >= MIN_QUIET else runs), len(quiet)

def quotients(runs, k, field, higher_better):
    olds = [o[k][field] for o, _ in runs]
    news = [nw[k][field] for _, nw in runs]
    if any(r is None or r <= 0 for r in olds + news):
        return None
    return olds, news, [(o / nw if higher_better else nw / o) for o, nw in zip(olds, news)]

print(f"{'row':<56} {'old':>7} {'new':>7} {'new/old':>8}  {'90% CI':<13} worse-in  quiet  {'instr new/old':>13}  {'90% CI':<13}")
worse = noisy = bare_moved = shared = 0
for k in rows:
    # Throughput rows (>= goals): higher is better, so the quotient is inverted.
    higher_better = str(runs[0][1][k].get("goal", "")).startswith(">=")
    used, n_quiet = quiet_runs(k)
    by_ratio = quotients(used, k, "ratio", higher_better)
    if by_ratio is None:
        continue
    olds, news, qs = by_ratio
    q = statistics.median(qs)
    lo, hi = median_ci(qs)
    up = sum(x > 1 for x in qs)
    # The instrumented side's own figure, new over old: when the bare
    # primitive's code (unchanged, e.g. parking_lot's) runs faster or
    # slower in one binary only, for where it landed, the ratio moves
    # with it although lockmeter's own time did not.
    by_instr = quotients(used, k, "instrumented", higher_better)
    iq = ilo = ihi = None
    if by_instr is not None:
        iq = statistics.median(by_instr[2])
        ilo, ihi = median_ci(by_instr[2])
    # WORSE only when the whole interval lies above 1.03, for the ratio
    # and for lockmeter's own figure alike; a median above it whose
    # interval reaches below is not resolved by these runs.
    if lo > 1.03 and (ilo is None or ilo > 1.03):
        flag = "  WORSE >3%"
        worse += 1
    elif lo > 1.03:
        flag = "  BARE MOVED (lockmeter's own figure is not worse)"
        bare_moved += 1
    elif q > 1.03:
        flag = "  NOISY"
        noisy += 1
    else:
        flag = ""
    if n_quiet is not None and n_quiet < MIN_QUIET:
        flag += f"  SHARED (under {MIN_QUIET} alternations on a core of their own: all used)"
        shared += 1
    instr = f"{iq:13.3f}  {ilo:.3f}-{ihi:.3f}" if iq is not None else f"{'-':>13}"
    print(f"{k:<56} {statistics.median(olds):7.3f} {statistics.median(news):7.3f} {q:8.3f}  {lo:.3f}-{hi:.3f}  {up:>2}/{len(used):<4}  {'-' if n_quiet is None else n_quiet:>5}  {instr}{flag}")
print(f"{len(rows)} rows compared over {n} alternations: {worse} worse by more than 3 % "
      f"(90 % CI of the median quotient above 1.03, of the ratio and of lockmeter's own figure), "
      f"{bare_moved} whose ratio is worse only because the bare side's figure moved, "
      f"{noisy} with a median above 1.03 that the runs do not resolve, "
      f"{shared} measured mostly on a shared core; 'new/old' > 1 is worse; "
      f"worse-in: of the alternations used ('quiet': those on a core of their own), "
      f"where new's ratio was worse")
PY
