#!/bin/sh
# boot-hook.sh ROOT OUTDIR: mmdebstrap's last customize hook. With the image's own syslinux,
# mtools and sfdisk (run in the image, whose /proc the mtools-based syslinux needs), writes
# OUTDIR/boot.fat (a FAT16 partition whose hidden-sector count is p1's start, holding the
# kernel, the initramfs, syslinux.cfg and syslinux) and OUTDIR/disk.raw (the sparse raw disk
# with its partition table and syslinux's MBR boot code). build.sh passes the layout in
# DISK_MIB, P1_START, P1_SECTORS, P2_START, P2_SECTORS and ROOT_LABEL.
set -eu
R=$1; OUT=$2
KVER=$(ls "$R/lib/modules" | head -n 1)
# no_timer_check: under TCG on a loaded host the kernel's boot-time IO-APIC timer check can
# fail and panic the guest ("IO-APIC + timer doesn't work!"); cloud images skip it.
cat > "$R/tmp/syslinux.cfg" <<EOF
SERIAL 0 115200
DEFAULT debian
PROMPT 0
TIMEOUT 0
LABEL debian
  LINUX /vmlinuz
  INITRD /initrd.img
  APPEND root=LABEL=$ROOT_LABEL ro console=tty0 console=ttyS0,115200 no_timer_check
EOF
cp "$R/boot/vmlinuz-$KVER" "$R/tmp/vmlinuz"
cp "$R/boot/initrd.img-$KVER" "$R/tmp/initrd.img"
in_image() { chroot "$R" env MTOOLS_SKIP_CHECK=1 MTOOLSRC=/dev/null "$@"; }
in_image mformat -i /tmp/boot.fat -C -T "$P1_SECTORS" -h 64 -s 32 -H "$P1_START" -v DEBBOOT ::
in_image mcopy -i /tmp/boot.fat /tmp/vmlinuz /tmp/initrd.img /tmp/syslinux.cfg ::
in_image syslinux --install /tmp/boot.fat
in_image mdir -i /tmp/boot.fat -a :: | grep -q 'ldlinux  *sys' || { echo "boot-hook: no ldlinux.sys" >&2; exit 1; }
truncate -s $((DISK_MIB * 1024 * 1024)) "$R/tmp/disk.raw"
printf 'label: dos\nstart=%d, size=%d, type=e, bootable\nstart=%d, size=%d, type=83\n' \
  "$P1_START" "$P1_SECTORS" "$P2_START" "$P2_SECTORS" | chroot "$R" sfdisk -q /tmp/disk.raw
dd if="$R/usr/lib/syslinux/mbr/mbr.bin" of="$R/tmp/disk.raw" bs=440 count=1 conv=notrunc status=none
mv "$R/tmp/disk.raw" "$R/tmp/boot.fat" "$OUT/"
rm -f "$R/tmp/vmlinuz" "$R/tmp/initrd.img" "$R/tmp/syslinux.cfg"
