#!/bin/sh
# xfce for debian.
set -eu
export DEBIAN_FRONTEND=noninteractive
user="${STOAT_PARAM_USER:-stoat}"
apt-get update
apt-get install -y xfce4 xorg dbus-x11
mkdir -p /etc/systemd/system/getty@tty1.service.d
printf '[Service]\nExecStart=\nExecStart=-/sbin/agetty --autologin %s --noclear %%I $TERM\n' "$user" \
  > /etc/systemd/system/getty@tty1.service.d/autologin.conf
home=$(getent passwd "$user" | cut -d: -f6)
grep -q startx "$home/.profile" 2>/dev/null ||
  echo '[ "$(tty)" = /dev/tty1 ] && exec startx /usr/bin/startxfce4' >> "$home/.profile"
