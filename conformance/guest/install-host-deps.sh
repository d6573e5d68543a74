#!/usr/bin/env bash
# install-host-deps.sh: install what the real test tier needs on the host.
#
# Run as root on a Debian 12 (bookworm) x86_64 machine. Idempotent: every step
# first checks whether its work is already done, so a second run is a fast
# no-op that only prints "ok" lines.
#
# What it installs, and why:
#   bookworm-backports source   QEMU 10 lives there. The preinstalled qemu-utils
#                               is 10.0.2 from backports; bookworm's own
#                               qemu-system-x86 (7.2) Breaks it and apt would
#                               remove qemu-img, which stoat needs).
#   qemu-system-x86             -t bookworm-backports --no-install-recommends
#                               (without the flag apt pulls ~340 GUI packages)
#   qemu-utils                  qemu-img, for overlays and snapshots
#   xorriso                     stoat's NoCloud seed ISO (-as mkisofs -V CIDATA)
#   openssh-client              ssh, scp, ssh-keygen for exec/cp and the test keys
#   e2fsprogs, dpkg-dev bits    mkfs.ext4 for the guest builder (apt-get download
#                               and dpkg-deb come with apt/dpkg)
#   passt                       the VMs' network: stoat runs one passt per VM (its
#                               ssh port and forwards, and a guest kept off the
#                               host's loopback)
#   socat                       handy for poking QMP sockets by hand
#   tmux                        a real terminal for the shell-completion tests
#   zsh, fish                   the shells those tests complete in, beside bash
#   gcc, libc6-dev              the network test's raw-frame probe, a small static
#                               C program built on the host and run in the guest
# The guest builder downloads mtools and syslinux as .debs into its own cache
# and runs them from there, so they are not installed on the host.
set -euo pipefail

say() { printf 'install-host-deps: %s\n' "$*"; }
die() { say "error: $*" >&2; exit 1; }

[ "$(id -u)" = 0 ] || die "run as root"
[ "$(uname -m)" = x86_64 ] || die "x86_64 host required"
. /etc/os-release
[ "${VERSION_CODENAME:-}" = bookworm ] || say "warning: written for Debian bookworm, this is ${PRETTY_NAME:-unknown}"

# Other sessions on the machine may hold the dpkg lock for a while: wait for it
# instead of failing.
APT_OPTS=(-o DPkg::Lock::Timeout=300 -o Acquire::Retries=3)
export DEBIAN_FRONTEND=noninteractive

# 1. The backports source, on the same mirror the machine already uses for
#    bookworm (no mirror host is written here): the first URI of a deb822
#    stanza whose Suites holds `bookworm`, else of a one-line `deb` entry.
SOURCES=/etc/apt/sources.list.d/bookworm-backports.sources
bookworm_mirror() {
  local uri=
  if [ -r /etc/apt/sources.list.d/debian.sources ]; then
    uri=$(awk '
      function flush() { if (suite && uri != "" && !found) { print uri; found = 1 } suite = 0; uri = "" }
      /^[ \t]*$/ { flush(); next }
      /^[ \t]*#/ { next }
      tolower($1) == "uris:" { uri = $2 }
      tolower($1) == "suites:" { for (i = 2; i <= NF; i++) if ($i == "bookworm") suite = 1 }
      END { flush() }
    ' /etc/apt/sources.list.d/debian.sources)
  fi
  if [ -z "$uri" ] && [ -r /etc/apt/sources.list ]; then
    uri=$(awk '
      $1 == "deb" {
        i = 2
        if ($i ~ /^\[/) { while (i <= NF && $i !~ /\]$/) i++; i++ }
        if ($(i + 1) == "bookworm") { print $i; exit }
      }
    ' /etc/apt/sources.list)
  fi
  printf '%s' "$uri"
}
need_update=
if grep -rqs 'bookworm-backports' /etc/apt/sources.list /etc/apt/sources.list.d/; then
  say "ok: bookworm-backports source present"
else
  mirror=$(bookworm_mirror)
  [ -n "$mirror" ] || die "no apt source for the bookworm suite in /etc/apt/sources.list.d/debian.sources or /etc/apt/sources.list; add one, then rerun"
  cat > "$SOURCES" <<EOF
Types: deb
URIs: $mirror
Suites: bookworm-backports
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
EOF
  say "added $SOURCES (mirror $mirror)"
  need_update=1
fi

# apt lists: update when backports was just added or no list knows it yet.
if [ -n "$need_update" ] || ! apt-cache policy 2>/dev/null | grep -q 'bookworm-backports'; then
  say "running apt-get update"
  apt-get "${APT_OPTS[@]}" update -qq
fi

installed() {  # package -> true when dpkg says it is installed
  [ "$(dpkg-query -W -f '${db:Status-Status}' "$1" 2>/dev/null)" = installed ]
}
missing_of() {  # packages... -> the ones not installed, space separated
  local p out=
  for p in "$@"; do installed "$p" || out="$out $p"; done
  echo "${out# }"
}

# 2. QEMU 10 from backports. A qemu-system-x86 from bookworm proper (7.2) counts
#    as missing: it would fight the backports qemu-utils.
qemu_ok() {
  installed qemu-system-x86 && installed qemu-utils &&
    dpkg-query -W -f '${Version}' qemu-system-x86 | grep -q 'bpo12'
}
if qemu_ok; then
  say "ok: qemu-system-x86 $(dpkg-query -W -f '${Version}' qemu-system-x86)"
else
  say "installing qemu-system-x86 and qemu-utils from bookworm-backports"
  apt-get "${APT_OPTS[@]}" install -y -q --no-install-recommends -t bookworm-backports \
    qemu-system-x86 qemu-utils
  qemu_ok || die "qemu-system-x86 from backports did not install"
fi

# 3. Plain bookworm tools.
TOOLS=(xorriso openssh-client e2fsprogs passt socat ca-certificates xz-utils tmux zsh fish gcc libc6-dev)
todo=$(missing_of "${TOOLS[@]}")
if [ -z "$todo" ]; then
  say "ok: ${TOOLS[*]}"
else
  say "installing: $todo"
  # shellcheck disable=SC2086  # word splitting of the package list is intended
  apt-get "${APT_OPTS[@]}" install -y -q --no-install-recommends $todo
fi

for tool in qemu-system-x86_64 qemu-img xorriso passt ssh scp ssh-keygen mkfs.ext4 dpkg-deb cc; do
  command -v "$tool" > /dev/null || die "$tool still missing after the install"
done
say "done: $(qemu-system-x86_64 --version | head -n 1)"
