#!/usr/bin/env bash
# bench/dat_vs_rnicpi.sh: what the uDAPL layer costs over RNICPI, measured side by side.
#
# For each transport (shm, tcp) and each round, one after another (never two at once: on
# 2 vCPUs any extra runnable thread wrecks a busy-poll measurement), in reverse order every
# other round so each pair alternates (A B B A):
#   softrnic bench --transport X ... --rounds 1 --no-ref --json   (ri_* calls)
#   dat_bench --ia softrnic-X ... --rounds 1 --json               (dat_* calls, same phases)
# both with --size 8,1048576 --ops send,write,read, then prints for every operation and
# size the median over rounds of each side and the median of the per-round ratios
# (DAT cost: latency dat/rnicpi, bandwidth rnicpi/dat; above 1 means DAT is slower).
# The RDMA Write ping-pong again as dtest -W and perftest run it (8 B, each side polling the
# last byte of the peer's write, its own write's completion taken right after the post):
#   softrnic bench ... --lat-wait memory / dat_bench ... --lat-wait memory
# and, when Debian's dtest is installed, dtest -W -b 8 itself through our libdat2 (its
# latency line is a mean one-way time: it stands beside softrnic bench's mean).
# Connection set-up the same way, when Debian's dtestcm is installed (dapl2-utils):
#   softrnic bench --transport X --connections N --rounds 1 --json   (dtestcm's pattern)
#   dtestcm -s / dtestcm -h 127.0.0.1, -P softrnic-X -c N             (our libdat2)
# each side's time per connection (the client's).
#
# usage: bench/dat_vs_rnicpi.sh [--rounds N] [--time S | --iters N] [--transports LIST]
#                               [--dat-args ARGS] [--build-dir DIR] [--no-install]
#                               [--keep FILE]
#   --rounds N        rounds (default 5)
#   --time S          seconds per measurement (default 0.2, softrnic bench's default)
#   --iters N         operations per measurement instead of --time
#   --transports L    space- or comma-separated (default "shm tcp")
#   --conns N         connections per connection set-up run (default 1000; 0: skip them)
#   --dat-args ARGS   extra dat_bench options, e.g. "--evd shared" (one EVD for requests
#                     and receives, as softrnic bench's one CQ)
#   --build-dir D     where softrnic and dat_bench are built (default build/release; built
#                     with the release preset when missing)
#   --no-install      do not apt-get install jq when it is missing (then fail)
#   --keep FILE       keep the raw per-round results ("round key value" lines)
# DAT_OVERRIDE is set to a dat.conf written by `softrnic dat-conf` (this build tree's
# provider). Exit status: 0 when every run succeeded, 1 otherwise (the table still prints).
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
rounds=5
sizing=(--time 0.2)
transports="shm tcp"
conns=1000
dat_args=()
build="$root/build/release"
install=1
keep=
while [ $# -gt 0 ]; do
    case "$1" in
    --rounds) rounds=$2; shift 2 ;;
    --time) sizing=(--time "$2"); shift 2 ;;
    --iters) sizing=(--iters "$2"); shift 2 ;;
    --transports) transports=${2//,/ }; shift 2 ;;
    --conns) conns=$2; shift 2 ;;
    --dat-args) read -r -a dat_args <<<"$2"; shift 2 ;;
    --build-dir) build=$(cd "$2" && pwd); shift 2 ;;
    --no-install) install=0; shift ;;
    --keep) keep=$2; shift 2 ;;
    -h | --help) sed -n '2,37p' "$0"; exit 0 ;;
    *) echo "dat_vs_rnicpi.sh: unknown option $1" >&2; exit 2 ;;
    esac
done
case "$rounds" in '' | *[!0-9]* | 0) echo "dat_vs_rnicpi.sh: bad --rounds" >&2; exit 2 ;; esac
case "$conns" in '' | *[!0-9]*) echo "dat_vs_rnicpi.sh: bad --conns" >&2; exit 2 ;; esac

log() { echo "dat_vs_rnicpi.sh: $*" >&2; }

# ---------------------------------------------------------------- tools and packages
softrnic="$build/tools/softrnic"
dat_bench="$build/bench/dat_bench"
if [ ! -x "$softrnic" ] || [ ! -x "$dat_bench" ]; then
    log "building softrnic and dat_bench (release preset)"
    (cd "$root" && cmake --preset release >/dev/null &&
        cmake --build --preset release -j "$(nproc)" --target softrnic_cli dat_bench >/dev/null)
fi
if ! command -v jq >/dev/null; then
    if [ "$install" = 1 ] && [ "$(id -u)" = 0 ]; then
        log "installing jq"
        export DEBIAN_FRONTEND=noninteractive
        apt-get install -y jq >/dev/null 2>&1 ||
            { apt-get update -qq >/dev/null 2>&1 && apt-get install -y jq >/dev/null 2>&1; } || true
    fi
    command -v jq >/dev/null || { log "jq is required to read the JSON output"; exit 1; }
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
results="$tmp/results"
warnings="$tmp/warnings"
: >"$results"
: >"$warnings"
"$softrnic" dat-conf >"$tmp/dat.conf"
export DAT_OVERRIDE="$tmp/dat.conf"

dtestcm=$(command -v dtestcm || true)
dtest=$(command -v dtest || true)
if [ "$conns" -gt 0 ] && [ -z "$dtestcm" ]; then
    log "dtestcm not installed (apt-get install dapl2-utils): no connection set-up rows"
    conns=0
fi
registry="$build/src/api/dat/registry"  # our libdat2.so.2, for dtestcm

sizes=8,1048576
ops=send,write,read
failures=0

# Foreign load, as bench/compare.sh measures it: busy CPU time of the whole machine minus
# what this script's children used, over the wall time.
busy_ticks() { awk '/^cpu /{print $2 + $3 + $4}' /proc/stat; }
children_secs() { # children_secs VAR (`times` must run in this shell)
    times >"$tmp/times"
    printf -v "$1" '%s' "$(awk 'NR == 2 {
        split($1, u, "m"); split($2, s, "m"); sub("s", "", u[2]); sub("s", "", s[2])
        printf "%.2f", u[1] * 60 + u[2] + s[1] * 60 + s[2] }' "$tmp/times")"
}

# record ROUND IMPL XPORT JSON: one "round key value" line per figure; key =
# IMPL_XPORT_OP_SIZE_lat (p50 us) or _bw (GB/s). Warnings are kept apart.
record() {
    jq -r --arg r "$1" --arg p "$2_$3" '.results[] |
        "\($r) \($p)_\(.op)_\(.size)_lat \(.lat_p50_us)",
        "\($r) \($p)_\(.op)_\(.size)_bw \(.bw_gbps)"' "$4" |
        awk '$3 ~ /^[0-9.eE+-]+$/' >>"$results"
    jq -r --arg w "$2 $3 round $1" '.warnings[] | "\($w): \(.)"' "$4" >>"$warnings"
}

# run_conns ROUND IMPL XPORT: one connection set-up run; key IMPL_XPORT_connect_N_lat =
# microseconds per connection (the client's time over the connections).
run_conns() {
    local r=$1 impl=$2 x=$3 out="$tmp/conns_$2_$3" us=
    if [ "$impl" = rnicpi ]; then
        if timeout 300 "$softrnic" bench --transport "$x" --connections "$conns" --rounds 1 \
            --json --no-progress >"$out.json" 2>"$out.err"; then
            us=$(jq -r '.results[0].lat_p50_us' "$out.json")
        fi
    else
        LD_LIBRARY_PATH="$registry" timeout 300 "$dtestcm" -s -P "softrnic-$x" -c "$conns" \
            >"$out.server" 2>&1 &
        local spid=$!
        sleep 0.5
        if LD_LIBRARY_PATH="$registry" timeout 300 "$dtestcm" -h 127.0.0.1 -P "softrnic-$x" \
            -c "$conns" >"$out.err" 2>&1 && wait "$spid"; then
            us=$(awk '/Connections:/ {print $2; exit}' "$out.err")
        fi
        wait "$spid" 2>/dev/null || true
    fi
    if [ -n "$us" ] && awk -v v="$us" 'BEGIN {exit !(v > 0)}'; then
        echo "$r ${impl}_${x}_connect_${conns}_lat $us" >>"$results"
    else
        failures=$((failures + 1))
        log "round $r: $impl $x connection set-up failed: $(tail -1 "$out.err" 2>/dev/null)"
    fi
}

# run_mem ROUND IMPL XPORT: the memory-polled 8 B write ping-pong; keys
# IMPL_XPORT_writemem_8_lat (us one-way, p50) and _mean (the mean; dtest prints only that).
run_mem() {
    local r=$1 impl=$2 x=$3 out="$tmp/mem_$2_$3" us= mean=
    case "$impl" in
    rnicpi | dat)
        local cmd
        if [ "$impl" = rnicpi ]; then
            cmd=("$softrnic" bench --transport "$x" --no-ref)
        else
            cmd=("$dat_bench" --ia "softrnic-$x")
        fi
        cmd+=(--size 8 --ops write --lat-wait memory --rounds 1 --json --no-progress "${sizing[@]}")
        if timeout 600 "${cmd[@]}" >"$out.json" 2>"$out.err"; then
            us=$(jq -r '.results[0].lat_p50_us' "$out.json")
            mean=$(jq -r '.results[0].lat_mean_us' "$out.json")
        fi
        ;;
    dtest)
        LD_LIBRARY_PATH="$registry" timeout 120 "$dtest" -s -P "softrnic-$x" -W -b 8 -B 20000 -p \
            >"$out.server" 2>&1 &
        local spid=$!
        sleep 0.5
        if LD_LIBRARY_PATH="$registry" timeout 120 "$dtest" -h 127.0.0.1 -P "softrnic-$x" -W -b 8 \
            -B 20000 -p >"$out.err" 2>&1 && wait "$spid"; then
            mean=$(sed -n 's/.*latency \([0-9.]*\) us.*/\1/p' "$out.err" | head -1)
            us=$mean
        fi
        wait "$spid" 2>/dev/null || true
        ;;
    esac
    if [ -n "$us" ] && awk -v v="$us" 'BEGIN {exit !(v > 0)}'; then
        [ "$impl" = dtest ] || echo "$r ${impl}_${x}_writemem_8_lat $us" >>"$results"
        echo "$r ${impl}_${x}_writemem_8_mean $mean" >>"$results"
    else
        failures=$((failures + 1))
        log "round $r: $impl $x memory-polled write ping-pong failed: $(tail -1 "$out.err" 2>/dev/null)"
    fi
}

# run ROUND IMPL XPORT
run() {
    local r=$1 impl=$2 x=$3 out="$tmp/$2_$3.json"
    local cmd
    if [ "$impl" = rnicpi ]; then
        cmd=("$softrnic" bench --transport "$x" --no-ref)
    else
        cmd=("$dat_bench" --ia "softrnic-$x" ${dat_args[@]+"${dat_args[@]}"})
    fi
    cmd+=(--size "$sizes" --ops "$ops" --rounds 1 --json --no-progress "${sizing[@]}")
    if timeout 600 "${cmd[@]}" >"$out" 2>"$out.err"; then
        record "$r" "$impl" "$x" "$out"
    else
        failures=$((failures + 1))
        log "round $r: ${cmd[*]} failed: $(tail -1 "$out.err")"
    fi
}

steps=()
for x in $transports; do steps+=("rnicpi $x" "dat $x"); done
for x in $transports; do
    steps+=("rnicpi-mem $x" "dat-mem $x")
    [ -n "$dtest" ] && steps+=("dtest-mem $x")
done
if [ "$conns" -gt 0 ]; then
    for x in $transports; do steps+=("rnicpi-conns $x" "dat-conns $x"); done
fi

hz=$(getconf CLK_TCK)
start=$(date +%s.%N)
busy0=$(busy_ticks)
children_secs kids0
for r in $(seq 1 "$rounds"); do
    order=("${steps[@]}")
    if [ $((r % 2)) = 0 ]; then
        order=()
        for ((i = ${#steps[@]} - 1; i >= 0; i--)); do order+=("${steps[i]}"); done
    fi
    for s in "${order[@]}"; do
        [ -t 2 ] && printf '\rround %d/%d: %-12s' "$r" "$rounds" "$s" >&2
        case "${s% *}" in
        *-conns) run_conns "$r" "${s%-conns *}" "${s#* }" ;;
        *-mem) run_mem "$r" "${s%-mem *}" "${s#* }" ;;
        *) run "$r" "${s% *}" "${s#* }" ;;
        esac
    done
done
[ -t 2 ] && printf '\r%40s\r' '' >&2
wall=$(awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN {printf "%.1f", b - a}')
children_secs kids1
# shellcheck disable=SC2154 # kids0 and kids1 are set by children_secs (printf -v)
foreign=$(awk -v b0="$busy0" -v b1="$(busy_ticks)" -v k0="$kids0" -v k1="$kids1" \
    -v hz="$hz" -v w="$wall" 'BEGIN {f = ((b1 - b0) / hz - (k1 - k0)) / w; printf "%.2f", f < 0 ? 0 : f}')
[ -n "$keep" ] && cp "$results" "$keep"

# ---------------------------------------------------------------------------- report
# median KEY -> "median min max n" (empty when never measured)
median() {
    awk -v k="$1" '$2 == k {v[n++] = $3} END {
        if (!n) exit
        for (i = 0; i < n; i++) for (j = i + 1; j < n; j++) if (v[j] < v[i]) {t = v[i]; v[i] = v[j]; v[j] = t}
        m = n % 2 ? v[(n - 1) / 2] : (v[n / 2 - 1] + v[n / 2]) / 2
        printf "%.4g %.4g %.4g %d\n", m, v[0], v[n - 1], n }' "$results"
}
# ratio A B -> per-round A/B, "median min max n"
ratio() {
    awk -v a="$1" -v b="$2" '$2 == a {x[$1] = $3} $2 == b {y[$1] = $3} END {
        for (r in x) if ((r in y) && y[r] > 0) v[n++] = x[r] / y[r]
        if (!n) exit
        for (i = 0; i < n; i++) for (j = i + 1; j < n; j++) if (v[j] < v[i]) {t = v[i]; v[i] = v[j]; v[j] = t}
        m = n % 2 ? v[(n - 1) / 2] : (v[n / 2 - 1] + v[n / 2]) / 2
        printf "%.3f %.3f %.3f %d\n", m, v[0], v[n - 1], n }' "$results"
}
first() { [ -n "$1" ] && echo "${1%% *}" || echo n/a; }
spread() { # "median min max n" -> "[min-max]"
    local _m lo hi
    if [ -z "$1" ]; then echo ""; else read -r _m lo hi _ <<<"$1"; echo "[$lo-$hi]"; fi
}

echo "DAT (dat_* through libdat2 + libdaplsoftrnic) vs RNICPI (ri_*), $rounds rounds, interleaved"
echo "(order reversed every other round). Median over rounds; cost = median of the per-round"
echo "ratios [min-max]: latency DAT/RNICPI, bandwidth RNICPI/DAT, so > 1 means DAT is slower"
echo "(target: <= 1.10). Took $wall s; other processes kept $foreign CPUs busy on average."
if awk -v f="$foreign" 'BEGIN {exit !(f >= 0.2)}'; then
    echo "WARNING: the machine was not idle: these figures are noisy (2 vCPUs, busy-polling)."
fi
if [ -s "$warnings" ]; then
    echo "Load warnings printed by the runs ($(wc -l <"$warnings") of $((rounds * ${#steps[@]}))):"
    sed 's/^/  /' "$warnings" | sort | uniq | head -20
fi
echo
printf '%-5s %-10s %8s  %-15s %10s %10s  %-6s %s\n' xport operation size metric RNICPI DAT cost "[min-max]"
for x in $transports; do
    for op in send write read; do
        for size in 8 1048576; do
            for m in lat bw; do
                a="rnicpi_${x}_${op}_${size}_$m" b="dat_${x}_${op}_${size}_$m"
                if [ $m = lat ]; then
                    what=$([ $op = read ] && echo "p50 RTT us" || echo "p50 1-way us")
                    q=$(ratio "$b" "$a")
                else
                    what="GB/s"
                    q=$(ratio "$a" "$b")
                fi
                printf '%-5s %-10s %8s  %-15s %10s %10s  %-6s %s\n' "$x" "$op" "$size" "$what" \
                    "$(first "$(median "$a")")" "$(first "$(median "$b")")" "$(first "$q")" \
                    "$(spread "$q")"
            done
        done
    done
done
for x in $transports; do
    for impl in dat dtest; do
        # The write ping-pong's p50 through both benches; dtest prints a mean only, so it
        # stands beside softrnic bench's mean.
        m=$([ $impl = dat ] && echo lat || echo mean)
        a="rnicpi_${x}_writemem_8_$m" b="${impl}_${x}_writemem_8_$m"
        [ -n "$(median "$b")" ] || continue
        q=$(ratio "$b" "$a")
        printf '%-5s %-10s %8s  %-15s %10s %10s  %-6s %s\n' "$x" \
            "$([ $impl = dat ] && echo write-mem || echo dtest-W)" 8 \
            "$([ $impl = dat ] && echo "p50 1-way us" || echo "1-way us (mean)")" \
            "$(first "$(median "$a")")" "$(first "$(median "$b")")" "$(first "$q")" "$(spread "$q")"
    done
done
echo "(write-mem: the write ping-pong polling memory only, --lat-wait memory on both sides;"
echo "dtest-W: Debian's dtest -W -b 8 -B 20000 -p through our libdat2, its latency line (a mean),"
echo "against the mean of softrnic bench's memory-polled write ping-pong.)"
if [ "$conns" -gt 0 ]; then
    for x in $transports; do
        a="rnicpi_${x}_connect_${conns}_lat" b="dat_${x}_connect_${conns}_lat"
        q=$(ratio "$b" "$a")
        printf '%-5s %-10s %8s  %-15s %10s %10s  %-6s %s\n' "$x" connect "$conns" "us per conn" \
            "$(first "$(median "$a")")" "$(first "$(median "$b")")" "$(first "$q")" \
            "$(spread "$q")"
    done
    echo "(connect: softrnic bench --connections $conns against Debian's dtestcm -c $conns through"
    echo "our libdat2: both connect in bursts of 100, the server accepts each request in turn.)"
fi
if [ "$failures" -gt 0 ]; then
    echo
    echo "$failures run(s) failed (see the messages above)."
    exit 1
fi
