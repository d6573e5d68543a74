#!/usr/bin/env bash
# build.sh OUTDIR [--check]: build stoat's real-tier test guest from Debian packages.
#
# Outputs (see README.md for how each is used):
#   OUTDIR/stoat-testguest-cloud.qcow2  bootable disk that behaves like a cloud image:
#                                       it reads stoat's NoCloud seed (cloudinit backend)
#   OUTDIR/vmlinux                      fast variant: the same kernel as a PVH ELF, for
#   OUTDIR/initramfs-fast.cpio.gz       -kernel/-initrd; root login with id_ed25519, every
#                                       9p tag mounted at /mnt/<tag>, no seed needed
#   OUTDIR/id_ed25519[.pub]             test client key (kept across runs)
#   OUTDIR/manifest.txt                 package versions, sizes, sha256
# The last line printed is the absolute path of the cloud image.
#
# Idempotent: .debs are cached in OUTDIR/.cache/debs (fetched again only when
# apt's candidate version changes), the kernel pieces in OUTDIR/.cache/kernel,
# and when neither the inputs (package versions, this script, rootfs/) nor the
# outputs changed since the last build, nothing is rebuilt.
# Needs root (the initramfs holds root-owned and setuid files) and the tools
# install-host-deps.sh installs. --check boots the result under TCG (check.sh).
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
die() { echo "guest/build: $*" >&2; exit 1; }
T0=$(date +%s%N)
log() { local ms=$((($(date +%s%N) - T0) / 1000000)); printf '[%d.%03ds] %s\n' $((ms / 1000)) $((ms % 1000)) "$*"; }

[ $# -ge 1 ] || die "usage: $0 OUTDIR [--check]"
OUT=$1; CHECK=${2:-}
case $CHECK in ""|--check) ;; *) die "unknown option $CHECK (usage: $0 OUTDIR [--check])" ;; esac
[ "$(uname -m)" = x86_64 ] || die "x86_64 host required"
[ "$(id -u)" = 0 ] || die "run as root (the initramfs needs root-owned and setuid files)"
for tool in apt-get apt-cache dpkg-deb ldd ssh-keygen gzip xz mkfs.ext4 qemu-img dd truncate sha256sum; do
  command -v "$tool" > /dev/null || die "missing tool: $tool (run install-host-deps.sh)"
done

mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
IMAGE=$OUT/stoat-testguest-cloud.qcow2
CACHE=$OUT/.cache
mkdir -p "$CACHE/debs"
WORK=$(mktemp -d "$OUT/.work.XXXXXX")
trap 'rm -rf "$WORK"' EXIT

# Cloud disk layout in 512-byte sectors. Small on purpose: stoat resizes the
# overlay to the VM's disk size and the guest grows p2 into it at boot.
DISK_MIB=128
P1_START=2048; P1_SECTORS=$((32 * 2048))          # FAT16 boot partition, 1..33 MiB
P2_START=$((P1_START + P1_SECTORS)); P2_SECTORS=$((DISK_MIB * 2048 - P2_START))

# Kernel modules the guest loads, plus whatever they depend on:
#   virtio_pci virtio_blk ext4 overlay     stage 1: find and mount the state fs
#   virtio_net 9pnet_virtio 9p             network, -virtfs shares
#   ata_piix ahci sr_mod isofs             the seed ISO on -drive media=cdrom
#   vfat nls_cp437 nls_ascii               a CIDATA seed on a FAT disk
#   virtio_rng virtio_console button evdev entropy, console, ACPI power button
MODULES="virtio_pci virtio_blk ext4 crc32c_generic overlay virtio_net 9pnet_virtio 9p
  ata_piix ahci sr_mod isofs vfat nls_cp437 nls_ascii virtio_rng virtio_console button evdev"
MODULES=$(echo $MODULES)

# ------------------------------------------------------------------ packages
# The kernel is what linux-image-amd64 depends on today (the ABI name moves with
# security updates). Not the -cloud kernel: it has no 9p.
kernel_pkg() { apt-cache depends linux-image-amd64 2> /dev/null | awk '/Depends: linux-image-[0-9]/ && !n++ {print $2}'; }
KPKG=${GUEST_KERNEL_PKG:-$(kernel_pkg)}
if [ -z "$KPKG" ]; then log "no apt lists: apt-get update"; apt-get update -qq; KPKG=$(kernel_pkg); fi
[ -n "$KPKG" ] || die "cannot resolve the kernel package behind linux-image-amd64"
# Guest userland; libraries are listed by hand and the ldd check below fails
# the build when one is missing or would come from the host.
GUEST_PKGS="busybox-static bash libtinfo6 libc6 libcrypt1 dropbear-bin libtomcrypt1 libtommath1
  libgmp10 zlib1g openssh-sftp-server openssh-client sudo libpam0g libpam-modules libaudit1
  libcap-ng0 libselinux1 libpcre2-8-0 e2fsprogs libext2fs2 libcom-err2"
TOOL_PKGS="mtools syslinux syslinux-common"       # run from the cache, never installed
GUEST_PKGS=$(echo $GUEST_PKGS)
ALL_PKGS="$KPKG $GUEST_PKGS $TOOL_PKGS"

declare -A VER DEB
while read -r key value; do
  case $key in Package:) pkg=$value ;; Version:) VER[$pkg]=$value ;; esac
done < <(apt-cache show --no-all-versions $ALL_PKGS 2>/dev/null | grep -E '^(Package|Version):')
missing=()
for pkg in $ALL_PKGS; do
  [ -n "${VER[$pkg]:-}" ] || die "package $pkg unknown to apt (apt-get update?)"
  # apt-get download names a file <pkg>_<version, ':' as %3a>_<arch>.deb
  for f in "$CACHE/debs/${pkg}_${VER[$pkg]//:/%3a}_"*.deb; do [ -s "$f" ] && DEB[$pkg]=$f; done
  [ -n "${DEB[$pkg]:-}" ] || { rm -f "$CACHE/debs/${pkg}_"*.deb; missing+=("$pkg=${VER[$pkg]}"); }
done
if [ ${#missing[@]} -gt 0 ]; then
  (cd "$CACHE/debs" && apt-get download -q "${missing[@]}" 2>&1 | grep -v 'Download is performed unsandboxed' >&2 || true)
  for pkg in $ALL_PKGS; do
    [ -n "${DEB[$pkg]:-}" ] && continue
    for f in "$CACHE/debs/${pkg}_"*.deb; do [ -e "$f" ] && DEB[$pkg]=$f; done
    [ -n "${DEB[$pkg]:-}" ] || die "download of $pkg failed"
  done
fi
log "packages ready (${#missing[@]} downloaded)"

# Up to date? The fingerprint covers package versions, the module list, this
# script and every file under rootfs/.
FINGERPRINT=$( {
  for pkg in $ALL_PKGS; do echo "$pkg ${VER[$pkg]}"; done
  echo "$MODULES"
  cat "$HERE/build.sh"
  (cd "$HERE/rootfs" && find . -type f | LC_ALL=C sort | xargs sha256sum)
} | sha256sum | cut -c1-64)
OUTPUTS=("$IMAGE" "$OUT/vmlinux" "$OUT/initramfs-fast.cpio.gz" "$OUT/id_ed25519" "$OUT/id_ed25519.pub")
up_to_date() {
  [ "$(cat "$OUT/.fingerprint" 2>/dev/null)" = "$FINGERPRINT" ] || return 1
  local f; for f in "${OUTPUTS[@]}"; do [ -s "$f" ] || return 1; done
}
if up_to_date; then
  log "up to date, nothing rebuilt"
else
  rm -f "$OUT/.fingerprint"

  # ---------------------------------------------------------------- kernel
  # vmlinuz, vmlinux and the selected modules, cached per kernel version and
  # module list: unpacking the kernel .deb (~3 s) and the xz payload (~2 s)
  # is the slow part of a build.
  KC=$CACHE/kernel/${KPKG}_${VER[$KPKG]}_$(echo "$MODULES" | cksum | cut -d' ' -f1)
  if [ ! -s "$KC/vmlinux" ]; then
    rm -rf "$CACHE/kernel"; mkdir -p "$KC.tmp"
    KX=$WORK/kernel; mkdir -p "$KX"
    dpkg-deb --fsys-tarfile "${DEB[$KPKG]}" | tar -x -C "$KX" --wildcards './boot/vmlinuz-*' './lib/modules/*'
    KVER=$(ls "$KX/lib/modules"); MD=$KX/lib/modules/$KVER
    cp "$KX/boot/vmlinuz-$KVER" "$KC.tmp/vmlinuz"
    # vmlinux: the bzImage's xz payload is the stripped ELF kernel with a PVH
    # entry note, which QEMU boots directly (no in-guest decompression: ~2x faster).
    offset=$(LC_ALL=C grep -m1 -obUaP '\xfd7zXZ\x00' "$KC.tmp/vmlinuz" | awk -F: 'NR == 1 {print $1}')
    [ -n "$offset" ] || die "no xz payload in vmlinuz"
    tail -c +$((offset + 1)) "$KC.tmp/vmlinuz" | xz -dc --single-stream > "$KC.tmp/vmlinux" 2> /dev/null || true
    [ "$(head -c 4 "$KC.tmp/vmlinux" | od -An -tx1 | tr -d ' ')" = 7f454c46 ] || die "vmlinux is not an ELF file"
    modpath() {  # module name -> path under $MD ('-' and '_' are the same)
      grep -m1 -E "/(${1}|${1//_/-}|${1//-/_})\.ko\$" "$MD/modules.order" || die "module $1 not in $KVER"
    }
    todo=$MODULES; seen=" "
    while [ -n "${todo// /}" ]; do
      set -- $todo; mod=$1; shift; todo="$*"
      case $seen in *" $mod "*) continue ;; esac
      seen="$seen$mod "
      ko=$(modpath "$mod")
      mkdir -p "$KC.tmp/lib/modules/$KVER/$(dirname "$ko")"
      cp "$MD/$ko" "$KC.tmp/lib/modules/$KVER/$ko"
      deps=$(tr '\0' '\n' < "$MD/$ko" | sed -n 's/^depends=//p'); deps=${deps%%$'\n'*}
      todo="$todo ${deps//,/ }"
    done
    cp "$MD"/modules.builtin "$MD"/modules.order "$KC.tmp/lib/modules/$KVER/"
    rm -rf "$KX"; mv "$KC.tmp" "$KC"
  fi
  KVER=$(ls "$KC/lib/modules")
  log "kernel $KVER ready"

  # ---------------------------------------------------------------- rootfs
  PK=$WORK/pkgs; TL=$WORK/tools; R=$WORK/root
  mkdir -p "$PK" "$TL"
  for pkg in $GUEST_PKGS; do dpkg-deb -x "${DEB[$pkg]}" "$PK"; done
  for pkg in $TOOL_PKGS; do dpkg-deb -x "${DEB[$pkg]}" "$TL"; done
  BB=$PK/bin/busybox

  mkdir -p "$R"/{bin,sbin,usr/bin,usr/sbin,usr/lib/x86_64-linux-gnu/security,usr/lib64,usr/libexec/sudo,usr/lib/openssh}
  mkdir -p "$R"/{proc,sys,dev,run,tmp,mnt,media,home,root,var/log,var/lib,var/tmp,lib/modules,.newroot,.state}
  mkdir -p "$R"/etc/{dropbear,sudoers.d,stoat}
  # Relative to /lib, so the link resolves (libpam loads modules through it).
  ln -s ../usr/lib/x86_64-linux-gnu "$R/lib/x86_64-linux-gnu"
  ln -s usr/lib64 "$R/lib64"
  ln -s ../run "$R/var/run"
  cp -a "$HERE/rootfs/." "$R/"
  chmod 1777 "$R/tmp" "$R/var/tmp"; chmod 700 "$R/root"
  chmod 600 "$R/etc/shadow"; chmod 440 "$R/etc/sudoers"; chmod 750 "$R/etc/sudoers.d"

  install -m 755 "$BB" "$R/bin/busybox"
  "$BB" --list-full | while read -r applet; do
    [ "$applet" = bin/busybox ] || [ "$applet" = linuxrc ] || [ -e "$R/$applet" ] || ln -s /bin/busybox "$R/$applet"
  done
  # bash: the login shell stoat's seed asks for. dropbear + sftp-server + scp:
  # ssh, scp (SFTP) and legacy scp -O. sudo with a 3-module PAM stack.
  # resize2fs: growing the state fs after a disk resize.
  install -m 755 "$PK/bin/bash" "$R/bin/bash"
  install -m 755 "$PK/usr/sbin/dropbear" "$R/usr/sbin/dropbear"
  install -m 755 "$PK/usr/bin/dropbearkey" "$R/usr/bin/dropbearkey"
  install -m 755 "$PK/usr/lib/openssh/sftp-server" "$R/usr/lib/openssh/sftp-server"
  ln -s openssh/sftp-server "$R/usr/lib/sftp-server"       # the path compiled into dropbear
  install -m 755 "$PK/usr/bin/scp" "$R/usr/bin/scp"
  install -m 4755 "$PK/usr/bin/sudo" "$R/usr/bin/sudo"
  cp -a "$PK"/usr/libexec/sudo/{sudoers.so,libsudo_util.so.0,libsudo_util.so.0.0.0} "$R/usr/libexec/sudo/"
  for pam in pam_unix pam_permit pam_deny; do
    cp "$PK/lib/x86_64-linux-gnu/security/$pam.so" "$R/usr/lib/x86_64-linux-gnu/security/"
  done
  install -m 755 "$PK/sbin/resize2fs" "$R/sbin/resize2fs"

  # Shared libraries, resolved against the extracted packages only.
  export LD_LIBRARY_PATH=$PK/usr/libexec/sudo:$PK/lib/x86_64-linux-gnu:$PK/usr/lib/x86_64-linux-gnu
  for bin in bin/bash usr/sbin/dropbear usr/bin/dropbearkey usr/lib/openssh/sftp-server usr/bin/scp \
             usr/bin/sudo usr/libexec/sudo/sudoers.so sbin/resize2fs usr/lib/x86_64-linux-gnu/security/pam_unix.so; do
    ldd "$R/$bin" | awk '/=>/ {print $1, $3} /^[ \t]*\/lib64\// {print "ld", $1}'
  done | sort -u | while read -r name lib; do
    case $name in ld|libsudo_util.so.0) continue ;; esac   # the loader (below); sudo's RUNPATH
    case $lib in "$PK"/*) ;; *) die "library $name resolves to '$lib', not to a guest package (add it to GUEST_PKGS)" ;; esac
    cp -L "$lib" "$R/usr/lib/x86_64-linux-gnu/"
  done
  unset LD_LIBRARY_PATH
  cp -L "$PK/lib64/ld-linux-x86-64.so.2" "$R/usr/lib64/ld-linux-x86-64.so.2"
  ln -s ../lib64/ld-linux-x86-64.so.2 "$R/usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2"

  cp -a "$KC/lib/modules/$KVER" "$R/lib/modules/"
  "$BB" depmod -b "$R" "$KVER"

  # Fixed mtimes + gzip -n: the contents are reproducible (cpio inode numbers
  # still differ). gzip -6, not -9: 5x faster for 0.6 % more bytes.
  pack() { (cd "$1" && find . -mindepth 1 | LC_ALL=C sort | "$BB" cpio -o -H newc 2> /dev/null) | gzip -n -6; }
  find "$R" -exec touch -h -d @1 {} +
  pack "$R" > "$WORK/initrd.gz"
  log "initramfs: $(stat -c %s "$WORK/initrd.gz") bytes ($(du -sk "$R" | cut -f1) KiB unpacked)"

  [ -s "$OUT/id_ed25519" ] || ssh-keygen -q -t ed25519 -N '' -C stoat-test-client -f "$OUT/id_ed25519"

  # ---------------------------------------------------------------- fast variant
  # The kernel accepts concatenated cpio archives: the common initramfs plus a
  # small one that marks the fast variant and authorizes the test key for root.
  F=$WORK/fast; mkdir -p "$F/etc/stoat" "$F/root/.ssh"
  : > "$F/etc/stoat/fast"
  install -m 600 "$OUT/id_ed25519.pub" "$F/root/.ssh/authorized_keys"
  chmod 700 "$F/root" "$F/root/.ssh"
  find "$F" -exec touch -h -d @1 {} +
  { cat "$WORK/initrd.gz"; pack "$F"; } > "$WORK/initramfs-fast.cpio.gz"

  # ---------------------------------------------------------------- cloud disk
  # p1: FAT16 built as its own file (mformat's -H = the partition's start LBA),
  # then the mtools-based `syslinux --install` writes ldlinux.sys/.c32 into it.
  export MTOOLS_SKIP_CHECK=1 MTOOLSRC=/dev/null
  MT=$TL/usr/bin
  # no_timer_check: under TCG on a loaded host the kernel's boot-time IO-APIC timer check
  # can fail and panic the guest ("IO-APIC + timer doesn't work!"); cloud images skip it.
  # nosmp: a two-CPU guest under TCG very rarely wedges at boot (an RCU stall report, then
  # silence); with one CPU there is no second one to wedge, and no test needs it.
  cat > "$WORK/syslinux.cfg" <<'EOF'
SERIAL 0 115200
DEFAULT stoat
PROMPT 0
TIMEOUT 0
LABEL stoat
  LINUX /vmlinuz
  INITRD /initrd.gz
  APPEND console=tty0 console=ttyS0,115200 quiet no_timer_check nosmp
EOF
  FAT=$WORK/p1.fat
  "$MT/mformat" -i "$FAT" -C -T $P1_SECTORS -h 64 -s 32 -H $P1_START -v STOATBOOT ::
  "$MT/mcopy" -i "$FAT" "$KC/vmlinuz" "$WORK/initrd.gz" "$WORK/syslinux.cfg" ::
  PATH=$MT:$PATH "$MT/syslinux" --install "$FAT"
  "$MT/mdir" -i "$FAT" -a :: | grep -q 'ldlinux  *sys' || die "syslinux did not install ldlinux.sys"

  # p2: the ext4 state fs. 4 KiB blocks (mke2fs would pick 1 KiB for this size,
  # which grows badly); the overlay directories are made at first boot.
  EXT=$WORK/p2.ext4
  truncate -s $((P2_SECTORS * 512)) "$EXT"
  mkfs.ext4 -q -F -L stoat-state -b 4096 -i 16384 -m 0 -E root_owner=0:0 "$EXT"

  # MBR: syslinux's mbr.bin boot code + disk signature + 2 partition entries
  # + 55aa, written with printf octal escapes. CHS uses the 64x32 geometry
  # given to mformat; every consumer reads the LBA fields anyway.
  RAW=$WORK/disk.raw
  truncate -s $((DISK_MIB * 1024 * 1024)) "$RAW"
  dd if="$TL/usr/lib/syslinux/mbr/mbr.bin" of="$RAW" conv=notrunc status=none
  oct() { printf '\\%03o' "$@"; }
  le32() { oct $(($1 & 255)) $((($1 >> 8) & 255)) $((($1 >> 16) & 255)) $((($1 >> 24) & 255)); }
  chs() {
    local c=$(($1 / 2048)) h=$((($1 / 32) % 64)) s=$(($1 % 32 + 1))
    if [ $c -gt 1023 ]; then oct 254 255 255; else oct $h $(((s & 63) | ((c >> 2) & 192))) $((c & 255)); fi
  }
  entry() { oct "$1"; chs "$3"; oct "$2"; chs $(($3 + $4 - 1)); le32 "$3"; le32 "$4"; }  # active type start sectors
  {
    le32 0x414f5453; oct 0 0                         # disk signature "STOA"
    entry 0x80 0x0e $P1_START $P1_SECTORS            # FAT16 LBA, active
    entry 0x00 0x83 $P2_START $P2_SECTORS            # Linux
    printf '\\000%.0s' $(seq 1 32)                   # entries 3 and 4: empty
    oct 0x55 0xaa
  } | xargs -0 printf | dd of="$RAW" bs=1 seek=440 conv=notrunc status=none
  dd if="$FAT" of="$RAW" bs=1M seek=$((P1_START / 2048)) conv=notrunc status=none
  dd if="$EXT" of="$RAW" bs=1M seek=$((P2_START / 2048)) conv=notrunc status=none
  rm -f "$FAT" "$EXT"
  qemu-img convert -f raw -O qcow2 -o cluster_size=65536 "$RAW" "$WORK/cloud.qcow2"
  rm -f "$RAW"

  # Rename into place only now, so a failed build never leaves half an image.
  mv -f "$WORK/cloud.qcow2" "$IMAGE"
  cp -f "$KC/vmlinux" "$WORK/vmlinux" && mv -f "$WORK/vmlinux" "$OUT/vmlinux"
  mv -f "$WORK/initramfs-fast.cpio.gz" "$OUT/initramfs-fast.cpio.gz"
  {
    echo "# stoat test guest, built $(date -u +%Y-%m-%dT%H:%M:%SZ)"
    echo "kernel_release: $KVER"
    for pkg in $ALL_PKGS; do echo "package: $pkg ${VER[$pkg]}"; done
    echo "modules: $MODULES"
    echo "layout: mbr.bin; p1 FAT16 STOATBOOT ${P1_START}+${P1_SECTORS} (syslinux); p2 ext4 stoat-state ${P2_START}+${P2_SECTORS}; ${DISK_MIB} MiB virtual"
    for f in "${OUTPUTS[@]}"; do echo "file: ${f##*/} $(stat -c %s "$f") $(sha256sum "$f" | cut -c1-64)"; done
  } > "$OUT/manifest.txt"
  echo "$FINGERPRINT" > "$OUT/.fingerprint"
  log "built $(stat -c %s "$IMAGE") byte image, $(stat -c %s "$OUT/initramfs-fast.cpio.gz") byte fast initramfs"
fi

if [ "$CHECK" = --check ]; then
  "$HERE/check.sh" "$OUT"
fi
echo "$IMAGE"
