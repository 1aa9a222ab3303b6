#!/bin/sh
# Usage: check_version_script.sh LIBIT_MAP IT_API_H
# The version script of the IT-API library exports exactly the routines the public
# header declares: the same set of names, each once.
set -eu
map=$1 header=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
sed -n '/global:/,/local:/p' "$map" | grep -o '^ *it_[a-z0-9_]*;' | tr -d ' ;' >"$tmp/map"
# A prototype starts a line with its return type and the routine name and an opening
# parenthesis.
grep -oE '^(it_status_t|void|uint64_t|it_rdma_addr_t) it_[a-z0-9_]+\(' "$header" |
    sed -E 's/^[a-z0-9_]+ //; s/\($//' >"$tmp/header"
sort "$tmp/map" >"$tmp/map.sorted"
sort -u "$tmp/header" >"$tmp/header.sorted"
status=0
if [ "$(wc -l <"$tmp/header.sorted")" -ne 83 ]; then
    echo "expected 83 prototypes in $header, found $(wc -l <"$tmp/header.sorted")" >&2
    status=1
fi
if [ "$(sort -u "$tmp/map" | wc -l)" -ne "$(wc -l <"$tmp/map")" ]; then
    echo "$map lists a name twice" >&2
    status=1
fi
if ! diff "$tmp/header.sorted" "$tmp/map.sorted" >&2; then
    echo "< declared in $header only, > exported by $map only" >&2
    status=1
fi
exit $status
