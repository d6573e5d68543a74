#!/bin/sh
# Runs the whole pure and fake tiers RUNS times with 2 jobs while `stress --cpu 2` loads the
# machine, keeping the JSON report of every run that flagged something, and prints which
# checks failed in which run. Hunts flakiness that only load shows.
# Usage: tiers-under-load.sh RUNS OUT-DIR CONFORMANCE-BINARY SUT...
# Needs `stress` (Debian package stress). Stress is stopped by its PID, also on interrupt.
set -u
runs=$1 out=$2 conformance=$3
shift 3
mkdir -p "$out"
stress --cpu 2 >/dev/null 2>&1 &
stress_pid=$!
trap 'kill "$stress_pid" 2>/dev/null; wait "$stress_pid" 2>/dev/null' EXIT INT TERM
started=$(date +%s)
failed=0
run=1
while [ "$run" -le "$runs" ]; do
    report="$out/run-$run.json"
    if "$conformance" run --jobs 2 --seed "$run" --json-report "$report" -- "$@" >"$out/run-$run.log" 2>&1; then
        rm -f "$report" "$out/run-$run.log"
    else
        failed=$((failed + 1))
        printf 'run %s of %s flagged:\n' "$run" "$runs"
        grep -E '^(FAIL|CRASH|ERROR|WARN)' "$out/run-$run.log" || tail -5 "$out/run-$run.log"
    fi
    run=$((run + 1))
done
printf '%s of %s runs clean under stress --cpu 2 in %ss (load average: %s)\n' \
    "$((runs - failed))" "$runs" "$(($(date +%s) - started))" "$(cut -d' ' -f1-3 /proc/loadavg)"
[ "$failed" -eq 0 ]
