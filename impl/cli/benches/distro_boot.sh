#!/usr/bin/env bash
# Boot-to-reachable of the Debian cloud image (conformance/guest/distro/build.sh), through
# stoat against raw QEMU, on a first boot (cloud-init's per-instance work: user, keys,
# growpart, mounts) and on a second boot of the same disk:
#   stoat: `stoat up --no-apply`, which returns once stoat can log in (an authenticating
#          `ssh ... true`, never a banner probe; that login stays as the VM's master), then
#          `stoat exec bench true` through that master, repeated until it works (a guard:
#          an `up` that returned before a login worked would still be timed to one)
#   raw:   the very argv stoat ran (read back from /proc), with the same seed ISO, on a fresh
#          overlay for the first boot, and QEMU's own user network with the same ssh forward
#          in place of stoat's network socket; then an ssh poll (`ssh ... true` until it works)
# Both end at the same point: the first login that runs a command. Later boots of the two
# disks then go turn about, BOOT_PAIRS pairs in all (default 3), and their ratios' median is
# printed beside the first and second boots' single pairs.
# Then, on stoat's second boot, `stoat --json exec bench true` over the VM's master against a
# fresh raw `ssh ... true` (aim 0.25x) and against a bare ssh client through the same master
# (aim 1.3x; that pair run turn about, PAIR_RUNS rounds, default 31; the client also with
# its stdin held open, as a terminal exec's is), medians of RUNS (default 15).
# Prints each pair and the ratio stoat/raw. Runs under flock /tmp/stoat-guest.lock.
#
#   DISTRO_GUEST=.guest-distro impl/cli/benches/distro_boot.sh   (make bench-distro)
#
# Every QEMU it starts is stopped by PID on exit; the data root is a temp dir.
set -euo pipefail
# A failed `up` inside $(...) must end the run, not fall through to an endless login poll.
shopt -s inherit_errexit

. "$(dirname "$0")/lib.sh"
guest="${DISTRO_GUEST:-$repo/.guest-distro}"
image="$guest/stoat-testguest-cloud.qcow2"
[ -e "$image" ] || { echo "distro_boot: no distro image at $guest (run make distro-guest), not run"; exit 0; }
image=$(readlink -f "$image")
[ -n "${DISTRO_BENCH_LOCKED:-}" ] || exec env DISTRO_BENCH_LOCKED=1 flock /tmp/stoat-guest.lock "$0" "$@"
bench_stoat release
bench_sandbox -p /var/tmp stoat-bench-distro.XXXXXX
export STOAT_DOWN_TIMEOUT_SECS=300
qemu_pid=""
bench_on_exit '"$stoat" down bench >/dev/null 2>&1'
bench_on_exit 'raw_qemu_pid; [ -z "$qemu_pid" ] || ! kill -0 "$qemu_pid" 2>/dev/null || kill "$qemu_pid"'

# The raw QEMU's PID, read from its pidfile: raw_boot runs in a command substitution (a
# subshell), so a variable it sets never reaches the shell that powers down or cleans up.
raw_qemu_pid() {
    qemu_pid=""
    local file="$STOAT_HOME/bench/qemu.pid" pid
    [ -s "$file" ] || return 0
    pid=$(cat "$file")
    if tr '\0' ' ' < "/proc/$pid/cmdline" 2>/dev/null | grep -q qemu-system; then qemu_pid=$pid; fi
}
powerdown() {  # QMP system_powerdown on the raw QEMU, then wait for it to exit
    raw_qemu_pid
    [ -n "$qemu_pid" ] || { echo "distro_boot: the raw QEMU is not running" >&2; exit 1; }
    python3 - "$STOAT_HOME/bench/qmp.sock" <<'PY'
import json, socket, sys
s = socket.socket(socket.AF_UNIX); s.connect(sys.argv[1]); f = s.makefile("rw")
f.readline()
for cmd in ("qmp_capabilities", "system_powerdown"):
    f.write(json.dumps({"execute": cmd}) + "\n"); f.flush()
    while "return" not in json.loads(f.readline()): pass
PY
    while kill -0 "$qemu_pid" 2>/dev/null; do sleep 0.2; done; qemu_pid=""
}
stoat_boot() {
    local t0 t1
    t0=$(now)
    "$stoat" up bench --no-apply --timeout 900s >/dev/null
    until "$stoat" exec bench true >/dev/null 2>&1; do sleep 0.2; done
    t1=$(now)
    secs "$t0" "$t1" 1
}
raw_boot() {
    local t0 t1
    t0=$(now)
    "${qemu_argv[@]}"
    until "${ssh_argv[@]}" true 2>/dev/null; do sleep 0.2; done
    t1=$(now)
    secs "$t0" "$t1" 1
}

"$stoat" create bench --image "$image" --os debian --ram 1024 --cpus 2 --disk 4G >/dev/null
# A port the kernel hands out, away from the 2200+ range other runs on a shared host use.
port=$(bench_free_port)
"$stoat" update bench --ssh-port "$port" >/dev/null
mapfile -t ssh_argv < <(bench_ssh_argv bench)
ssh_argv=("${ssh_argv[@]:0:1}" -o ConnectTimeout=5 "${ssh_argv[@]:1}")

stoat_first=$(stoat_boot); echo "stoat first boot: ${stoat_first}s" >&2
pid=$(cat "$STOAT_HOME/bench/qemu.pid")
mapfile -d '' -t qemu_argv < "/proc/$pid/cmdline"
# stoat's QEMU reaches its network through a socket (`-netdev stream`, to the network guard
# and passt) that is gone once stoat stops the VM: the raw run gives QEMU its own user network
# instead, with the same ssh forward, so the ratio includes what stoat's network costs.
for i in "${!qemu_argv[@]}"; do
    case "${qemu_argv[$i]}" in
        stream,id=n0,*) qemu_argv[$i]="user,id=n0,hostfwd=tcp:127.0.0.1:$port-:22" ;;
    esac
done
bench_console_to_file "$work/raw-console.log"
"$stoat" down bench >/dev/null
stoat_second=$(stoat_boot); echo "stoat second boot: ${stoat_second}s" >&2
# A short command on this guest's OpenSSH, the VM's master up since the boot: stoat's exec,
# a fresh raw ssh, and the floor (a bare ssh client through the same master).
fresh_true=$(bench_median "${ssh_argv[@]}" true)
stoat_true=$(bench_median "$stoat" --json exec bench true)
bench_mux_argv bench
mux_true=$(cd "$STOAT_HOME/bench" && bench_median "${mux_argv[@]}" true)
# The same bare client with its stdin held open, as a terminal exec's is (until the master
# went through stoat's relay, core ssh/relay.rs, OpenSSH's answer to it came 20-40 ms later:
# passt's Nagle, the host's delayed ack).
mux_open=$(cd "$STOAT_HOME/bench" && STDIN_OPEN=1 bench_median "${mux_argv[@]}" true)
# exec against the bare client, run turn about (PAIR_RUNS rounds, default 31): taken one
# after the other, the two medians move with the host between them.
pair=$(cd "$STOAT_HOME/bench" && RUNS="${PAIR_RUNS:-31}" bench_pair "$stoat" --json exec bench true -- "${mux_argv[@]}" true)
read -r pair_exec pair_bare <<< "$pair"
"$stoat" down bench >/dev/null

# Raw QEMU on a fresh overlay made the way stoat makes it, with stoat's seed ISO.
disk="$STOAT_HOME/bench/disk.qcow2"
mv "$disk" "$work/stoat-disk.qcow2"
qemu-img create -q -f qcow2 -b "$image" -F qcow2 "$disk"
qemu-img resize -q "$disk" 4G
raw_first=$(raw_boot); echo "raw first boot: ${raw_first}s" >&2
powerdown
raw_second=$(raw_boot); echo "raw second boot: ${raw_second}s" >&2
powerdown
# More later boots, stoat and raw turn about, each on its own disk (BOOT_PAIRS pairs in all,
# default 3): one pair moved by more than the aim's 5 % from run to run.
later_ratios=("$(ratio "$stoat_second" "$raw_second")")
for _ in $(seq 2 "${BOOT_PAIRS:-3}"); do
    mv "$disk" "$work/raw-disk.qcow2"
    mv "$work/stoat-disk.qcow2" "$disk"
    stoat_later=$(stoat_boot); echo "stoat later boot: ${stoat_later}s" >&2
    "$stoat" down bench >/dev/null
    mv "$disk" "$work/stoat-disk.qcow2"
    mv "$work/raw-disk.qcow2" "$disk"
    raw_later=$(raw_boot); echo "raw later boot: ${raw_later}s" >&2
    powerdown
    later_ratios+=("$(ratio "$stoat_later" "$raw_later")")
done
later_median=$(printf '%s\n' "${later_ratios[@]}" | python3 -c 'import statistics, sys; print(statistics.median(float(x) for x in sys.stdin))')

row() { printf '%-40s %7ss   %-34s %7ss   ratio %sx\n' "$1" "$2" "$3" "$4" "$(ratio "$2" "$4")"; }
echo "Debian $(sed -n 's/^suite: //p' "$guest/manifest.txt") cloud image, TCG, 2 vCPUs, 1 GiB, disk 4G; load $(cut -d' ' -f1 /proc/loadavg)"
row "stoat up + wait reachable (first boot)" "$stoat_first" "raw qemu + ssh poll (first boot)" "$raw_first"
row "stoat up + wait reachable (second boot)" "$stoat_second" "raw qemu + ssh poll (second boot)" "$raw_second"
echo "later boots, stoat/raw per pair: ${later_ratios[*]}; median ${later_median}x (aim 1.05x)"
row "stoat --json exec true (median of ${RUNS:-15})" "$stoat_true" "fresh raw ssh true" "$fresh_true"
row "  raw ssh true through the master" "$mux_true" "fresh raw ssh true" "$fresh_true"
row "  the same, its stdin held open" "$mux_open" "fresh raw ssh true" "$fresh_true"
row "stoat --json exec true vs the bare client" "$pair_exec" "raw ssh true through the master" "$pair_bare"
