#!/bin/sh
# customize-hook.sh ROOT: mmdebstrap's customize hook that turns a fresh Debian system into a
# generic cloud image (nothing here knows about stoat). Runs with the target's /proc, /sys
# and /dev mounted by mmdebstrap. ROOT_LABEL comes from build.sh.
set -eu
R=$1
echo localhost > "$R/etc/hostname"
printf '127.0.0.1\tlocalhost\n::1\t\tlocalhost ip6-localhost ip6-loopback\nff02::1\t\tip6-allnodes\nff02::2\t\tip6-allrouters\n' > "$R/etc/hosts"
printf 'LABEL=%s\t/\text4\tdefaults,errors=remount-ro\t0\t1\n' "$ROOT_LABEL" > "$R/etc/fstab"
# Per-instance identity is made at first boot: the machine-id by systemd, the ssh host keys
# by cloud-init's ssh module.
: > "$R/etc/machine-id"
rm -f "$R/var/lib/dbus/machine-id" "$R"/etc/ssh/ssh_host_*
# cloud-init renders its network config for systemd-networkd (no ifupdown, no netplan);
# systemd-resolved serves DNS and the machine's own name (sudo looks it up), and
# /etc/resolv.conf points at its stub, not at the build host's resolver.
chroot "$R" systemctl enable systemd-networkd.service systemd-resolved.service > /dev/null 2>&1
ln -sfn ../run/systemd/resolve/stub-resolv.conf "$R/etc/resolv.conf"
# Probe only the NoCloud datasource (and None): no waiting on metadata servers that are
# not there.
printf 'datasource_list: [ NoCloud, None ]\n' > "$R/etc/cloud/cloud.cfg.d/90_datasources.cfg"
# A small initramfs (the drivers a virtual machine's root disk needs), not every module.
# The CD-ROM drivers too: the NoCloud seed is on a CD, and cloud-init's local stage looks
# for it before udev would load sr_mod from the root filesystem (missed under TCG).
sed -i 's/^MODULES=.*/MODULES=list/' "$R/etc/initramfs-tools/initramfs.conf"
printf '%s\n' virtio_pci virtio_blk virtio_scsi sd_mod ata_piix ahci sr_mod cdrom isofs ext4 crc32c_generic >> "$R/etc/initramfs-tools/modules"
chroot "$R" update-initramfs -u -k all > /dev/null
rm -f "$R"/boot/*.dpkg-bak "$R"/boot/*.new "$R/etc/dpkg/dpkg.cfg.d/99mmdebstrap"
