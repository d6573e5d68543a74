#!/usr/bin/env bash
# Makes the suite's release artifact (`make dist`): a tarball of stoat-conformance and
# stoat-fake, built in release mode, with the docs its reports cite, the report schema and the
# licence (ci-kit/README-dist.md lists them), and a sha256 checksum file beside it:
#   OUT/stoat-conformance-<version>-<arch>-linux.tar.gz{,.sha256}
# Usage: ci-kit/dist.sh [OUT]   (default OUT: target/dist)
# STOAT_DIST_BIN_DIR packs binaries already built there instead of building (the kit's test).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/.." && pwd)"
out="${1:-$repo/target/dist}"
if [ -n "${STOAT_DIST_BIN_DIR:-}" ]; then
    bin="$STOAT_DIST_BIN_DIR"
else
    (cd "$repo" && cargo build --release --locked -p stoat-conformance --bin stoat-conformance --bin stoat-fake)
    bin="$repo/target/release"
fi
version="$("$bin/stoat-conformance" --version | awk '{print $2}')"
name="stoat-conformance-$version-$(uname -m)-linux"
stage="$(mktemp -d)"
trap 'rm -rf "$stage"' EXIT
mkdir -p "$stage/$name" "$out"
cp "$bin/stoat-conformance" "$bin/stoat-fake" "$stage/$name/"
# What an implementer needs beside the binaries: the rules every report cites, the checks,
# how to run and read it, the report's schema, and the licence (ci-kit/README-dist.md).
mkdir -p "$stage/$name/docs"
cp "$here/README-dist.md" "$stage/$name/README.md"
cp "$repo/docs/contract.md" "$repo/docs/checks.md" "$repo/docs/conformance.md" \
    "$repo/docs/conformance-fakes.md" "$stage/$name/docs/"
cp "$repo/conformance/report.schema.json" "$repo/LICENSE-MIT" "$repo/LICENSE-APACHE" "$stage/$name/"
# Fixed owner, order and times: the same binaries give the same tarball.
tar --sort=name --owner=0 --group=0 --numeric-owner --mtime=@0 -C "$stage" -cf - "$name" | gzip -n > "$out/$name.tar.gz"
(cd "$out" && sha256sum "$name.tar.gz" > "$name.tar.gz.sha256")
echo "$out/$name.tar.gz"
