#!/usr/bin/env bash
# distro/build.sh OUTDIR: build a real Debian cloud image from Debian packages, for stoat's
# distro tier. The image knows nothing of stoat: like a downloaded cloud image, it runs
# systemd and Debian's own cloud-init (NoCloud datasource), and everything a VM manager
# needs (user, key, password, mounts, scripts) must arrive through the seed.
#
# Outputs:
#   OUTDIR/debian-<suite>-cloud.qcow2   BIOS-bootable disk: MBR (syslinux mbr.bin),
#                                       p1 FAT16 with syslinux + the Debian kernel and
#                                       initramfs, p2 ext4 root (last, so growpart can grow it)
#   OUTDIR/stoat-testguest-cloud.qcow2  a symlink to it: the name the conformance suite's
#                                       real tier looks for in a guest directory
#   OUTDIR/manifest.txt                 suite, kernel, every installed package and version,
#                                       layout, sizes and sha256
#   OUTDIR/guest.toml                   what the real tier needs to boot it (RAM, vCPUs,
#                                       boot timeout); copied from this directory
# The last line printed is the absolute path of the image.
#
# Idempotent and cached: the .debs are kept in OUTDIR/.cache/debs; the fingerprint covers
# this script and the candidate versions of every package that could be installed (read
# from a private apt index in OUTDIR/.cache/apt); when it and the outputs are unchanged,
# nothing is rebuilt. No loop device, no mount on the host: the root filesystem is made
# with `mkfs.ext4 -d` straight into the raw disk file.
#
# Environment: DISTRO_SUITE (default trixie, Debian 13; bookworm works too),
# DISTRO_MIRROR and DISTRO_SECURITY_MIRROR (default: the mirrors the host's apt uses).
# Needs root (mmdebstrap's root mode, root-owned files) and mmdebstrap, mkfs.ext4, qemu-img.
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
die() { echo "distro/build: $*" >&2; exit 1; }
T0=$(date +%s)
log() { printf '[%4ds] %s\n' $(($(date +%s) - T0)) "$*"; }

[ $# -eq 1 ] || die "usage: $0 OUTDIR"
[ "$(uname -m)" = x86_64 ] || die "x86_64 host required"
[ "$(id -u)" = 0 ] || die "run as root (mmdebstrap root mode; the image holds root-owned files)"
for tool in mmdebstrap apt-get apt-cache mkfs.ext4 qemu-img dd truncate sha256sum chroot; do
  command -v "$tool" > /dev/null || die "missing tool: $tool (run install-host-deps.sh --distro)"
done

SUITE=${DISTRO_SUITE:-trixie}
OUT=$1; mkdir -p "$OUT"; OUT=$(cd "$OUT" && pwd)
IMAGE_NAME=debian-$SUITE-cloud.qcow2
IMAGE=$OUT/$IMAGE_NAME
CACHE=$OUT/.cache
mkdir -p "$CACHE/debs" "$CACHE/apt"

# The mirrors: the ones the host's apt already uses, so no host name is written here.
host_uri() {  # suite -> the first repository URI apt knows for it
  apt-get indextargets --format '$(REPO_URI) $(RELEASE)' 'Identifier: Packages' 2> /dev/null |
    awk -v s="$1" '$2 == s {print $1; exit}'
}
MIRROR=${DISTRO_MIRROR:-$(host_uri "$(. /etc/os-release && echo "$VERSION_CODENAME")")}
SECURITY=${DISTRO_SECURITY_MIRROR:-$(host_uri "$(. /etc/os-release && echo "$VERSION_CODENAME")-security")}
[ -n "$MIRROR" ] || die "no Debian mirror in the host's apt sources (set DISTRO_MIRROR)"
SOURCES="deb $MIRROR $SUITE main
deb $MIRROR $SUITE-updates main"
[ -n "$SECURITY" ] && SOURCES="$SOURCES
deb $SECURITY $SUITE-security main"

# What a Debian cloud image holds, minus what the tests do not need. No `-cloud` kernel:
# it has no 9p. syslinux and mtools are the bootloader and the tools that install it.
PACKAGES="systemd-sysv systemd-resolved udev dbus cloud-init openssh-server sudo cloud-guest-utils fdisk
  e2fsprogs linux-image-amd64 initramfs-tools zstd syslinux syslinux-common mtools
  procps iproute2 less"
PACKAGES=$(echo $PACKAGES)

# ------------------------------------------------------------------ fingerprint
# A private apt (its own lists under .cache/apt, the host's keyring) says what would be
# installed today: the essential set plus the closure of PACKAGES, with candidate versions.
A=$CACHE/apt
mkdir -p "$A/lists/partial" "$A/etc/apt.conf.d" "$A/etc/preferences.d" "$A/archives/partial"
printf '%s\n' "$SOURCES" > "$A/etc/sources.list"
: > "$A/status"
APT=(-o Dir::Etc::SourceList="$A/etc/sources.list" -o Dir::Etc::SourceParts=/dev/null
     -o Dir::Etc::Parts="$A/etc/apt.conf.d" -o Dir::Etc::PreferencesParts="$A/etc/preferences.d"
     -o Dir::State::Lists="$A/lists" -o Dir::State::status="$A/status"
     -o Dir::Cache="$A" -o Dir::Cache::Archives="$A/archives"
     -o Dir::Etc::Trusted=/dev/null -o Dir::Etc::TrustedParts=/usr/share/keyrings
     -o APT::Architecture=amd64 -o Acquire::Languages=none -o Acquire::Retries=3)
apt-get "${APT[@]}" update -qq > /dev/null || die "apt-get update of $SUITE failed"
grep -q . < <(apt-cache "${APT[@]}" policy cloud-init | grep Candidate) || die "the mirror does not serve $SUITE"
ESSENTIAL=$(apt-cache "${APT[@]}" dumpavail 2> /dev/null |
  awk '/^Package:/ {p = $2} /^Essential: yes/ {print p}' | sort -u | tr '\n' ' ')
[ -n "$ESSENTIAL" ] || die "no essential packages in the $SUITE index"
CLOSURE=$(apt-cache "${APT[@]}" depends --recurse --no-recommends --no-suggests --no-conflicts \
  --no-breaks --no-replaces --no-enhances $ESSENTIAL apt $PACKAGES 2> /dev/null |
  awk '/^[a-z0-9]/ {print $1}' | sort -u)
VERSIONS=$(apt-cache "${APT[@]}" show --no-all-versions $CLOSURE 2> /dev/null |
  awk '/^Package:/ {p = $2} /^Version:/ {print p, $2}' | sort -u)
FINGERPRINT=$( { echo "$SUITE"; echo "$PACKAGES"; echo "$VERSIONS"; cat "$HERE/build.sh" "$HERE/customize-hook.sh" "$HERE/boot-hook.sh"; } |
  sha256sum | cut -c1-64)
# The guest's description for the real tier says nothing about the image's bytes: copied on
# every run, so changing it never rebuilds the image.
cp "$HERE/guest.toml" "$OUT/guest.toml"
up_to_date() {
  [ "$(cat "$OUT/.fingerprint" 2> /dev/null)" = "$FINGERPRINT" ] && [ -s "$IMAGE" ] &&
    [ -s "$OUT/manifest.txt" ] && [ -L "$OUT/stoat-testguest-cloud.qcow2" ]
}
if up_to_date; then
  log "up to date ($SUITE, $(echo "$VERSIONS" | wc -l) candidate packages unchanged), nothing rebuilt"
  echo "$IMAGE"
  exit 0
fi
rm -f "$OUT/.fingerprint"
log "building Debian $SUITE from $MIRROR"

WORK=$(mktemp -d "$OUT/.work.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
R=$WORK/root

# ------------------------------------------------------------------ root filesystem
# Disk layout in 512-byte sectors: a 2 GiB disk (what Debian's own cloud images ship),
# p1 FAT16 boot 1..65 MiB, p2 ext4 root to the end. The qcow2 stores used clusters only.
DISK_MIB=2048
P1_START=2048; P1_SECTORS=$((64 * 2048))
P2_START=$((P1_START + P1_SECTORS)); P2_SECTORS=$((DISK_MIB * 2048 - P2_START))
ROOT_LABEL=cloudimg-rootfs

log "mmdebstrap ($SUITE, $(echo $PACKAGES | wc -w) packages + essential)"
# The .deb cache: copied in before the download, copied out after, removed from the image.
export DISK_MIB P1_START P1_SECTORS P2_START P2_SECTORS ROOT_LABEL
mmdebstrap --mode=root --variant=apt --format=directory \
  --include="${PACKAGES// /,}" \
  --dpkgopt='force-unsafe-io' \
  --dpkgopt='path-exclude=/usr/share/doc/*' --dpkgopt='path-include=/usr/share/doc/*/copyright' \
  --dpkgopt='path-exclude=/usr/share/man/*' --dpkgopt='path-exclude=/usr/share/locale/*' \
  --dpkgopt='path-exclude=/usr/share/info/*' \
  --skip=download/empty --skip=essential/unlink \
  --setup-hook='mkdir -p "$1/var/cache/apt/archives"' \
  --setup-hook="cp -a '$CACHE/debs/.' \"\$1/var/cache/apt/archives/\" 2>/dev/null || true" \
  --customize-hook="find \"\$1/var/cache/apt/archives\" -maxdepth 1 -name '*.deb' -exec cp -n {} '$CACHE/debs/' \\;" \
  --customize-hook='rm -f "$1"/var/cache/apt/archives/*.deb' \
  --customize-hook="$HERE/customize-hook.sh \"\$1\"" \
  --customize-hook="chroot \"\$1\" dpkg-query -W -f '\${Package} \${Version}\n' > '$WORK/packages.txt'" \
  --customize-hook="$HERE/boot-hook.sh \"\$1\" '$WORK'" \
  "$SUITE" "$R" "$SOURCES" > "$WORK/mmdebstrap.log" 2>&1 || { tail -n 30 "$WORK/mmdebstrap.log" >&2; die "mmdebstrap failed"; }
# Keep only the .debs of the current versions.
(cd "$CACHE/debs" && for f in *.deb; do
  [ -e "$f" ] || continue
  p=${f%%_*}; v=${f#*_}; v=${v%_*}; v=${v//%3a/:}
  grep -qxF "$p $v" "$WORK/packages.txt" || rm -f "$f"
done)
KVER=$(ls "$R/lib/modules" | head -n 1)
[ -s "$R/boot/vmlinuz-$KVER" ] && [ -s "$R/boot/initrd.img-$KVER" ] || die "no kernel or initramfs for $KVER"
log "root filesystem ready: kernel $KVER, $(wc -l < "$WORK/packages.txt") packages, $(du -sm "$R" | cut -f1) MiB"

# ------------------------------------------------------------------ the disk
rm -rf "$R"/tmp/* "$R"/var/tmp/* "$R"/var/log/*.log "$R"/var/cache/apt/*.bin
RAW=$WORK/disk.raw
dd if="$WORK/boot.fat" of="$RAW" bs=1M seek=$((P1_START / 2048)) conv=notrunc status=none
# The root filesystem, made from the directory straight at p2's offset in the raw file.
mkfs.ext4 -q -F -L $ROOT_LABEL -b 4096 -m 1 -E offset=$((P2_START * 512)) -d "$R" \
  "$RAW" $((P2_SECTORS / 8))
qemu-img convert -f raw -O qcow2 -o cluster_size=65536 "$RAW" "$WORK/image.qcow2"
rm -f "$RAW" "$WORK/boot.fat"

mv -f "$WORK/image.qcow2" "$IMAGE"
ln -sfn "$IMAGE_NAME" "$OUT/stoat-testguest-cloud.qcow2"
{
  echo "# Debian $SUITE cloud image for stoat's distro tier, built $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "suite: $SUITE"
  echo "kernel_release: $KVER"
  echo "layout: syslinux mbr.bin; p1 FAT16 DEBBOOT ${P1_START}+${P1_SECTORS} (syslinux, vmlinuz, initrd.img); p2 ext4 $ROOT_LABEL ${P2_START}+${P2_SECTORS}; ${DISK_MIB} MiB virtual"
  echo "file: $IMAGE_NAME $(stat -c %s "$IMAGE") $(sha256sum "$IMAGE" | cut -c1-64)"
  sed 's/^/package: /' "$WORK/packages.txt"
} > "$OUT/manifest.txt"
echo "$FINGERPRINT" > "$OUT/.fingerprint"
log "built $IMAGE ($(stat -c %s "$IMAGE") bytes)"
echo "$IMAGE"
