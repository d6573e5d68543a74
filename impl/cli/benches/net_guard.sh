#!/usr/bin/env bash
# What the network guard (core qemu/netguard.rs) costs, on the real test guest: the same VM
# timed with the guard between QEMU and passt (the default) and without it (the
# `host_loopback` opt-in, where QEMU connects to passt directly), on the same disk:
#   `stoat --json exec vm true` (median of RUNS), `stoat cp` of 16 MiB to and from the guest
#   (median of 5), and a 16 MiB `exec cat` (median of 3).               aim: 1.1x or less
#
#   GUEST=.guest impl/cli/benches/net_guard.sh
#
# Every QEMU it starts is stopped on exit (`stoat down`); the data root is a temp dir.
set -euo pipefail

. "$(dirname "$0")/lib.sh"
guest="${GUEST:-$repo/.guest}"
image="$guest/stoat-testguest-cloud.qcow2"
[ -f "$image" ] || { echo "net_guard: no guest at $guest (run make setup)"; exit 0; }
bench_stoat release
bench_sandbox -p /var/tmp stoat-bench.XXXXXX
bench_on_exit '"$stoat" down bench >/dev/null 2>&1'

RUNS="${RUNS:-15}"

"$stoat" create bench --image "$image" --ram 256 --cpus 1 >/dev/null
head -c 16777216 /dev/urandom > "$work/up.bin"

# Prints "exec_true cp_to cp_from cat" for the VM as it boots now.
measure() {
    "$stoat" up bench --no-apply >/dev/null
    "$stoat" exec bench -- sh -c 'head -c 16777216 /dev/urandom > /tmp/bin' >/dev/null
    local exec_true cp_to cp_from cat
    exec_true=$(bench_median "$stoat" --json exec bench true)
    cp_to=$(RUNS=5 bench_median "$stoat" --json cp "$work/up.bin" bench:/tmp/up.bin)
    cp_from=$(RUNS=5 bench_median "$stoat" --json cp bench:/tmp/up.bin "$work/down.bin")
    cat=$(RUNS=3 bench_median "$stoat" --json exec bench cat /tmp/bin)
    "$stoat" down bench >/dev/null
    echo "$exec_true $cp_to $cp_from $cat"
}

read -r g_true g_to g_from g_cat < <(measure)
"$stoat" update bench --host-loopback >/dev/null
read -r o_true o_to o_from o_cat < <(measure)

row() { printf '%-36s guarded %8ss   no guard %8ss   ratio %sx\n' "$1" "$2" "$3" "$(ratio "$2" "$3")"; }
row "exec true (median of $RUNS)" "$g_true" "$o_true"
row "cp 16 MiB to the guest" "$g_to" "$o_to"
row "cp 16 MiB from the guest" "$g_from" "$o_from"
row "exec cat 16 MiB" "$g_cat" "$o_cat"
