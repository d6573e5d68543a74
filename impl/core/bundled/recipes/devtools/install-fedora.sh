#!/bin/sh
set -eu
dnf install -y git gcc gcc-c++ make vim-enhanced curl wget ca-certificates
