# Helpers shared by the tmux scripts (tmux_demo.sh, tmux_fleet.sh): they
# set NAME (for messages) and SESSION, then source this file, which gives
# them T (tmux on a private server), PANE, PROMPT and a private WORK
# directory (the script's EXIT trap removes it).

command -v tmux >/dev/null || { echo "$NAME: tmux is not installed" >&2; exit 2; }
T="tmux -L lockmeter-$NAME-$$"
PANE="$SESSION:0.0"
PROMPT='READY$ '
WORK=$(mktemp -d)
chmod 700 "$WORK"
trap 'rm -rf "$WORK"' EXIT

# $1 as an absolute path, after checking that it is an executable.
executable() {
    [ -x "$1" ] || { echo "$NAME: $1 is not an executable" >&2; exit 2; }
    case $1 in /*) echo "$1" ;; *) echo "$PWD/$1" ;; esac
}

screen() { $T capture-pane -p -t "$PANE"; }

fail() {
    echo "$NAME: FAILED: $*" >&2
    echo "----- screen -----" >&2
    screen >&2
    echo "------------------" >&2
    exit 1
}

CHECKS=0
ok() {
    CHECKS=$((CHECKS + 1))
    echo "$NAME: ok: $*"
}

# Waits up to $2 seconds (default 15) for the screen to match regex $1.
wait_for() {
    local pattern=$1 limit=${2:-15} i=0
    while [ "$i" -lt $((limit * 10)) ]; do
        screen | grep -Eq -- "$pattern" && return 0
        sleep 0.1
        i=$((i + 1))
    done
    return 1
}

# Waits up to $2 seconds (default 10) for the screen to stop matching $1.
wait_gone() {
    local pattern=$1 limit=${2:-10} i=0
    while [ "$i" -lt $((limit * 10)) ]; do
        screen | grep -Eq -- "$pattern" || return 0
        sleep 0.1
        i=$((i + 1))
    done
    return 1
}

keys() { $T send-keys -t "$PANE" "$@"; }

alternate_on() { $T display-message -p -t "$PANE" '#{alternate_on}'; }
