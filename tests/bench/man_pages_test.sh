#!/usr/bin/env bash
# Each man page given formats with no warning from man and groff (as lintian runs them),
# has its NAME and SEE ALSO sections, and softrnic(7) lists the variables softrnic reads.
set -euo pipefail
command -v man >/dev/null || { echo "SKIP: no man (apt-get install man-db)"; exit 77; }
status=0
for page in "$@"; do
    warnings=$(LC_ALL=C.UTF-8 MANROFFSEQ='' MANWIDTH=80 \
        man --warnings -E UTF-8 -l -Tutf8 -Z "$page" 2>&1 >/dev/null) || true
    if [ -n "$warnings" ]; then
        echo "FAIL: $page: $warnings"
        status=1
    fi
    text=$(LC_ALL=C.UTF-8 MANWIDTH=80 man -l "$page" 2>/dev/null)
    for section in NAME "SEE ALSO"; do
        grep -q "^$section" <<<"$text" || { echo "FAIL: $page has no $section"; status=1; }
    done
    case "$page" in
    *.7)
        for var in SOFTRNIC_TRANSPORT SOFTRNIC_LOG SOFTRNIC_IB_SUBNET; do
            grep -q "$var" <<<"$text" || { echo "FAIL: $page lacks $var"; status=1; }
        done
        ;;
    esac
    echo "$page: ok"
done
exit $status
