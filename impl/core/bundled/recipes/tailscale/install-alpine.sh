#!/bin/sh
set -eu
apk --wait 60 add tailscale
rc-update add tailscale default
rc-service tailscale start
echo "tailscaled is running; join with: sudo tailscale up"
