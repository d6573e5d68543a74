#!/usr/bin/env bash
# Installs the Python MCP SDK into a venv under target/ (default target/mcp-venv) for the
# real-client MCP test (tests/cli/test_mcp_client.rs). Needs python3 (3.10+) with venv and pip.
# Idempotent: re-running only re-checks the pinned requirements.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../../../.." && pwd)"
venv="${STOAT_MCP_VENV:-$repo/target/mcp-venv}"
python="${PYTHON:-$(command -v python3.11 || command -v python3)}"
if [ ! -x "$venv/bin/python" ]; then
    "$python" -m venv "$venv"
fi
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check -r "$here/requirements.txt"
echo "mcp client venv ready: $venv"
