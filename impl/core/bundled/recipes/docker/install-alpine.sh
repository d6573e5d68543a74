#!/bin/sh
set -eu
apk --wait 60 add docker docker-cli-compose
rc-update add docker default
rc-service docker start
[ -n "${STOAT_PARAM_USER:-}" ] && addgroup "$STOAT_PARAM_USER" docker || true
echo "socket=/var/run/docker.sock" >> "${STOAT_OUTPUTS:-/dev/null}"
