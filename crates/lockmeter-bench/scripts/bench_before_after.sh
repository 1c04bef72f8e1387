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
# Env: ALTS=6 WORK=target/bench-before-after
set -euo pipefail
ROOT=$(git rev-parse --show-toplevel)
OLD=${1:?usage: $0 OLD_REV [lockmeter-bench args]}
shift
ARGS=("$@")
ALTS=${ALTS:-6}
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

for i in $(seq 1 "$ALTS"); do
  echo "alternation $i/$ALTS (load $(cut -d' ' -f1 /proc/loadavg))" >&2
  "$OLD_BIN" --json "${ARGS[@]}" >"$WORK/old.$i.json" 2>/dev/null
  "$NEW_BIN" --json "${ARGS[@]}" >"$WORK/new.$i.json" 2>/dev/null
done

python3 - "$WORK" "$ALTS" <<'PY'
import json, statistics, sys
work, alts = sys.argv[1], int(sys.argv[2])
runs = [(json.load(open(f"{work}/old.{i}.json")), json.load(open(f"{work}/new.{i}.json")))
        for i in range(1, alts + 1)]
rows = [k for k in runs[0][1] if all(k in o and k in n for o, n in runs)]
print(f"{'row':<56} {'old':>7} {'new':>7} {'new/old':>8}  range")
worse = 0
for k in rows:
    olds = [o[k]["ratio"] for o, _ in runs]
    news = [n[k]["ratio"] for _, n in runs]
    if any(r is None or r <= 0 for r in olds + news):
        continue
    # Throughput rows ("items/s"-like units or >= goals): higher is better.
    higher_better = str(runs[0][1][k].get("goal", "")).startswith(">=")
    qs = [(o / n if higher_better else n / o) for o, n in zip(olds, news)]
    q = statistics.median(qs)
    flag = "  WORSE >3%" if q > 1.03 else ""
    worse += q > 1.03
    print(f"{k:<56} {statistics.median(olds):7.3f} {statistics.median(news):7.3f} {q:8.3f}  {min(qs):.3f}-{max(qs):.3f}{flag}")
print(f"{len(rows)} rows compared, {worse} worse by more than 3 % (median of {alts} alternations; 'new/old' > 1 is worse)")
PY
