#!/bin/sh
# Prints the dat.conf lines of the softrnic provider for an install prefix.
#   dat_conf_line.sh [prefix] [interface] [libdir]
# e.g. dat_conf_line.sh /usr/local eth0 >> /etc/dat.conf
# prefix defaults to /usr/local, interface to lo, libdir to lib/<multiarch> or lib.
set -eu
prefix=${1:-/usr/local}
dev=${2:-lo}
libdir=${3:-}
if [ -z "$libdir" ]; then
    arch=$(gcc -print-multiarch 2>/dev/null || true)
    if [ -n "$arch" ] && [ -d "$prefix/lib/$arch" ]; then libdir=lib/$arch; else libdir=lib; fi
fi
lib="$prefix/$libdir/libdaplsoftrnic.so.2"
for name in softrnic softrnic-tcp softrnic-shm; do
    printf '%s u2.0 nonthreadsafe default %s dapl.2.0 "%s 0" ""\n' "$name" "$lib" "$dev"
done
