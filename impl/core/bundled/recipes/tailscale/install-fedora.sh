#!/bin/sh
set -eu
dnf install -y tailscale
systemctl enable --now tailscaled
echo "tailscaled is running; join with: sudo tailscale up"
