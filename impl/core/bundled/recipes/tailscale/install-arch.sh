#!/bin/sh
set -eu
pacman -Sy --noconfirm --needed tailscale
systemctl enable --now tailscaled
echo "tailscaled is running; join with: sudo tailscale up"
