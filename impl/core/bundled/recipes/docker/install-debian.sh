#!/bin/sh
set -eu
export DEBIAN_FRONTEND=noninteractive
apt-get update
apt-get install -y docker.io docker-compose-v2 || apt-get install -y docker.io docker-compose
systemctl enable --now docker
[ -n "${STOAT_PARAM_USER:-}" ] && usermod -aG docker "$STOAT_PARAM_USER" || true
echo "socket=/var/run/docker.sock" >> "${STOAT_OUTPUTS:-/dev/null}"
