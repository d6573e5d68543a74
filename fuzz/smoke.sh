#!/usr/bin/env bash
# Runs every cargo-fuzz target for a few seconds (default 3; `fuzz/smoke.sh 600` for a long
# session), seeded from the golden transcripts. Installs cargo-fuzz when missing. Works on
# stable Rust: RUSTC_BOOTSTRAP=1 lets stable accept the -Z flags cargo-fuzz passes, and
# --sanitizer none avoids the nightly-only sanitizer runtimes (docs/fuzzing.md).
# FUZZ_TARGETS="oracle qmp" limits the targets. FUZZ_BUILD=dev builds without optimisation
# (half the build time, fewer runs a second: what a seconds-long smoke wants; `make test` sets
# it). Exits non-zero on the first crash; the reproducer is in fuzz/artifacts/<target>/.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
seconds="${1:-3}"
export RUSTC_BOOTSTRAP=1
if ! command -v cargo-fuzz >/dev/null 2>&1 && [ ! -x "${CARGO_HOME:-$HOME/.cargo}/bin/cargo-fuzz" ]; then
  cargo install cargo-fuzz --locked
fi
export PATH="${CARGO_HOME:-$HOME/.cargo}/bin:$PATH"
cd "$here"
./seed.sh
targets="${FUZZ_TARGETS:-$(cargo fuzz list)}"
profile=()
[ "${FUZZ_BUILD:-release}" = dev ] && profile=(--dev)
cargo fuzz build "${profile[@]}" --sanitizer none
for target in $targets; do
  echo "fuzz: $target for ${seconds}s"
  cargo fuzz run "${profile[@]}" --sanitizer none "$target" "corpus/$target" "seeds/$target" -- \
    -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -print_final_stats=0 \
    2> "corpus/$target.log" || { tail -40 "corpus/$target.log"; echo "fuzz: $target crashed; see fuzz/artifacts/$target/"; exit 1; }
  grep -E '^Done ' "corpus/$target.log" || true
done
