#!/bin/sh
set -eu
dnf install -y moby-engine docker-compose
systemctl enable --now docker
[ -n "${STOAT_PARAM_USER:-}" ] && usermod -aG docker "$STOAT_PARAM_USER" || true
echo "socket=/var/run/docker.sock" >> "${STOAT_OUTPUTS:-/dev/null}"
