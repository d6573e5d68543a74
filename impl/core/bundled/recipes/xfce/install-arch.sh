#!/bin/sh
set -eu
user="${STOAT_PARAM_USER:-stoat}"
pacman -Sy --noconfirm --needed xfce4 xorg-server xorg-xinit
mkdir -p /etc/systemd/system/getty@tty1.service.d
printf '[Service]\nExecStart=\nExecStart=-/sbin/agetty --autologin %s --noclear %%I $TERM\n' "$user" \
  > /etc/systemd/system/getty@tty1.service.d/autologin.conf
home=$(getent passwd "$user" | cut -d: -f6)
grep -q startx "$home/.profile" 2>/dev/null ||
  echo '[ "$(tty)" = /dev/tty1 ] && exec startx /usr/bin/startxfce4' >> "$home/.profile"
