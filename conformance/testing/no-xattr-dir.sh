#!/bin/sh
# Makes DIR a directory on a filesystem that refuses user.* extended attributes, for the
# ERRORS.no-xattr check (STOAT_CONFORMANCE_NO_XATTR_DIR): a ramfs mount, which needs root.
# tmpfs will not do (it stores user xattrs since Linux 6.6). Without root, or where mounting
# is not allowed, it only says so: the check then SKIPs naming the reason.
# Usage: no-xattr-dir.sh DIR
set -u
dir=$1
mkdir -p "$dir"
if [ "$(stat -f -c %T "$dir")" = ramfs ]; then
    exit 0
fi
if [ "$(id -u)" != 0 ]; then
    echo "no-xattr-dir: not root, cannot mount a ramfs at $dir; ERRORS.no-xattr will skip" >&2
    exit 0
fi
if ! mount -t ramfs -o mode=1777 stoat-no-xattr "$dir"; then
    echo "no-xattr-dir: mounting a ramfs at $dir failed; ERRORS.no-xattr will skip" >&2
fi
exit 0
