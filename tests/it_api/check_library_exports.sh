#!/bin/sh
# The dynamic symbols libitapi.so.2 defines are exactly the routines its version script
# names (and the version node itself).
#   check_library_exports.sh LIBRARY MAP
set -eu
lib=$1
map=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
grep -oE '^[[:space:]]+it_[a-z0-9_]+;' "$map" | tr -d ' \t;' | sort >"$tmp/want"
nm -D --defined-only "$lib" | awk '$3 != "" && $2 != "A" { print $3 }' | sed 's/@.*//' | sort >"$tmp/have"
if ! cmp -s "$tmp/want" "$tmp/have"; then
    echo "libitapi exports differ from $map (< map only, > library only):"
    diff "$tmp/want" "$tmp/have" || true
    exit 1
fi
echo "libitapi exports the $(wc -l <"$tmp/want") routines of the version script"
