#!/bin/sh
# symbols_check.sh - compare the dynamic symbols of softrnic's libdat2.so.2 with Debian's.
#
#   symbols_check.sh PATH_TO_OUR_LIBDAT2
#
# Every symbol Debian's libdat2.so.2 defines must be defined by ours, with the
# same symbol version; ours may define only the extra DAT 2.0 entry points
# listed below, under their own version node; both libraries must carry the
# SONAME libdat2.so.2. Exit 0 on a match, 1 on a difference, 77 (skip) when
# Debian's library is not installed and cannot be.
set -eu

here=$(cd "$(dirname "$0")" && pwd)
ours=$1

# find_debian_libdat2: sets $debian to the installed Debian libdat2.so.2, if any.
find_debian_libdat2() {
    debian=""
    for candidate in /usr/lib/x86_64-linux-gnu/libdat2.so.2 /usr/lib/*/libdat2.so.2; do
        if [ -e "$candidate" ]; then
            debian=$candidate
            return 0
        fi
    done
    return 1
}

. "$here/debian_dapl.sh"
if ! find_debian_libdat2; then
    ensure_debian_dapl libdapl2 /usr/lib/x86_64-linux-gnu/libdat2.so.2 || true
    if ! find_debian_libdat2; then
        echo "SKIP: Debian's libdat2.so.2 is not installed"
        exit 77
    fi
fi
# Optional: the headers and link library for the run-on-ours check below.
ensure_debian_dapl libdapl-dev /usr/include/dat2/udat.h || true

# DAT 2.0 calls the headers declare but Debian's library does not export.
extras="dat_cno_fd_create dat_cno_trigger dat_csp_create dat_csp_free dat_csp_query
dat_ep_common_connect dat_ep_post_rdma_read_to_rmr dat_ep_post_send_with_invalidate
dat_registry_providers_related dat_rmr_create_for_ep"

# name@version, one per line, for every defined dynamic symbol (version nodes excluded).
symbols() {
    nm -D --defined-only --with-symbol-versions "$1" |
        awk '$2 != "A" { sub(/@@/, "@", $3); print $3 }' | LC_ALL=C sort -u
}

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
symbols "$debian" >"$work/debian.txt"
symbols "$ours" >"$work/ours.txt"
for name in $extras; do echo "$name@SOFTRNIC_DAT_2.0"; done | LC_ALL=C sort >"$work/extras.txt"
LC_ALL=C sort -u "$work/debian.txt" "$work/extras.txt" >"$work/expected.txt"

fail=0
if ! diff -u "$work/expected.txt" "$work/ours.txt"; then
    echo "FAIL: exported symbols differ (- expected: Debian's set plus the extras, + ours)"
    fail=1
fi
for lib in "$debian" "$ours"; do
    soname=$(readelf -d "$lib" | sed -n 's/.*(SONAME).*\[\(.*\)\].*/\1/p')
    if [ "$soname" != libdat2.so.2 ]; then
        echo "FAIL: $lib has SONAME '$soname', not libdat2.so.2"
        fail=1
    fi
done

# A program built and linked against Debian's headers and libdat2 runs on ours
# (same SONAME and version node), when libdapl-dev provides the link library.
if [ -e /usr/include/dat2/udat.h ] && [ -e "$(dirname "$debian")/libdat2.so" ]; then
    cat >"$work/consumer.c" <<'EOF'
#define _GNU_SOURCE
#include <dat2/udat.h>
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>
int main(void) {
    Dl_info where;
    DAT_EVD_HANDLE evd = DAT_HANDLE_NULL;
    DAT_IA_HANDLE ia = DAT_HANDLE_NULL;
    char name[] = "no-such-ia";
    DAT_RETURN status = dat_ia_open(name, 4, &evd, &ia);
    const char *major = NULL;
    if (dladdr((void *)&dat_strerror, &where) == 0) return 2;
    printf("%s\n", where.dli_fname);
    if (DAT_GET_TYPE(status) != DAT_PROVIDER_NOT_FOUND) return 3;
    if (dat_strerror(status, &major, NULL) != DAT_SUCCESS) return 4;
    return strcmp(major, "DAT_PROVIDER_NOT_FOUND") == 0 ? 0 : 5;
}
EOF
    cc -o "$work/consumer" "$work/consumer.c" -ldat2 -ldl
    # A sanitized build of ours needs its runtime loaded first.
    preload=""
    for runtime in libasan libtsan; do
        if readelf -d "$ours" | grep -q "NEEDED.*$runtime"; then
            preload=$(cc -print-file-name="$runtime.so")
        fi
    done
    if loaded=$(env DAT_OVERRIDE=/dev/null LD_LIBRARY_PATH="$(dirname "$ours")" \
        LD_PRELOAD="$preload" ASAN_OPTIONS=detect_leaks=0 "$work/consumer"); then
        case "$loaded" in
        "$(dirname "$ours")"/*) echo "   a program linked against Debian's libdat2 ran on ours" ;;
        *)
            echo "FAIL: the consumer resolved dat_strerror from $loaded, not ours"
            fail=1
            ;;
        esac
    else
        echo "FAIL: a program linked against Debian's libdat2 failed on ours ($loaded)"
        fail=1
    fi
fi

if [ "$fail" = 0 ]; then
    echo "PASS: all $(wc -l <"$work/debian.txt") symbols of $debian are exported with the same" \
        "version; $(wc -l <"$work/extras.txt") DAT 2.0 extras under SOFTRNIC_DAT_2.0"
fi
exit "$fail"
