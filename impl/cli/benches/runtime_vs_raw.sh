#!/usr/bin/env bash
# Benchmarks of the runtime against raw tools on the real test guest (the runtime speed budget):
#   1. `stoat up` + `stoat wait --until reachable` vs raw qemu-system-x86_64 (the very argv
#      stoat used, read back from /proc, with QEMU's own user network in place of passt's
#      socket) + an ssh poll, both on a second boot.                          aim: 1.05x
#   2. `stoat --json exec vm true` (over the VM's reused connection) vs a fresh raw
#      `ssh ... true`, median of RUNS each,                                  aim: 0.25x
#      and vs a bare ssh client through the same master.                     aim: 1.3x
#   3. `stoat --json exec vm cat <16 MiB>` vs raw `ssh ... cat`, for UTF-8 and binary output,
#      with stoat's peak RSS.                                     aim: 1.1x, RSS < 4x output
#   4. `stoat cp` of 16 MiB to and from the guest vs a fresh raw `scp` with the same options.
#                                                                             aim: 1.1x
#
#   GUEST=.guest impl/cli/benches/runtime_vs_raw.sh   (make bench runs it when .guest exists)
#
# Every QEMU it starts is stopped by PID on exit; the data root is a temp dir.
set -euo pipefail

. "$(dirname "$0")/lib.sh"
guest="${GUEST:-$repo/.guest}"
image="$guest/stoat-testguest-cloud.qcow2"
[ -f "$image" ] || { echo "runtime_vs_raw: no guest at $guest (run make setup)"; exit 0; }
bench_stoat release
bench_sandbox -p /var/tmp stoat-bench.XXXXXX
qemu_pid=""
bench_on_exit '"$stoat" down bench >/dev/null 2>&1'
bench_on_exit '[ -z "$qemu_pid" ] || ! kill -0 "$qemu_pid" 2>/dev/null || kill "$qemu_pid"'

RUNS="${RUNS:-15}"
row() { printf '%-44s %8ss   %-30s %8ss   ratio %sx\n' "$1" "$2" "$3" "$4" "$(ratio "$2" "$4")"; }

"$stoat" create bench --image "$image" --ram 256 --cpus 1 >/dev/null
# A port the kernel hands out, pinned: an unpinned one is chosen afresh at every `up` when
# another run holds it, and the raw runs below must use the one the argv names.
"$stoat" update bench --ssh-port "$(bench_free_port)" >/dev/null
mapfile -t ssh_argv < <(bench_ssh_argv bench)

# 1. Boot to ssh. The first boot does cloud-init's once-per-instance work, so it is a warm-up;
#    stoat and raw QEMU are then timed on the same, later boot of the same disk.
"$stoat" up bench --no-apply >/dev/null
"$stoat" wait bench --until reachable --timeout 300s >/dev/null
"$stoat" down bench >/dev/null
t0=$(now)
"$stoat" up bench --no-apply >/dev/null
"$stoat" wait bench --until reachable --timeout 300s >/dev/null
t1=$(now)
stoat_boot=$(secs "$t0" "$t1")
pid=$(cat "$STOAT_HOME/bench/qemu.pid")
mapfile -d '' -t qemu_argv < "/proc/$pid/cmdline"
# A VM whose network is passt (a `-netdev stream` to its socket): the raw run gives QEMU its own
# user network instead, with the same ssh forward, so the ratio includes what passt costs.
ssh_port=$("$stoat" --json get bench | python3 -c 'import json,sys; print(json.load(sys.stdin)["data"]["vm"]["ssh_port"])')
for i in "${!qemu_argv[@]}"; do
    case "${qemu_argv[$i]}" in
        stream,id=n0,*) qemu_argv[$i]="user,id=n0,hostfwd=tcp:127.0.0.1:$ssh_port-:22" ;;
    esac
done
bench_console_to_file "$work/raw-console.log"
"$stoat" down bench >/dev/null

t0=$(now)
"${qemu_argv[@]}"
qemu_pid=$(cat "$STOAT_HOME/bench/qemu.pid")
until "${ssh_argv[@]}" true 2>/dev/null; do sleep 0.1; done
t1=$(now)
raw_boot=$(secs "$t0" "$t1")
kill "$qemu_pid"; while kill -0 "$qemu_pid" 2>/dev/null; do sleep 0.05; done; qemu_pid=""
row "stoat up + wait reachable" "$stoat_boot" "raw qemu + ssh poll" "$raw_boot"

# 2. A short command: the first exec starts the reused connection, later ones ride it.
"$stoat" up bench --no-apply >/dev/null
"$stoat" wait bench --until reachable --timeout 300s >/dev/null
"$stoat" exec bench -- sh -c 'head -c 16777216 /dev/urandom > /tmp/bin; base64 /tmp/bin | head -c 16777216 > /tmp/txt' >/dev/null
fresh_true=$(bench_median "${ssh_argv[@]}" true)
stoat_true=$(bench_median "$stoat" --json exec bench true)
row "stoat --json exec true (median of $RUNS)" "$stoat_true" "fresh raw ssh true" "$fresh_true"
# Where exec's time goes: the floor is a bare ssh client through the same master, running
# `true` (its stdin ended, as exec's is; then held open, as a terminal exec's is), then the
# command exec sends (the session mark, the guest command marked for a cancel and run by the
# login shell as a job of its own), then stoat's own start.
bench_mux_argv bench
wrapped="printf '\\036\\037stoat-session\\037\\036' >&2; "'exec 4>&2 2>/dev/null; set -m; STOAT_EXEC=bench '"'"'true'"'"' 2>&4 4>&- </dev/null'
mux_true=$(cd "$STOAT_HOME/bench" && bench_median "${mux_argv[@]}" true)
row "  raw ssh true through the master" "$mux_true" "fresh raw ssh true" "$fresh_true"
# Through stoat's relay (core ssh/relay.rs) a held-open stdin costs nothing, where passt's
# Nagle and the host's delayed ack had made an OpenSSH guest answer such a session 20-40 ms
# later.
mux_open=$(cd "$STOAT_HOME/bench" && STDIN_OPEN=1 bench_median "${mux_argv[@]}" true)
row "  the same, its stdin held open" "$mux_open" "fresh raw ssh true" "$fresh_true"
row "  raw ssh <exec's command> through the master" "$(cd "$STOAT_HOME/bench" && bench_median "${mux_argv[@]}" "$wrapped" 2>/dev/null)" "fresh raw ssh true" "$fresh_true"
# exec against the bare client, run turn about (PAIR_RUNS rounds, default 31): taken one
# after the other, the two medians moved by a third between runs of this script.
pair=$(cd "$STOAT_HOME/bench" && RUNS="${PAIR_RUNS:-31}" bench_pair "$stoat" --json exec bench true -- "${mux_argv[@]}" true)
read -r pair_exec pair_bare <<< "$pair"
row "stoat --json exec true vs the bare client" "$pair_exec" "raw ssh true through the master" "$pair_bare"
row "  stoat --json version" "$(bench_median "$stoat" --json version)" "fresh raw ssh true" "$fresh_true"

# 3. exec of 16 MiB (median of 3 runs each; peak RSS from one more run).
for kind in txt bin; do
    raw=$(RUNS=3 bench_median "${ssh_argv[@]}" cat /tmp/$kind)
    ours=$(RUNS=3 bench_median "$stoat" --json exec bench cat /tmp/$kind)
    rss=$( { /usr/bin/time -f '%M' "$stoat" --json exec bench cat /tmp/$kind > /dev/null; } 2>&1 | tail -1)
    label="stoat --json exec cat 16 MiB ($kind)"
    printf '%-44s %8ss   %-30s %8ss   ratio %sx   peak RSS %s MiB (%.1fx output)\n' "$label" "$ours" "raw ssh cat" "$raw" "$(ratio "$ours" "$raw")" "$((rss / 1024))" "$(python3 -c "print($rss/1024/16)")"
done

# 4. cp of 16 MiB both ways, against scp with the options stoat passes (from ssh-command's).
mapfile -t scp_argv < <(printf '%s\n' "${ssh_argv[@]}" | python3 -c '
import sys
argv = sys.stdin.read().split("\n")[:-1]
port = argv[argv.index("-p") + 1]
rest = [a for i, a in enumerate(argv[1:-1], 1) if a != "-p" and argv[i - 1] != "-p"]
print("\n".join(["scp", "-P", port, "-q", *rest]))')
login="${ssh_argv[-1]}"
head -c 16777216 /dev/urandom > "$work/up.bin"
row "stoat cp 16 MiB to the guest" "$(RUNS=5 bench_median "$stoat" --json cp "$work/up.bin" bench:/tmp/up.bin)" "fresh raw scp to" "$(RUNS=5 bench_median "${scp_argv[@]}" "$work/up.bin" "$login:/tmp/up.bin")"
row "stoat cp 16 MiB from the guest" "$(RUNS=5 bench_median "$stoat" --json cp bench:/tmp/up.bin "$work/down.bin")" "fresh raw scp from" "$(RUNS=5 bench_median "${scp_argv[@]}" "$login:/tmp/up.bin" "$work/down.bin")"
