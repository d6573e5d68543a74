#!/usr/bin/env bash
# Benchmark: `stoat --json pull` of an image from a loopback HTTP server vs `curl -o` followed
# by `sha256sum` of the same file (the download speed budget). Prints both throughputs, the ratio
# (aim: >= 1.0) and stoat's peak RSS (aim: <= 32 MiB).
#
#   SIZE_MIB=1024 impl/cli/benches/pull_vs_curl.sh     # default 64
#
# Everything it starts (one python3 http.server) is stopped by PID on exit.
set -euo pipefail

SIZE_MIB="${SIZE_MIB:-64}"
. "$(dirname "$0")/lib.sh"
bench_stoat release
bench_sandbox
server_pid=""
bench_on_exit '[ -z "$server_pid" ] || kill "$server_pid" 2>/dev/null'

mkdir -p "$work/srv" "$work/curl"
head -c "$((SIZE_MIB * 1024 * 1024))" /dev/urandom > "$work/srv/bench.qcow2"
(cd "$work/srv" && sha256sum bench.qcow2 > SHA256SUMS)
port="$(bench_free_port)"
python3 -m http.server "$port" --bind 127.0.0.1 --directory "$work/srv" >/dev/null 2>&1 &
server_pid=$!
for _ in $(seq 50); do curl -fs -o /dev/null "http://127.0.0.1:$port/SHA256SUMS" && break; sleep 0.1; done

cat > "$work/catalog.toml" <<TOML
[[image]]
id = "bench"
os = "debian"
backend = "cloudinit"
url = "http://127.0.0.1:$port/bench.qcow2"
checksum_url = "http://127.0.0.1:$port/SHA256SUMS"
TOML

start="$(now)"
curl -fs -o "$work/curl/bench.qcow2" "http://127.0.0.1:$port/bench.qcow2"
(cd "$work/curl" && sha256sum -c --quiet "$work/srv/SHA256SUMS")
curl_secs="$(secs "$start" "$(now)")"

rss_file="$work/rss"
start="$(now)"
if [ -x /usr/bin/time ]; then
    STOAT_CATALOG="$work/catalog.toml" \
        /usr/bin/time -f '%M' -o "$rss_file" "$stoat" --json pull bench > "$work/out.jsonl"
else
    STOAT_CATALOG="$work/catalog.toml" \
        "$stoat" --json pull bench > "$work/out.jsonl"
fi
stoat_secs="$(secs "$start" "$(now)")"
tail -n1 "$work/out.jsonl" | grep -q '"ok":true' || { echo "pull failed: $(tail -n1 "$work/out.jsonl")"; exit 1; }

mib_per_s() { echo "scale=1; $SIZE_MIB / $1" | bc -l; }
echo "image:  ${SIZE_MIB} MiB over loopback"
echo "curl -o + sha256sum: $(mib_per_s "$curl_secs") MiB/s (${curl_secs}s)"
echo "stoat --json pull:   $(mib_per_s "$stoat_secs") MiB/s (${stoat_secs}s)"
echo "ratio (stoat/curl throughput): $(ratio "$curl_secs" "$stoat_secs")"
if [ -s "$rss_file" ]; then
    echo "stoat peak RSS: $(( $(tail -n1 "$rss_file") / 1024 )) MiB"
fi
