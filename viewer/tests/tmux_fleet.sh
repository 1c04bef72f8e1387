#!/usr/bin/env bash
# Drives `lockmeter top --all` in a real terminal through tmux over four
# real processes of one program (crates/lockmeter/examples/endpoint_demo.rs
# with LOCKMETER_LISTEN=1, taking demo.counter 1000, 2000, 3000 and 4000
# times): the merged lock row shows the exact sum, expanding it shows one
# row per process with its pid in the PID column, killing one process
# mid-view marks it gone in the title while the view runs on with the same
# totals, a fifth process started after the view opened joins it (the
# view scans for new endpoints every 2 s) with its count added, and q gives
# the terminal back.
#
# Usage: viewer/tests/tmux_fleet.sh PATH/TO/lockmeter PATH/TO/endpoint_demo
# Exits non-zero on the first failed check and prints the screen it saw.
set -u

NAME=tmux_fleet
SESSION=fleet
source "$(dirname "$0")/tmux_lib.sh"
USAGE="usage: $0 PATH/TO/lockmeter PATH/TO/endpoint_demo"
BIN=$(executable "${1:?$USAGE}") || exit 2
DEMO=$(executable "${2:?$USAGE}") || exit 2
PIDS=()

cleanup() {
    $T kill-server 2>/dev/null
    # Killed and reaped one by one, quietly, before their directory goes.
    for p in "${PIDS[@]}"; do
        kill -9 "$p" && wait "$p"
    done 2>/dev/null
    rm -rf "$WORK"
}
trap cleanup EXIT

# Demo processes, each kept alive by a stdin that stays open.
mkfifo "$WORK/hold"
start_demo() {
    LOCKMETER_LISTEN=1 LOCKMETER_QUIET=1 XDG_RUNTIME_DIR=$WORK \
        "$DEMO" "$1" 2 <"$WORK/hold" >"$WORK/out.$1" 2>&1 &
    PIDS+=($!)
}
ready_demo() {
    local i=0
    until grep -q "^ready $1" "$WORK/out.$1" 2>/dev/null; do
        i=$((i + 1))
        [ "$i" -lt 600 ] || { echo "tmux_fleet: demo $1 never got ready" >&2; exit 1; }
        sleep 0.1
    done
}
for n in 1000 2000 3000 4000; do start_demo "$n"; done
exec 3>"$WORK/hold"
for n in 1000 2000 3000 4000; do ready_demo "$n"; done
ok "4 demo processes ready (pids ${PIDS[*]})"

$T -f /dev/null new-session -d -s "$SESSION" -x 170 -y 30 \
    "env -i PATH=/usr/bin:/bin HOME=$WORK TERM=xterm-256color XDG_RUNTIME_DIR=$WORK PS1='$PROMPT' bash --norc --noprofile"
wait_for '^READY\$' 10 || fail "no shell prompt"
keys -l "clear; $BIN top --all --totals --interval 200"
keys Enter

wait_for '4 processes \(endpoint_demo\)' 20 || fail "the title does not say 4 processes"
ok "title: 4 processes"
# TOTAL is the fourth number from the end (then NOWAIT, SPIN, RJECT).
COUNTS=' +[0-9]+ +[0-9]+ +[0-9]+ *$'
wait_for "demo\\.counter .* 10000$COUNTS" 20 || fail "the merged row is not the exact sum 10000"
ok "merged demo.counter row: TOTAL 10000"

keys Right
wait_for "├ .* ${PIDS[0]} " 10 || fail "expanding shows no per-process rows"
screen | grep -Eq -- 'NAME +PID ' || fail "no PID column after NAME"
for i in 0 1 2 3; do
    n=$(( (i + 1) * 1000 ))
    screen | grep -Eq -- "├ .* ${PIDS[$i]} .* $n$COUNTS" \
        || fail "no row of pid ${PIDS[$i]} with its $n acquisitions"
done
ok "expanded: one row per process, its pid in the PID column, its exact count"

victim=${PIDS[2]}
{ kill -9 "$victim" && wait "$victim"; } 2>/dev/null
wait_for "gone: pid $victim" 20 || fail "the killed process is not marked gone"
ok "killed pid $victim is marked gone"
sleep 1
screen | grep -Eq 'lockmeter +│' || fail "the view did not survive the kill"
screen | grep -Eq -- "demo\\.counter .* 10000$COUNTS" || fail "the totals changed after the kill"
ok "the view runs on with the same totals"

# A process that starts after the view opened joins it.
start_demo 5000
ready_demo 5000
late=${PIDS[4]}
wait_for '5 processes \(endpoint_demo\)' 20 || fail "the late process is not counted in the title"
wait_for "├ .* $late .* 5000$COUNTS" 20 || fail "no row of the late pid $late with its 5000 acquisitions"
wait_for "demo\\.counter .* 15000$COUNTS" 20 || fail "the late process's count is not in the sum"
ok "late pid $late joined: its row, and the sum 15000"

keys q
i=0
while screen | grep -Eq 'lockmeter +│'; do
    i=$((i + 1))
    [ "$i" -lt 100 ] || fail "q did not quit"
    sleep 0.1
done
[ "$(alternate_on)" = 0 ] || fail "still on the alternate screen"
wait_for '^READY\$' 5 || fail "no shell prompt after quitting"
ok "q quits and gives the terminal back"

echo "tmux_fleet: all $CHECKS checks passed"
