#!/usr/bin/env bash
# bench/compare.sh: softrnic against its peers on this machine, in one invocation.
#
# Each round runs, one after another (never two at once: on 2 vCPUs any extra runnable
# thread wrecks a busy-poll measurement), and in reverse order every other round:
#   softrnic bench --transport tcp       8 B send ping-pong, 1 MiB RDMA write stream, and the
#                                        raw TCP ping-pong / stream it measures itself
#   softrnic bench --transport shm       same rows, and the 1 MiB RDMA read stream; the 1 MiB
#                                        streams again with one copy thread
#                                        (SOFTRNIC_SHM_COPY_THREADS=1)
#   softrnic bench --transport loopback  1 MiB RDMA write (in-process) and its memcpy
#   fi_pingpong -p tcp -d lo / -p shm    libfabric 8 B ping-pong (Debian libfabric-bin)
#   ucx_perftest tag_lat, put_bw         UCX over posix shared memory and tcp on lo
#                                        (Debian ucx-utils)
#   fi_stream -p shm -o write / read     libfabric shm 1 MiB RMA write / read stream, 64 in
#                                        flight, into malloc'd memory (bench/fi_stream.cpp,
#                                        built here against Debian libfabric-dev)
#   raw_ref shm-pingpong / memcpy / cma  raw shared-memory flag ping-pong, raw 1 MiB memcpy,
#                                        raw 1 MiB process_vm_writev into another process
# then prints the medians over rounds and every softrnic figure as a ratio against each
# peer (the median of the per-round ratios, so A and B are always compared within a round).
#
# usage: bench/compare.sh [--rounds N] [--time S] [--build-dir DIR] [--no-install]
#                         [--keep FILE]
#   --rounds N      rounds (default 5)
#   --time S        seconds per softrnic and fi_stream measurement (default 0.2)
#   --build-dir D   where softrnic, raw_ref and fi_stream are built (default build/release;
#                   built with the release preset when missing)
#   --no-install    do not apt-get install missing peers (their rows print n/a)
#   --keep FILE     keep the raw per-round results ("round key value" lines)
# Peers come from Debian packages (libfabric-bin, ucx-utils, libfabric-dev for fi_stream; jq
# to read softrnic's JSON), installed with apt-get when missing; nothing is vendored.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
rounds=5
secs=0.2
build="$root/build/release"
install=1
keep=
while [ $# -gt 0 ]; do
    case "$1" in
    --rounds) rounds=$2; shift 2 ;;
    --time) secs=$2; shift 2 ;;
    --build-dir) build=$(cd "$2" && pwd); shift 2 ;;
    --no-install) install=0; shift ;;
    --keep) keep=$2; shift 2 ;;
    -h | --help) sed -n '2,31p' "$0"; exit 0 ;;
    *) echo "compare.sh: unknown option $1" >&2; exit 2 ;;
    esac
done

log() { echo "compare.sh: $*" >&2; }

# ---------------------------------------------------------------- tools and packages
softrnic="$build/tools/softrnic"
raw_ref="$build/bench/raw_ref"
if [ ! -x "$softrnic" ] || [ ! -x "$raw_ref" ]; then
    log "building softrnic and raw_ref (release preset)"
    (cd "$root" && cmake --preset release >/dev/null &&
        cmake --build --preset release -j "$(nproc)" --target softrnic_cli raw_ref >/dev/null)
fi

fi_stream="$build/bench/fi_stream"
# libfabric's headers (Debian libfabric-dev): CMake builds fi_stream only where they are.
have_fi_dev() { [ -e /usr/include/rdma/fabric.h ] || pkg-config --exists libfabric 2>/dev/null; }

need=()
command -v jq >/dev/null || need+=(jq)
command -v fi_pingpong >/dev/null || need+=(libfabric-bin)
command -v ucx_perftest >/dev/null || need+=(ucx-utils)
[ -x "$fi_stream" ] || have_fi_dev || need+=(libfabric-dev)
if [ ${#need[@]} -gt 0 ]; then
    if [ "$install" = 1 ] && [ "$(id -u)" = 0 ]; then
        log "installing ${need[*]}"
        export DEBIAN_FRONTEND=noninteractive
        apt-get install -y "${need[@]}" >/dev/null 2>&1 ||
            { apt-get update -qq >/dev/null 2>&1 && apt-get install -y "${need[@]}" >/dev/null 2>&1; } ||
            log "could not install ${need[*]}: those rows print n/a"
    else
        log "missing ${need[*]} (not installing): those rows print n/a"
    fi
fi
have() { command -v "$1" >/dev/null; }
# Reconfigure first: the build tree may predate libfabric-dev, and CMake only adds the
# fi_stream target when it finds libfabric.
# Without libfabric-dev the missing-package message above already says so.
if [ ! -x "$fi_stream" ] && have_fi_dev; then
    log "building fi_stream"
    (cmake -S "$root" -B "$build" >/dev/null &&
        cmake --build "$build" -j "$(nproc)" --target fi_stream >/dev/null 2>&1) || true
    [ -x "$fi_stream" ] || log "could not build fi_stream: the libfabric shm bandwidth rows print n/a"
fi
if ! have jq; then
    log "jq is required to read softrnic's JSON output"
    exit 1
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
results="$tmp/results"
: >"$results"

# A port per peer run; bases spread by PID so two runs on a shared machine rarely collide.
port=$((20000 + ($$ % 2000) * 10))
next_port() {
    port=$((port + 1))
    [ $port -gt 60000 ] && port=20001
    return 0
}

rec() { # rec ROUND KEY VALUE: keeps numbers only
    case "$3" in
    '' | null | *[!0-9.eE+-]*) ;;
    *) echo "$1 $2 $3" >>"$results" ;;
    esac
}

# Foreign load: busy CPU time of the whole machine (/proc/stat user+nice+system, in ticks)
# minus what this script's children used (bash `times`), over the wall time. Processes in
# other sessions come and go (compilers, test runs), so this catches what ps would miss.
busy_ticks() { awk '/^cpu /{print $2 + $3 + $4}' /proc/stat; }
# `times` must run in this shell (a $(...) subshell would report its own, empty, times).
children_secs() { # children_secs VAR
    times >"$tmp/times"
    printf -v "$1" '%s' "$(awk 'NR == 2 {
        split($1, u, "m"); split($2, s, "m"); sub("s", "", u[2]); sub("s", "", s[2])
        printf "%.2f", u[1] * 60 + u[2] + s[1] * 60 + s[2] }' "$tmp/times")"
}

# ----------------------------------------------------------------------------- steps
# Each step runs one measurement and records its figures for round $1.

softrnic_json() { # softrnic_json OUT ARGS...: 0 when the run produced JSON
    local out=$1
    shift
    timeout 300 "$softrnic" bench "$@" --json --no-progress >"$out" 2>"$out.err"
}

step_softrnic_tcp() {
    local o="$tmp/tcp.json"
    if softrnic_json "$o" --transport tcp --ops send,write --size 8,1048576 --rounds 1 \
        --time "$secs"; then
        rec "$1" srn_tcp_lat "$(jq '.results[] | select(.op=="send" and .size==8) | .lat_p50_us' "$o")"
        rec "$1" srn_tcp_bw "$(jq '.results[] | select(.op=="write" and .size==1048576) | .bw_gbps' "$o")"
        rec "$1" raw_tcp_lat "$(jq '.references[] | select(.name=="raw_tcp_pingpong") | .lat_p50_us' "$o")"
        rec "$1" raw_tcp_bw "$(jq '.references[] | select(.name=="raw_tcp_stream") | .bw_gbps' "$o")"
    else
        log "round $1: softrnic --transport tcp failed: $(tail -1 "$o.err")"
    fi
}

step_softrnic_shm() {
    local o="$tmp/shm.json"
    if softrnic_json "$o" --transport shm --ops send,write,read --size 8,1048576 --rounds 1 \
        --time "$secs"; then
        rec "$1" srn_shm_lat "$(jq '.results[] | select(.op=="send" and .size==8) | .lat_p50_us' "$o")"
        rec "$1" srn_shm_bw "$(jq '.results[] | select(.op=="write" and .size==1048576) | .bw_gbps' "$o")"
        rec "$1" srn_shm_bw_read "$(jq '.results[] | select(.op=="read" and .size==1048576) | .bw_gbps' "$o")"
    elif [ "$1" = 1 ]; then
        log "softrnic --transport shm: $(tail -1 "$o.err") -> n/a"
    fi
}

# The same 1 MiB streams with one copy thread (SOFTRNIC_SHM_COPY_THREADS=1): what the
# target's progress context alone moves, the figure to read against single-threaded peers.
step_softrnic_shm_1copy() {
    local o="$tmp/shm1.json"
    if SOFTRNIC_SHM_COPY_THREADS=1 softrnic_json "$o" --transport shm --ops write,read \
        --size 1048576 --rounds 1 --time "$secs"; then
        rec "$1" srn_shm_bw_1t "$(jq '.results[] | select(.op=="write") | .bw_gbps' "$o")"
        rec "$1" srn_shm_bw_read_1t "$(jq '.results[] | select(.op=="read") | .bw_gbps' "$o")"
    elif [ "$1" = 1 ]; then
        log "softrnic --transport shm (one copy thread): $(tail -1 "$o.err") -> n/a"
    fi
}

step_softrnic_loopback() {
    local o="$tmp/loop.json"
    if softrnic_json "$o" --transport loopback --ops write --size 1048576 --iters 2000; then
        rec "$1" srn_loop_bw "$(jq '.results[] | select(.op=="write" and .size==1048576) | .bw_gbps' "$o")"
        rec "$1" srn_loop_memcpy "$(jq '.results[] | select(.op=="write" and .size==1048576) | .memcpy_gbps' "$o")"
    else
        log "round $1: softrnic --transport loopback failed: $(tail -1 "$o.err")"
    fi
}

# fi_pingpong: server first, then the client; usec/xfer (column 7) is the one-way average.
fi_pp() { # fi_pp ROUND KEY ITERS ARGS...
    local r=$1 key=$2 iters=$3 v= try
    shift 3
    have fi_pingpong || return 0
    for try in 1 2; do
        next_port
        timeout 60 fi_pingpong -B "$port" "$@" -I "$iters" -S 8 >"$tmp/fi_srv" 2>&1 &
        local spid=$!
        sleep 0.4
        v=$(timeout 60 fi_pingpong -P "$port" "$@" -I "$iters" -S 8 127.0.0.1 2>&1 |
            tail -1 | awk '{print $7}') || true
        wait "$spid" 2>/dev/null || true
        [ -n "$v" ] && break
    done
    rec "$r" "$key" "$v"
}
step_fi_tcp() { fi_pp "$1" fi_tcp_lat 20000 -p tcp -d lo -e msg; }
step_fi_shm() { fi_pp "$1" fi_shm_lat 300000 -p shm -e rdm; }

# ucx_perftest: the client's last line; column 2 = 50th percentile (one-way for *_lat),
# column 6 = overall MiB/s (1024*1024).
ucx() { # ucx ROUND KEY lat|bw ENV ARGS...
    local r=$1 key=$2 what=$3 envs=$4 line= try
    shift 4
    have ucx_perftest || return 0
    for try in 1 2; do
        next_port
        env $envs timeout 60 ucx_perftest -p "$port" >"$tmp/ucx_srv" 2>&1 &
        local spid=$!
        sleep 0.5
        line=$(env $envs timeout 60 ucx_perftest 127.0.0.1 -p "$port" "$@" -f 2>/dev/null |
            tail -1) || true
        wait "$spid" 2>/dev/null || true
        [ -n "$line" ] && break
    done
    if [ "$what" = lat ]; then
        rec "$r" "$key" "$(echo "$line" | awk '{print $2}')"
    else
        rec "$r" "$key" "$(echo "$line" | awk '{printf "%.4f", $6 * 1048576 / 1e9}')"
    fi
}
step_ucx_lat_tcp() { ucx "$1" ucx_tcp_lat lat "UCX_TLS=tcp,self UCX_NET_DEVICES=lo" -t tag_lat -s 8 -n 20000 -w 1000; }
step_ucx_lat_shm() { ucx "$1" ucx_shm_lat lat "UCX_TLS=posix,self" -t tag_lat -s 8 -n 300000 -w 10000; }
step_ucx_bw_tcp() { ucx "$1" ucx_tcp_bw bw "UCX_NET_DEVICES=lo" -t put_bw -x tcp -d lo -D zcopy -s 1048576 -n 500 -w 50; }
step_ucx_bw_shm() { ucx "$1" ucx_shm_bw bw "" -t put_bw -x posix -d memory -D bcopy -s 1048576 -n 3000 -w 100; }

# fi_stream: libfabric RMA into another process's malloc'd buffer, 64 operations in flight;
# its one line ends in GBps=X (1e9). The target progresses its endpoint between sleeps of
# up to 1 ms (shm's initiator does the copy; the target only drains a 1024-entry command
# queue), so, like softrnic's passive server in its write/read streams, it leaves the
# second vCPU alone.
fi_bw() { # fi_bw ROUND KEY write|read
    [ -x "$fi_stream" ] || return 0
    local v
    v=$(timeout 120 "$fi_stream" -p shm -o "$3" -S 1048576 -w 64 -t "$secs" \
        --target-wait sleep 2>"$tmp/fi_stream.err" | sed -n 's/.* GBps=\([0-9.]*\).*/\1/p') ||
        true
    [ -n "$v" ] || log "round $1: fi_stream -o $3 failed: $(tail -1 "$tmp/fi_stream.err")"
    rec "$1" "$2" "$v"
}
step_fi_shm_bw_write() { fi_bw "$1" fi_shm_bw_write write; }
step_fi_shm_bw_read() { fi_bw "$1" fi_shm_bw_read read; }

step_raw_shm() {
    rec "$1" raw_shm_lat "$("$raw_ref" shm-pingpong --iters 100000 --trials 5 | jq .lat_p50_us)"
}
step_raw_memcpy() {
    rec "$1" raw_memcpy_bw "$("$raw_ref" memcpy --size 1048576 --seconds 0.1 --trials 5 | jq .bw_gbps)"
}
step_raw_cma() {
    rec "$1" raw_cma_bw "$("$raw_ref" cma --size 1048576 --seconds 0.1 --trials 5 | jq .bw_gbps)"
}

steps=(step_softrnic_tcp step_fi_tcp step_ucx_lat_tcp step_ucx_bw_tcp
    step_softrnic_shm step_fi_shm step_ucx_lat_shm step_ucx_bw_shm step_fi_shm_bw_write
    step_softrnic_shm_1copy
    step_fi_shm_bw_read step_raw_shm
    step_softrnic_loopback step_raw_memcpy step_raw_cma)

# ------------------------------------------------------------------------------- run
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
        [ -t 2 ] && printf '\rround %d/%d: %-28s' "$r" "$rounds" "${s#step_}" >&2
        "$s" "$r"
    done
done
[ -t 2 ] && printf '\r%60s\r' '' >&2
wall=$(awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN {printf "%.1f", b - a}')
children_secs kids1
foreign=$(awk -v b0="$busy0" -v b1="$(busy_ticks)" -v k0="$kids0" -v k1="$kids1" \
    -v hz="$hz" -v w="$wall" 'BEGIN {f = ((b1 - b0) / hz - (k1 - k0)) / w; printf "%.2f", f < 0 ? 0 : f}')
[ -n "$keep" ] && cp "$results" "$keep"

# ---------------------------------------------------------------------------- report
# stats KEY -> "median min max n" (empty when never measured)
stats() {
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
fmt() { # fmt "median min max n" -> "median [min-max]" or n/a
    if [ -z "$1" ]; then echo "n/a"; else set -- $1; echo "$1 [$2-$3]"; fi
}

declare -A name=(
    [srn_tcp_lat]="softrnic tcp, send/recv ping-pong (p50)"
    [srn_shm_lat]="softrnic shm, send/recv ping-pong (p50)"
    [raw_tcp_lat]="raw TCP ping-pong, busy-poll (p50)"
    [fi_tcp_lat]="fi_pingpong -p tcp -d lo (mean)"
    [ucx_tcp_lat]="ucx_perftest tag_lat, tcp/lo (p50)"
    [raw_shm_lat]="raw shm flag ping-pong (median block)"
    [fi_shm_lat]="fi_pingpong -p shm (mean)"
    [ucx_shm_lat]="ucx_perftest tag_lat, posix (p50)"
    [srn_tcp_bw]="softrnic tcp, RDMA write stream"
    [srn_shm_bw]="softrnic shm, RDMA write stream"
    [srn_shm_bw_read]="softrnic shm, RDMA read stream"
    [srn_shm_bw_1t]="softrnic shm, RDMA write, one copy thread"
    [srn_shm_bw_read_1t]="softrnic shm, RDMA read, one copy thread"
    [srn_loop_bw]="softrnic loopback, RDMA write"
    [raw_tcp_bw]="raw TCP stream"
    [ucx_tcp_bw]="ucx_perftest put_bw, tcp/lo zcopy (UCT)"
    [raw_memcpy_bw]="raw memcpy (raw_ref)"
    [raw_cma_bw]="raw process_vm_writev (raw_ref)"
    [srn_loop_memcpy]="memcpy in the loopback run"
    [ucx_shm_bw]="ucx_perftest put_bw, posix bcopy (UCT)"
    [fi_shm_bw_write]="fi_stream -p shm, RMA write, 64 in flight"
    [fi_shm_bw_read]="fi_stream -p shm, RMA read, 64 in flight"
)

echo "softrnic vs peers: $rounds rounds, interleaved (order reversed every other round);"
echo "median over rounds [min-max]; ratio = softrnic / peer, the median of per-round ratios."
echo "Took $wall s; other processes kept $foreign CPUs busy on average meanwhile."
if awk -v f="$foreign" 'BEGIN {exit !(f >= 0.2)}'; then
    echo "WARNING: the machine was not idle: these figures are noisy (2 vCPUs, busy-polling)."
fi
echo
printf '%-44s %s\n' "8 B one-way latency, us" "median [min-max]"
for k in srn_tcp_lat raw_tcp_lat fi_tcp_lat ucx_tcp_lat srn_shm_lat raw_shm_lat fi_shm_lat ucx_shm_lat; do
    printf '  %-42s %s\n' "${name[$k]}" "$(fmt "$(stats $k)")"
done
echo
printf '%-44s %s\n' "1 MiB bandwidth, GB/s (1e9)" "median [min-max]"
for k in srn_tcp_bw raw_tcp_bw ucx_tcp_bw srn_shm_bw srn_shm_bw_1t fi_shm_bw_write srn_shm_bw_read \
    srn_shm_bw_read_1t fi_shm_bw_read raw_cma_bw srn_loop_bw raw_memcpy_bw srn_loop_memcpy ucx_shm_bw; do
    printf '  %-42s %s\n' "${name[$k]}" "$(fmt "$(stats $k)")"
done
echo
echo "ratios (latency: lower is better, bandwidth: higher is better)"
pairs=(
    "srn_tcp_lat raw_tcp_lat" "srn_tcp_lat fi_tcp_lat" "srn_tcp_lat ucx_tcp_lat"
    "srn_shm_lat raw_shm_lat" "srn_shm_lat fi_shm_lat" "srn_shm_lat ucx_shm_lat"
    "srn_tcp_bw raw_tcp_bw" "srn_tcp_bw ucx_tcp_bw"
    "srn_shm_bw fi_shm_bw_write" "srn_shm_bw_read fi_shm_bw_read"
    "srn_shm_bw_1t fi_shm_bw_write" "srn_shm_bw_read_1t fi_shm_bw_read"
    "srn_shm_bw raw_cma_bw" "srn_shm_bw_1t raw_cma_bw" "srn_shm_bw raw_memcpy_bw" "srn_shm_bw ucx_shm_bw"
    "srn_loop_bw raw_memcpy_bw" "srn_loop_bw srn_loop_memcpy"
)
for p in "${pairs[@]}"; do
    set -- $p
    printf '  %-38s / %-42s %s\n' "${name[$1]}" "${name[$2]}" "$(fmt "$(ratio "$1" "$2")")"
done
echo
echo "targets: softrnic tcp 8 B / raw TCP ping-pong <= 1.3; softrnic tcp 1 MiB write / raw TCP"
echo "stream >= 0.85; softrnic shm 1 MiB write and read / fi_stream -p shm write and read >= 1.0."
echo "fi_pingpong reports a mean (usec/xfer), the others a p50. softrnic's shm copies of 256 KiB"
echo "or more go in one call or split between two threads (the target's progress context and a"
echo "copy helper started a few us after it), whichever way and helper delay its timing of"
echo "earlier copies found fastest; the one-copy-thread rows never split"
echo "(SOFTRNIC_SHM_COPY_THREADS=1); fi_stream and raw_ref use one thread."
