#!/bin/sh
set -eu
export DEBIAN_FRONTEND=noninteractive
apt-get update
apt-get install -y tailscale
systemctl enable --now tailscaled
echo "tailscaled is running; join with: sudo tailscale up"
