#!/usr/bin/env bash
# Installs the real report consumers tests/report_consumers.rs feeds stoat-conformance's
# output to, under target/report-consumers (or $STOAT_REPORT_CONSUMERS):
#   node/  tap-parser from npm, exactly as package-lock.json pins it (npm ci);
#   venv/  junitparser, xunitparser, the xmlschema validator and cmarkgfm (GitHub's Markdown
#          renderer), pinned in requirements.txt;
#   chromium from Debian (headless screenshots of the HTML report), when missing.
# Perl's prove (TAP::Harness) comes with Debian's perl. Idempotent: a second run only checks
# that the pinned versions are in place (about a second). A fresh install costs about 10 s
# for npm and pip, plus the chromium package (~90 MB download, 1-2 min) when apt is needed.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../../.." && pwd)"
dest="${STOAT_REPORT_CONSUMERS:-$repo/target/report-consumers}"
mkdir -p "$dest/node"

if ! command -v chromium >/dev/null; then
    sudo=""; [ "$(id -u)" = 0 ] || sudo=sudo
    $sudo apt-get update -q
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q --no-install-recommends chromium fonts-dejavu-core
fi
command -v prove >/dev/null || { echo "prove (Debian's perl) is missing" >&2; exit 1; }

# npm ci wipes node_modules: run it only when the lock file changed.
if ! cmp -s "$here/package-lock.json" "$dest/node/package-lock.json" || [ ! -d "$dest/node/node_modules/tap-parser" ]; then
    cp "$here/package.json" "$here/package-lock.json" "$dest/node/"
    (cd "$dest/node" && npm ci --no-audit --no-fund --ignore-scripts --loglevel=error)
fi

python="${PYTHON:-$(command -v python3)}"
if [ ! -x "$dest/venv/bin/python" ]; then
    "$python" -m venv "$dest/venv"
fi
"$dest/venv/bin/python" -m pip install --quiet --disable-pip-version-check -r "$here/requirements.txt"
echo "report consumers ready: $dest"
