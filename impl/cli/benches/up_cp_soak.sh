#!/usr/bin/env bash
# A soak, not a benchmark: `stoat up w && stoat cp f w:/tmp/` on a VM's first boot, N times,
# each with a new VM: a first boot is when a cloud image's sshd used to restart right after it
# first answered, the window cp landed in. Prints each failure's output and, last, PASSED/N.
#   impl/cli/benches/up_cp_soak.sh IMAGE [N]   IMAGE: a cloud qcow2 (the fast test guest's
#                                              or the Debian image of docs/distro-guest.md)
# STOAT=path uses a built stoat; otherwise a debug build is made. CPUS and RAM (MB) size each
# VM (default 1 and 512; the Debian image wants 2 and 1024).
set -euo pipefail
. "$(dirname "$0")/lib.sh"

image="${1:?usage: up_cp_soak.sh IMAGE [N]}"
runs="${2:-50}"
cpus="${CPUS:-1}"
ram="${RAM:-512}"
# A signal ends the script through its exit hooks, which stop the VM it left running.
trap 'exit 130' INT TERM
bench_stoat debug
bench_sandbox
printf 'soak %s\n' "$(date -u +%FT%TZ)" > "$work/f"
vm=""
bench_on_exit '[ -z "$vm" ] || "$stoat" down "$vm" >/dev/null 2>&1'

passed=0
for i in $(seq 1 "$runs"); do
    vm="soak$i"
    "$stoat" create "$vm" --image "$image" --cpus "$cpus" --ram "$ram" >/dev/null
    t0=$(now)
    if out=$("$stoat" up "$vm" 2>&1 && "$stoat" cp "$work/f" "$vm:/tmp/" 2>&1 \
        && "$stoat" exec "$vm" -- cat /tmp/f 2>&1 | cmp -s - "$work/f"); then
        passed=$((passed + 1))
        echo "run $i: ok ($(secs "$t0" "$(now)") s)"
    else
        echo "run $i: FAILED"
        printf '%s\n' "$out" | sed 's/^/    /'
    fi
    "$stoat" down "$vm" >/dev/null 2>&1 || true
    "$stoat" rm "$vm" -y >/dev/null
    vm=""
done
echo "PASSED $passed/$runs"
[ "$passed" = "$runs" ]
