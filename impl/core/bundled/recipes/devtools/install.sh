#!/bin/sh
# devtools: no per-OS script matched; say so rather than guess a package manager.
echo "devtools: no install script for this OS" >&2
exit 1
