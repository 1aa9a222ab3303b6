#!/bin/sh
# abi_check.sh - compare softrnic's <dat2/*.h> with Debian's (libdapl-dev) item by item.
#
#   abi_check.sh OUR_INCLUDE_DIR WORK_DIR
#
# 1. The list of items is read from the compiler, not typed by hand: both
#    header sets are compiled with debug info and abi_inventory.awk lists
#    every DAT typedef, aggregate, member (nested ones too) and enumerator;
#    `gcc -dM` lists every macro the headers define. The two lists must name
#    the same things.
# 2. A probe program generated from the union of the lists prints the size,
#    alignment and integer kind of every typedef and aggregate, the offset,
#    size and kind of every member, the value of every enumerator and of every
#    object-like macro. It is compiled once against each header set; the two
#    outputs must be identical.
# 3. `gcc -aux-info` prints every dat_* prototype and the signature of every
#    *_FUNC slot type as each header set declares it; those must be identical.
#
# Exit 0 on a match, 1 on a difference, 77 (skip) when Debian's headers are
# not installed and cannot be.
set -eu

here=$(cd "$(dirname "$0")" && pwd)
our_inc=$(cd "$1" && pwd)
work=$2
CC=${ABI_CC:-gcc} # -aux-info is a gcc option
debian_marker=/usr/include/dat2/udat.h

. "$here/debian_dapl.sh"
if ! ensure_debian_dapl libdapl-dev "$debian_marker"; then
    echo "SKIP: Debian's dat2 headers are not installed"
    exit 77
fi

rm -rf "$work"
mkdir -p "$work"
cd "$work"

# Macros that are known and intended to differ; see docs/spec-deviations.md.
#   DAT_IA_HA_RELATED: the deployed header defines it as an object-like macro
#   naming a slot that does not exist; ours is the working function-like form.
value_skip=" DAT_IA_HA_RELATED "

sys_includes='#include <netinet/in.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/socket.h>
#include <sys/types.h>'

printf '%s\n#include <dat2/udat.h>\n#include <dat2/dat_registry.h>\n#include <dat2/dat_ib_extensions.h>\n' \
    "$sys_includes" >headers.c
printf '%s\n' "$sys_includes" >system_only.c

# inc_flags SIDE: compiler flags selecting one header set. Debian's live in
# /usr/include, which is always searched, so "debian" adds nothing.
inc_flags() { if [ "$1" = ours ]; then echo "-I$our_inc"; fi; }

fail=0
for side in ours debian; do
    # shellcheck disable=SC2046
    $CC -std=gnu11 -g -O0 -fno-eliminate-unused-debug-types $(inc_flags $side) -c headers.c -o "headers_$side.o"
    readelf --debug-dump=info "headers_$side.o" | awk -f "$here/abi_inventory.awk" | LC_ALL=C sort -u >"items_$side.txt"
    # shellcheck disable=SC2046
    $CC -std=gnu11 -dM -E $(inc_flags $side) headers.c | LC_ALL=C sort >"macros_all_$side.txt"
    $CC -std=gnu11 -dM -E system_only.c | LC_ALL=C sort >"macros_sys_$side.txt"
    LC_ALL=C comm -23 "macros_all_$side.txt" "macros_sys_$side.txt" >"macros_$side.txt"
    sed -e 's/^#define \([A-Za-z_0-9]*\).*/\1/' "macros_$side.txt" | LC_ALL=C sort -u >"macro_names_$side.txt"
done

echo "== 1. the two header sets declare the same items"
if ! diff -u items_debian.txt items_ours.txt >items.diff; then
    echo "FAIL: typedefs/aggregates/members/enumerators differ (- Debian, + ours):"
    cat items.diff
    fail=1
fi
if ! diff -u macro_names_debian.txt macro_names_ours.txt >macro_names.diff; then
    echo "FAIL: macro names differ (- Debian, + ours):"
    cat macro_names.diff
    fail=1
fi
LC_ALL=C sort -u items_debian.txt items_ours.txt >items.txt
echo "   $(grep -c '^T' items.txt) typedefs, $(grep -c '^A' items.txt) aggregate names," \
    "$(grep -c '^M' items.txt) members, $(grep -c '^E' items.txt) enumerators," \
    "$(wc -l <macro_names_ours.txt) macros"

# ---------------------------------------------------------------------------
# 2. Probe program
# ---------------------------------------------------------------------------
awk '$1 == "T" { print $2 }' items.txt >typedef_names.txt
{
    awk '$1 == "E" { print $2 }' items.txt
    awk '$2 !~ /\(/ { print $2 }' macros_ours.txt macros_debian.txt
} >value_names.txt

{
    printf '%s\n' "$sys_includes"
    cat <<'EOF'
#include <dat2/udat.h>
#include <dat2/dat_registry.h>
#include <dat2/dat_ib_extensions.h>

#define KIND(x)                                                                              \
    _Generic((x), _Bool: "bool", char: "char", signed char: "schar", unsigned char: "uchar", \
             short: "short", unsigned short: "ushort", int: "int", unsigned int: "uint",     \
             long: "long", unsigned long: "ulong", long long: "llong",                      \
             unsigned long long: "ullong", char *: "str", const char *: "cstr",             \
             void *: "ptr", default: "other")
#define STR(x) #x
#define XSTR(x) STR(x)
#define SIZE(T) printf("size %s = %zu align %zu\n", #T, sizeof(T), _Alignof(T))
#define TD_INT(T) \
    printf("typedef %s = %zu %s %s\n", #T, sizeof(T), KIND((T)0), ((T)-1 < (T)0) ? "signed" : "unsigned")
#define MEMBER(T, m) \
    printf("member %s.%s at %zu size %zu %s\n", #T, #m, offsetof(T, m), sizeof(((T *)0)->m), KIND(((T *)0)->m))
#define ENUMERATOR(E) printf("enumerator %s = %lld\n", #E, (long long)(E))
#define MACRO(M) _Generic((M), char *: show_str, const char *: show_str, void *: show_ptr, default: show_num)(#M, KIND(M), (M))
#define ALIAS(M) printf("alias %s -> %s\n", #M, XSTR(M))
#define TYPE_ALIAS(M) printf("type alias %s = %zu %s\n", #M, sizeof(M), KIND((M)0))

static void show_num(const char *name, const char *kind, unsigned long long v) {
    printf("macro %s = %#llx %s\n", name, v, kind);
}
static void show_str(const char *name, const char *kind, const char *s) {
    printf("macro %s = \"%s\" %s\n", name, s, kind);
}
static void show_ptr(const char *name, const char *kind, const void *p) {
    printf("macro %s = %p %s\n", name, p, kind);
}

int main(void) {
EOF
    awk '
        $1 == "T" && $3 == "int" { print "    TD_INT(" $2 ");"; next }
        $1 == "T" { print "    SIZE(" $2 ");"; next }
        $1 == "A" { sub(/^A /, ""); print "    SIZE(" $0 ");"; next }
        $1 == "M" { sub(/^M /, ""); split($0, p, "|"); print "    MEMBER(" p[1] ", " p[2] ");"; next }
        $1 == "E" { print "    ENUMERATOR(" $2 ");"; next }
    ' items.txt
    # Object-like macros with a body: classify the body (ours where we have it).
    # A single-identifier body is a type alias, a value (enumerator or macro),
    # or a bare name (field, function, or undefined): printed as text.
    cat macros_ours.txt macros_debian.txt | awk -v skip="$value_skip" -v tdfile=typedef_names.txt \
        -v valfile=value_names.txt '
        BEGIN {
            while ((getline t < tdfile) > 0) typedef[t] = 1
            while ((getline v < valfile) > 0) value[v] = 1
        }
        {
            name = $2
            if (name ~ /\(/ || seen[name]++) next            # function-like, or done
            if (index(skip, " " name " ")) next
            body = $0; sub(/^#define [A-Za-z_0-9]+ ?/, "", body)
            if (body == "" || body ~ /\{/) next               # markers, compound literals
            if (body ~ /^[A-Za-z_][A-Za-z_0-9]*$/) {
                if (body in typedef) print "    TYPE_ALIAS(" name ");"
                else if (body in value) print "    MACRO(" name ");"
                else print "    ALIAS(" name ");"
                next
            }
            print "    MACRO(" name ");"
        }'
    echo "    return 0;"
    echo "}"
} >probe.c

# Signatures of the *_FUNC slot types, made visible to -aux-info.
awk '$1 == "T" && $3 == "fnptr" { print "extern __typeof__(*(" $2 ")0) abi_sig_" $2 ";" }' items.txt >signatures.h
sed -i 's|^int main(void) {|#include "signatures.h"\nint main(void) {|' probe.c

echo "== 2. sizes, offsets and values"
for side in ours debian; do
    # shellcheck disable=SC2046
    if ! $CC -std=gnu11 -Wall -Wno-unused-function -O0 $(inc_flags $side) -aux-info "aux_$side.txt" \
        probe.c -o "probe_$side" 2>"probe_$side.err"; then
        echo "FAIL: the probe does not compile against the $side headers:"
        head -50 "probe_$side.err"
        fail=1
        continue
    fi
    "./probe_$side" >"values_$side.txt"
done
if [ -f values_ours.txt ] && [ -f values_debian.txt ]; then
    if ! diff -u values_debian.txt values_ours.txt >values.diff; then
        echo "FAIL: values differ (- Debian, + ours):"
        cat values.diff
        fail=1
    fi
    echo "   $(wc -l <values_ours.txt) probe lines compared"
fi

echo "== 3. prototypes and slot signatures"
for side in ours debian; do
    [ -f "aux_$side.txt" ] || continue
    grep -E ' (dat_|dats_|abi_sig_)[A-Za-z_0-9]* \(' "aux_$side.txt" |
        sed -e 's|^/\*[^*]*\*/ *||' -e 's/[[:space:]]\{1,\}/ /g' -e 's/ ,/,/g' -e 's/ )/)/g' |
        LC_ALL=C sort -u >"prototypes_$side.txt"
done
if [ -f prototypes_ours.txt ] && [ -f prototypes_debian.txt ]; then
    if ! diff -u prototypes_debian.txt prototypes_ours.txt >prototypes.diff; then
        echo "FAIL: prototypes differ (- Debian, + ours):"
        cat prototypes.diff
        fail=1
    fi
    echo "   $(wc -l <prototypes_ours.txt) prototypes compared"
fi

if [ "$fail" = 0 ]; then
    echo "PASS: softrnic's dat2 headers match Debian's ($work)"
fi
exit "$fail"
