#!/usr/bin/env bash
# Prints a key for the suite's sources in the checkout at $1 (default: the directory above
# this script): the sha256 of every file the suite's build reads (the workspace manifests and
# lock, conformance/, schemas/), in a fixed order. The same sources give the same key, so a
# CI cache of the built suite is reused until one of them changes (action.yml, run.sh).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
source_dir="${1:-$(cd "$here/.." && pwd)}"
cd "$source_dir"
{
    printf '%s\n' Cargo.toml Cargo.lock
    find conformance schemas -type f -not -path '*/target/*' -not -path '*/node_modules/*' | LC_ALL=C sort
} | while IFS= read -r file; do
    printf '%s  %s\n' "$(sha256sum < "$file" | cut -d' ' -f1)" "$file"
done | sha256sum | cut -c1-32
