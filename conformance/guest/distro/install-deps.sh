#!/usr/bin/env bash
# install-deps.sh: what distro/build.sh needs on the host beyond ../install-host-deps.sh
# (which adds bookworm-backports): mmdebstrap, from backports (1.5: its hooks and skip
# options as build.sh uses them, and a suite list that knows trixie). Idempotent.
set -euo pipefail
say() { printf 'distro/install-deps: %s\n' "$*"; }
[ "$(id -u)" = 0 ] || { say "error: run as root" >&2; exit 1; }
if command -v mmdebstrap > /dev/null; then
  say "ok: mmdebstrap $(dpkg-query -W -f '${Version}' mmdebstrap 2>/dev/null)"
  exit 0
fi
export DEBIAN_FRONTEND=noninteractive
APT_OPTS=(-o DPkg::Lock::Timeout=300 -o Acquire::Retries=3)
if apt-cache policy mmdebstrap 2>/dev/null | grep -q bookworm-backports; then
  apt-get "${APT_OPTS[@]}" install -y -q --no-install-recommends -t bookworm-backports mmdebstrap
else
  apt-get "${APT_OPTS[@]}" install -y -q --no-install-recommends mmdebstrap
fi
say "done: mmdebstrap $(dpkg-query -W -f '${Version}' mmdebstrap)"
