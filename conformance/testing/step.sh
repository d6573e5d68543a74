#!/usr/bin/env bash
# Runs one step of `make test` and then says how long it took and how it ended, so a CI log
# shows where the time went:  step.sh CMD ARGS...
set -u
start=$(date +%s)
"$@"
status=$?
echo "== step took $(( $(date +%s) - start )) s (exit $status): $*" >&2
exit "$status"
