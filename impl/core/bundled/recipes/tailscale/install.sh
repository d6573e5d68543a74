#!/bin/sh
# tailscale: no per-OS script matched; say so rather than guess a package manager.
echo "tailscale: no install script for this OS" >&2
exit 1
