#!/bin/sh
# Runs the fake-tier up/down checks RUNS times in a row while `stress --cpu 2` loads the
# machine, and stops at the first failing run. Proof that the fake qemu's ready signal (its
# pidfile) holds under load. Usage: up-under-load.sh RUNS CONFORMANCE-BINARY SUT...
# Needs `stress` (Debian package stress). Stress is stopped by its PID, also on interrupt.
set -u
runs=$1 conformance=$2
shift 2
stress --cpu 2 >/dev/null 2>&1 &
stress_pid=$!
trap 'kill "$stress_pid" 2>/dev/null; wait "$stress_pid" 2>/dev/null' EXIT INT TERM
started=$(date +%s)
run=1
while [ "$run" -le "$runs" ]; do
    if ! out=$("$conformance" run --tier fake --id 'UP.*' --id 'DOWN.*' --seed "$run" -- "$@" 2>&1); then
        printf 'run %s of %s FAILED:\n%s\n' "$run" "$runs" "$out"
        exit 1
    fi
    run=$((run + 1))
done
printf '%s runs in a row passed under stress --cpu 2 in %ss (load average: %s)\n' \
    "$runs" "$(($(date +%s) - started))" "$(cut -d' ' -f1-3 /proc/loadavg)"
