#!/usr/bin/env bash
# Benchmarks of the runtime against raw tools on the real test guest (the runtime speed budget):
#   1. `stoat up` + `stoat wait --until reachable` vs raw qemu-system-x86_64 (the very argv
#      stoat used, read back from /proc) + an ssh poll, both on a second boot.  aim: 1.15x
#   2. `stoat --json exec vm cat <16 MiB>` vs raw `ssh ... cat`, for UTF-8 and binary output,
#      with stoat's peak RSS.                                     aim: 1.2x, RSS < 4x output
#
#   GUEST=.guest impl/cli/benches/runtime_vs_raw.sh   (make bench runs it when .guest exists)
#
# Every QEMU it starts is stopped by PID on exit; the data root is a temp dir.
set -euo pipefail

repo="$(cd "$(dirname "$0")/../../.." && pwd)"
guest="${GUEST:-$repo/.guest}"
image="$guest/stoat-testguest-cloud.qcow2"
[ -f "$image" ] || { echo "runtime_vs_raw: no guest at $guest (run make setup)"; exit 0; }
cargo build --release -q -p stoat-cli --manifest-path "$repo/Cargo.toml"
stoat="${CARGO_TARGET_DIR:-$repo/target}/release/stoat"

work="$(mktemp -d -p /var/tmp stoat-bench.XXXXXX)"
export STOAT_HOME="$work/root" HOME="$work/home" STOAT_ACCEL=tcg STOAT_GRAPHICAL=0
mkdir -p "$HOME"
qemu_pid=""
cleanup() {
    "$stoat" down bench >/dev/null 2>&1 || true
    if [ -n "$qemu_pid" ] && kill -0 "$qemu_pid" 2>/dev/null; then kill "$qemu_pid"; fi
    rm -rf "$work"
}
trap cleanup EXIT

now() { date +%s.%N; }
ratio() { python3 -c "import sys; a,b=map(float,sys.argv[1:]); print(f'{a/b:.2f}x')" "$1" "$2"; }
secs() { python3 -c "import sys; a,b=map(float,sys.argv[1:]); print(f'{b-a:.3f}')" "$1" "$2"; }

"$stoat" create bench --image "$image" --ram 256 --cpus 1 >/dev/null
mapfile -t ssh_argv < <("$stoat" --json ssh-command bench | python3 -c 'import json,sys; [print(a) for a in json.loads(sys.stdin.read())["data"]["argv"]]')

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
"$stoat" down bench >/dev/null

t0=$(now)
"${qemu_argv[@]}"
qemu_pid=$(cat "$STOAT_HOME/bench/qemu.pid")
until "${ssh_argv[@]}" true 2>/dev/null; do sleep 0.1; done
t1=$(now)
raw_boot=$(secs "$t0" "$t1")
kill "$qemu_pid"; while kill -0 "$qemu_pid" 2>/dev/null; do sleep 0.05; done; qemu_pid=""
printf '%-44s %8ss   %-30s %8ss   ratio %s\n' "stoat up + wait reachable" "$stoat_boot" "raw qemu + ssh poll" "$raw_boot" "$(ratio "$stoat_boot" "$raw_boot")"

# 2. exec of 16 MiB.
"$stoat" up bench --no-apply >/dev/null
"$stoat" wait bench --until reachable --timeout 300s >/dev/null
"$stoat" exec bench -- sh -c 'head -c 16777216 /dev/urandom > /tmp/bin; base64 /tmp/bin | head -c 16777216 > /tmp/txt' >/dev/null
for kind in txt bin; do
    t0=$(now); "${ssh_argv[@]}" cat /tmp/$kind > /dev/null; t1=$(now)
    raw=$(secs "$t0" "$t1")
    t0=$(now)
    rss=$( { /usr/bin/time -f '%M' "$stoat" --json exec bench cat /tmp/$kind > /dev/null; } 2>&1 | tail -1)
    t1=$(now)
    ours=$(secs "$t0" "$t1")
    label="stoat --json exec cat 16 MiB ($kind)"
    printf '%-44s %8ss   %-30s %8ss   ratio %s   peak RSS %s MiB (%.1fx output)\n' "$label" "$ours" "raw ssh cat" "$raw" "$(ratio "$ours" "$raw")" "$((rss / 1024))" "$(python3 -c "print($rss/1024/16)")"
done
