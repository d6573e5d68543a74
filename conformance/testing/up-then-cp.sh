#!/bin/sh
# Boots a VM RUNS times and copies a file into it right after each `up`, the moment a cloud
# image's sshd may still be restarting: `stoat up w && stoat cp f w:/tmp/`, then reads the
# file back with exec and stops the VM. Counts the runs that passed and says how long each
# took; exits 1 when any failed. Proof that cp reaches a guest that `up` calls reachable.
# Usage: up-then-cp.sh RUNS STOAT IMAGE [CREATE-ARGS...]
#   IMAGE is a qcow2 file (the test guest's or the Debian cloud image); CREATE-ARGS go to
#   `stoat create` (for example --os debian --ram 1024).
# Everything lives in a fresh data root that is removed at the end; a QEMU still running
# then is stopped by the PID in its pidfile.
set -u
runs=$1 stoat=$2 image=$3
shift 3
work=$(mktemp -d)
export STOAT_HOME="$work/root"
cleanup() {
    "$stoat" down w >/dev/null 2>&1
    for pidfile in "$STOAT_HOME/w/qemu.pid" "$STOAT_HOME/w/passt.pid"; do
        if [ -f "$pidfile" ]; then
            pid=$(cat "$pidfile")
            if tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -q "$STOAT_HOME/w/"; then
                kill -KILL "$pid"
            fi
        fi
    done
    rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
"$stoat" create w --image "$image" "$@" >/dev/null || exit 1
head -c 65536 /dev/urandom >"$work/f"
want=$(sha256sum <"$work/f" | cut -d' ' -f1)
passed=0 run=1
while [ "$run" -le "$runs" ]; do
    started=$(date +%s)
    verdict=passed
    if ! out=$("$stoat" up w 2>&1); then
        verdict="up failed: $out"
    elif ! out=$("$stoat" cp "$work/f" w:/tmp/ 2>&1); then
        verdict="cp failed: $out"
    elif [ "$("$stoat" exec w -- sha256sum /tmp/f 2>&1 | cut -d' ' -f1)" != "$want" ]; then
        verdict="the copy differs from the file"
    fi
    "$stoat" down w >/dev/null 2>&1
    [ "$verdict" = passed ] && passed=$((passed + 1))
    printf 'run %s: %s (%ss)\n' "$run" "$verdict" "$(($(date +%s) - started))"
    run=$((run + 1))
done
printf '%s of %s passed\n' "$passed" "$runs"
[ "$passed" = "$runs" ]
