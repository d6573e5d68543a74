#!/bin/sh
set -eu
pacman -Sy --noconfirm --needed git base-devel vim curl wget ca-certificates
