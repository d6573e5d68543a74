# The preamble every impl/cli/benches/*.sh shares; sourced, never run:
#   . "$(dirname "$0")/lib.sh"
# It sets `repo` (the repository root) and offers:
#   bench_stoat release|debug   builds stoat-cli and sets `stoat` (STOAT=path skips the build)
#   bench_sandbox [mktemp args] a temp dir `work` with the data root and HOME in it, exported
#                               with STOAT_ACCEL=tcg and STOAT_GRAPHICAL=0; removed on exit
#   bench_on_exit 'command'     runs the command on exit (before `work` goes), errors ignored
#   now, secs T0 T1 [DIGITS], ratio A B (A/B, two decimals), bench_free_port,
#   bench_median CMD...         median wall seconds of RUNS runs (default 15) of CMD, whose
#                               output is discarded and which must succeed; its stdin is
#                               /dev/null, or with STDIN_OPEN=1 a pipe held open until it ends
#                               (as exec holds its ssh's stdin, to learn if stoat is gone)
#   bench_pair CMD... -- BASE...  the medians (two numbers on one line) of CMD and BASE run
#                               turn about, RUNS rounds, stdin /dev/null: a drift of the
#                               host's or the guest's speed during the run reaches both alike
#   bench_ssh_argv VM           the VM's ssh argv (`ssh-command`), one argument a line
#   bench_mux_argv VM           sets the array mux_argv: the array ssh_argv (the VM's ssh argv)
#                               as a bare client of the VM's live master, never becoming one;
#                               run it from the VM's directory ($STOAT_HOME/VM)
#   bench_console_to_file FILE  in the array qemu_argv (a QEMU argv stoat ran), the serial
#                               console written to FILE instead of stoat's console logger
# shellcheck shell=bash

repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)"

bench_stoat() {
    if [ -n "${STOAT:-}" ]; then
        stoat="$STOAT"
        return
    fi
    local target="${CARGO_TARGET_DIR:-$repo/target}"
    if [ "$1" = release ]; then
        cargo build --release -q -p stoat-cli --manifest-path "$repo/Cargo.toml"
    else
        cargo build -q -p stoat-cli --manifest-path "$repo/Cargo.toml"
    fi
    stoat="$target/$1/stoat"
}

work=""
bench_exit_hooks=()
bench_on_exit() { bench_exit_hooks+=("$1"); }
bench_cleanup() {
    local hook
    for hook in "${bench_exit_hooks[@]}"; do eval "$hook" || true; done
    if [ -n "$work" ]; then rm -rf "$work"; fi
}
trap bench_cleanup EXIT

bench_sandbox() {
    work="$(mktemp -d "$@")"
    export STOAT_HOME="$work/root" HOME="$work/home" STOAT_ACCEL=tcg STOAT_GRAPHICAL=0
    mkdir -p "$STOAT_HOME" "$HOME"
}

now() { date +%s.%N; }
secs() { awk -v a="$1" -v b="$2" -v d="${3:-3}" 'BEGIN { printf("%." d "f\n", b - a) }'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f\n", a / b }'; }

bench_median() {
    python3 - "${RUNS:-15}" "${STDIN_OPEN:-}" "$@" <<'PY'
import statistics, subprocess, sys, time
runs, held, argv = int(sys.argv[1]), sys.argv[2] == "1", sys.argv[3:]
stdin = subprocess.PIPE if held else subprocess.DEVNULL
samples = []
for _ in range(runs):
    started = time.perf_counter()
    with subprocess.Popen(argv, stdin=stdin, stdout=subprocess.DEVNULL) as child:
        status = child.wait()
    samples.append(time.perf_counter() - started)
    if status != 0:
        sys.exit(f"bench_median: {argv[0]} exited {status}")
print(f"{statistics.median(samples):.4f}")
PY
}

bench_pair() {
    python3 - "${RUNS:-15}" "$@" <<'PY'
import statistics, subprocess, sys, time
runs, argv = int(sys.argv[1]), sys.argv[2:]
at = argv.index("--")
pair = (argv[:at], argv[at + 1:])
samples = ([], [])
for _ in range(runs):
    for command, times in zip(pair, samples):
        started = time.perf_counter()
        status = subprocess.run(command, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL).returncode
        times.append(time.perf_counter() - started)
        if status != 0:
            sys.exit(f"bench_pair: {command[0]} exited {status}")
print(" ".join(f"{statistics.median(times):.4f}" for times in samples))
PY
}

bench_free_port() {
    python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

bench_ssh_argv() {
    "$stoat" --json ssh-command "$1" | python3 -c 'import json,sys; [print(a) for a in json.loads(sys.stdin.read())["data"]["argv"]]'
}

bench_mux_argv() {
    local socket
    socket=$(cd "$STOAT_HOME/$1" && ls ssh-*.sock | head -1)
    mux_argv=("${ssh_argv[0]}" -o ControlMaster=no -o "ControlPath=$socket" "${ssh_argv[@]:1}")
}

# stoat's QEMU writes its console to a socket its logger process listens on; a raw rerun of
# that argv has no logger, so QEMU writes the console to a file itself, as it did before.
bench_console_to_file() {
    local i
    for i in "${!qemu_argv[@]}"; do
        case "${qemu_argv[$i]}" in
            socket,id=con0,*) qemu_argv[$i]="file,id=con0,path=$1,append=on" ;;
        esac
    done
}
