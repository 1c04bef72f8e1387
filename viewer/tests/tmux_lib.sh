# Helpers shared by the tmux scripts (tmux_demo.sh, tmux_fleet.sh): they
# set NAME (for messages), T (the tmux command on a private server) and
# PANE, then source this file.

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
