#!/usr/bin/env bash
# Each shipped library exports only its public interface (nm -D --defined-only):
#   exports_test.sh LIBRARY 'EXTENDED-REGEX of the allowed demangled names'
# (version nodes aside). The regex must match a whole name.
set -euo pipefail
lib=$1 allowed=$2
command -v nm >/dev/null || { echo "nm not found (binutils)"; exit 77; }
syms=$(nm -D --defined-only "$lib" | awk '{print $3}' | sed 's/@.*//' | c++filt)
[ -n "$syms" ] || { echo "FAIL: $lib exports nothing"; exit 1; }
# Version nodes (SOFTRNIC_0, DAT_2.0, ...) are absolute symbols of their own.
bad=$(grep -vxE "$allowed" <<<"$syms" | grep -vE '^[A-Z][A-Z0-9_.]*$' || true)
if [ -n "$bad" ]; then
    echo "FAIL: $lib exports symbols beyond its interface:"
    head -n 40 <<<"$bad"
    exit 1
fi
echo "$(wc -l <<<"$syms") symbols, all public"
