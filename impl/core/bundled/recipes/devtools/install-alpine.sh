#!/bin/sh
set -eu
apk --wait 60 add git build-base vim curl wget ca-certificates
