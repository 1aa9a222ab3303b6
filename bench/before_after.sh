#!/usr/bin/env bash
# bench/before_after.sh: one build of softrnic against another (a commit before a change and
# one after it), interleaved on this machine, as ratios new over old.
#
# Each round runs, one after another and in reverse order every other round (A B B A), for
# each transport X:
#   OLD/tools/softrnic bench --transport X          8 B and 1 MiB send, write, read: p50
#   NEW/tools/softrnic bench --transport X          latency, bandwidth, message rate
#   ... --lat-wait memory --ops write --size 8      the memory-polled write ping-pong
#   OLD/bench/dat_bench --ia softrnic-X             the same through uDAPL (each build's own
#   NEW/bench/dat_bench --ia softrnic-X             libdat2 and provider)
# then prints, per figure, the median of each build and the median of the per-round ratios
# new/old with their range (latency: new/old, above 1 means slower; bandwidth and rate:
# old/new, above 1 means slower too, so every ratio reads the same way).
#
# usage: bench/before_after.sh --old DIR --new DIR [--rounds N] [--time S]
#                              [--transports LIST] [--no-dat] [--keep FILE]
#   --old, --new     build trees (each with tools/softrnic; bench/dat_bench and
#                    src/dat/... or src/api/dat/... for the DAT rows)
#   --rounds N       rounds (default 5)
#   --time S         seconds per measurement (default 0.2)
#   --transports L   space- or comma-separated (default "shm tcp")
#   --no-dat         softrnic bench rows only
#   --keep FILE      keep the raw "round build key value" lines
set -euo pipefail

rounds=5
secs=0.2
transports="shm tcp"
dat=1
keep=
old=
new=
while [ $# -gt 0 ]; do
    case "$1" in
    --old) old=$(cd "$2" && pwd); shift 2 ;;
    --new) new=$(cd "$2" && pwd); shift 2 ;;
    --rounds) rounds=$2; shift 2 ;;
    --time) secs=$2; shift 2 ;;
    --transports) transports=${2//,/ }; shift 2 ;;
    --no-dat) dat=0; shift ;;
    --keep) keep=$2; shift 2 ;;
    -h | --help) sed -n '2,24p' "$0"; exit 0 ;;
    *) echo "before_after.sh: unknown option $1" >&2; exit 2 ;;
    esac
done
[ -n "$old" ] && [ -n "$new" ] || { echo "before_after.sh: --old and --new are required" >&2; exit 2; }
case "$rounds" in '' | *[!0-9]* | 0) echo "before_after.sh: bad --rounds" >&2; exit 2 ;; esac
command -v jq >/dev/null || { echo "before_after.sh: jq is required (apt-get install jq)" >&2; exit 1; }

log() { echo "before_after.sh: $*" >&2; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
results="$tmp/results"
: >"$results"
failures=0

# Each build's DAT registry directory (the DAT code moved from src/dat to src/api/dat).
registry_of() {
    local d
    for d in "$1/src/api/dat/registry" "$1/src/dat/registry"; do
        [ -e "$d/libdat2.so.2" ] && { echo "$d"; return; }
    done
}
for b in old new; do
    dir=${!b}
    [ -x "$dir/tools/softrnic" ] || { log "$dir/tools/softrnic missing"; exit 1; }
    "$dir/tools/softrnic" dat-conf >"$tmp/$b.conf"
    if [ "$dat" = 1 ] && { [ ! -x "$dir/bench/dat_bench" ] || [ -z "$(registry_of "$dir")" ]; }; then
        log "$dir has no dat_bench or libdat2: no DAT rows"
        dat=0
    fi
done

# record ROUND BUILD PREFIX JSON: lat (p50 us), bw (GB/s) and rate (Mop/s) per op and size.
record() {
    jq -r --arg r "$1" --arg b "$2" --arg p "$3" '.results[] |
        "\($r) \($b) \($p)_\(.op)_\(.size)_lat \(.lat_p50_us)",
        "\($r) \($b) \($p)_\(.op)_\(.size)_bw \(.bw_gbps)",
        "\($r) \($b) \($p)_\(.op)_\(.size)_rate \(.rate_mops)"' "$4" |
        awk '$4 ~ /^[0-9.eE+-]+$/ && $4 > 0' >>"$results"
}

run() { # run ROUND BUILD X
    local r=$1 b=$2 x=$3 dir=${!2} o="$tmp/out.json"
    if timeout 300 "$dir/tools/softrnic" bench --transport "$x" --ops send,write,read \
        --size 8,1048576 --rounds 1 --time "$secs" --no-ref --json --no-progress \
        >"$o" 2>"$o.err"; then
        record "$r" "$b" "rnicpi_$x" "$o"
    else
        log "round $r $b softrnic $x failed: $(tail -1 "$o.err")"; failures=$((failures + 1))
    fi
    if timeout 300 "$dir/tools/softrnic" bench --transport "$x" --ops write --size 8 \
        --lat-wait memory --rounds 1 --time "$secs" --no-ref --json --no-progress \
        >"$o" 2>"$o.err"; then
        record "$r" "$b" "rnicpi_${x}_memwait" "$o"
    else
        log "round $r $b softrnic $x memory-polled failed: $(tail -1 "$o.err")"; failures=$((failures + 1))
    fi
    [ "$dat" = 1 ] || return 0
    if DAT_OVERRIDE="$tmp/$b.conf" LD_LIBRARY_PATH="$(registry_of "$dir")" timeout 300 \
        "$dir/bench/dat_bench" --ia "softrnic-$x" --ops send,write,read --size 8,1048576 \
        --rounds 1 --time "$secs" --json --no-progress >"$o" 2>"$o.err"; then
        record "$r" "$b" "dat_$x" "$o"
    else
        log "round $r $b dat_bench $x failed: $(tail -1 "$o.err")"; failures=$((failures + 1))
    fi
}

for r in $(seq 1 "$rounds"); do
    order="old new"
    [ $((r % 2)) = 0 ] && order="new old"
    for x in $transports; do
        for b in $order; do run "$r" "$b" "$x"; done
    done
    log "round $r of $rounds done"
done
[ -n "$keep" ] && cp "$results" "$keep"

# Per figure (in the order first measured): median old, median new, median and range of
# the per-round ratios. Plain awk (Debian's mawk has no asorti).
awk '
function median(a, n,    i, j, t) {
    for (i = 2; i <= n; i++) { t = a[i]; for (j = i - 1; j >= 1 && a[j] > t; j--) a[j + 1] = a[j]; a[j + 1] = t }
    return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
}
{ v[$3, $1, $2] = $4; if (!($3 in seen)) { seen[$3] = 1; order[++n] = $3 }; rounds[$1] = 1 }
END {
    printf "%-34s %12s %12s %8s %17s\n", "figure", "old", "new", "ratio", "range"
    for (k = 1; k <= n; k++) {
        key = order[k]; no = nn = nr = 0; split("", o); split("", w); split("", q)
        for (r in rounds) {
            if ((key, r, "old") in v) o[++no] = v[key, r, "old"]
            if ((key, r, "new") in v) w[++nn] = v[key, r, "new"]
            if ((key, r, "old") in v && (key, r, "new") in v && v[key, r, "old"] > 0 && v[key, r, "new"] > 0)
                q[++nr] = key ~ /_lat$/ ? v[key, r, "new"] / v[key, r, "old"] : v[key, r, "old"] / v[key, r, "new"]
        }
        if (!nr) continue
        lo = hi = q[1]; for (i = 2; i <= nr; i++) { if (q[i] < lo) lo = q[i]; if (q[i] > hi) hi = q[i] }
        printf "%-34s %12.3f %12.3f %8.3f   [%.3f-%.3f]\n", key, median(o, no), median(w, nn), median(q, nr), lo, hi
    }
}' "$results"
echo "(ratio: latency new/old, bandwidth and rate old/new; above 1 = the new build is slower)"
[ "$failures" = 0 ]
