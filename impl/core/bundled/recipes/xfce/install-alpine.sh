#!/bin/sh
set -eu
user="${STOAT_PARAM_USER:-root}"
setup-xorg-base
apk --wait 60 add xfce4 xfce4-terminal dbus
rc-update add dbus default
sed -i "s|^tty1::respawn:.*|tty1::respawn:/bin/login -f $user|" /etc/inittab
home=$(getent passwd "$user" | cut -d: -f6)
grep -q startx "$home/.profile" 2>/dev/null ||
  echo '[ "$(tty)" = /dev/tty1 ] && exec startx /usr/bin/startxfce4' >> "$home/.profile"
