#!/bin/sh
set -eu
pacman -Sy --noconfirm --needed docker docker-compose
systemctl enable --now docker
[ -n "${STOAT_PARAM_USER:-}" ] && usermod -aG docker "$STOAT_PARAM_USER" || true
echo "socket=/var/run/docker.sock" >> "${STOAT_OUTPUTS:-/dev/null}"
