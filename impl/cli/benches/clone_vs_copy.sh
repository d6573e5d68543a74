#!/usr/bin/env bash
# Benchmark: `stoat --json clone` of a stopped disk-mode VM vs the two ways a person would copy
# the same disk by hand: `cp --reflink=auto` and `qemu-img convert -O qcow2`. For a 1 GiB and
# a 10 GiB qcow2 (virtual size), each holding DATA_MIB MiB of written data and otherwise
# sparse (unallocated), as a freshly installed guest mostly is. Prints each time and stoat's
# ratio to each baseline (a ratio near 1 vs cp means the clone costs what copying costs).
#
#   DATA_MIB=512 impl/cli/benches/clone_vs_copy.sh     # default 128
#   STOAT=target/release/stoat impl/cli/benches/clone_vs_copy.sh
#
# The copy is I/O-bound, so the debug binary (the default) measures the same thing. Each time
# is the best of RUNS (default 3) runs, to damp a busy machine's noise.
set -euo pipefail

DATA_MIB="${DATA_MIB:-128}"
RUNS="${RUNS:-3}"
. "$(dirname "$0")/lib.sh"
bench_stoat debug
bench_sandbox
mkdir -p "$STOAT_HOME/isos"
: > "$STOAT_HOME/isos/alpine-virt-3.24.1-x86_64.iso"

# best <command...>: the shortest of RUNS timed runs, each followed by sync and by `undo`.
best() {
    local min="" t0 t1 t
    for _ in $(seq "$RUNS"); do
        t0=$(now); "$@" > /dev/null; sync; t1=$(now)
        t=$(secs "$t0" "$t1")
        if [ -z "$min" ] || awk -v a="$t" -v b="$min" 'BEGIN { exit !(a < b) }'; then min="$t"; fi
        undo
    done
    echo "$min"
}

printf '%-6s %10s %12s %12s %10s %10s %s\n' size "stoat s" "cp s" "convert s" "vs cp" "vs conv" "(data ${DATA_MIB} MiB, rest sparse; best of $RUNS)"
for size in 1G 10G; do
    name="src$size"
    "$stoat" --json create "$name" --image alpine-virt --mode disk --disk "$size" > /dev/null
    src="$STOAT_HOME/$name/disk.qcow2"
    qemu-io -f qcow2 -c "write -P 0x5a 0 ${DATA_MIB}M" "$src" > /dev/null
    sync

    undo() { cmp -s "$src" "$STOAT_HOME/copy/disk.qcow2" || { echo "clone differs" >&2; exit 1; }
             "$stoat" --json rm -y copy > /dev/null; }
    t_stoat=$(best "$stoat" --json clone "$name" copy)
    undo() { rm -f "$work/cp.qcow2"; }
    t_cp=$(best cp --reflink=auto "$src" "$work/cp.qcow2")
    undo() { rm -f "$work/conv.qcow2"; }
    t_conv=$(best qemu-img convert -f qcow2 -O qcow2 "$src" "$work/conv.qcow2")

    printf '%-6s %10.3f %12.3f %12.3f %10s %10s\n' "$size" "$t_stoat" "$t_cp" "$t_conv" \
        "$(ratio "$t_stoat" "$t_cp")" "$(ratio "$t_stoat" "$t_conv")"
    "$stoat" --json rm -y "$name" > /dev/null
done
