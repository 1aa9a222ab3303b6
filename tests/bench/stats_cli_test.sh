#!/usr/bin/env bash
# `softrnic stats` against processes the test starts:
#   live       a running shm benchmark's counters, read while it runs (completions, bytes,
#              an shm connection); its file is gone once it exits, and asking for it then
#              fails
#   disabled   SOFTRNIC_STATS=0: the process keeps no file
#   stale      a file left by a process that is gone is removed by the next listing and
#              refused when asked for by id
#   bad_option an argument that is neither a pid nor --json: exit 2
set -euo pipefail
mode=$1 softrnic=$2
tmp=$(mktemp -d)
bench_pid=
cleanup() {
    if [ -n "$bench_pid" ]; then
        # The benchmark and its peer process, killed, leave their counters files: once both
        # are gone, a listing removes them (and any other process's stale file).
        procs="$bench_pid $(pgrep -P "$bench_pid" 2>/dev/null | tr '\n' ' ')"
        kill -CONT $procs 2>/dev/null || true
        kill $procs 2>/dev/null || true
        for _ in $(seq 100); do
            alive=0
            for p in $procs; do kill -0 "$p" 2>/dev/null && alive=1; done
            [ $alive = 0 ] && break
            sleep 0.05
        done
        "$softrnic" stats >/dev/null 2>&1 || true
    fi
    [ -n "${fake:-}" ] && rm -f "$fake"
    [ -n "${fake_cut:-}" ] && rm -f "$fake_cut"
    rm -rf "$tmp"
}
trap cleanup EXIT
fail() {
    echo "FAIL: $*"
    exit 1
}
# start_bench ITERS [ENV...]: a benchmark of ITERS sends, in the background.
start_bench() {
    local iters=$1
    shift
    env "$@" "$softrnic" bench --transport shm --ops send --size 8 --iters "$iters" --rounds 1 \
        --no-progress --no-ref >"$tmp/bench.out" 2>&1 &
    bench_pid=$!
}
# counter JSON NAME: the value of NAME in a `softrnic stats --json` answer
counter() { grep -o "\"$2\":[0-9]*" <<<"$1" | head -1 | cut -d: -f2; }

case "$mode" in
live)
    # Few enough sends to end soon under ASan too; stopped while it is read, so that it is
    # surely still running for the listing, and continued to exit by itself.
    start_bench 300000
    sends=0
    for _ in $(seq 600); do
        if out=$("$softrnic" stats "$bench_pid" --json 2>/dev/null); then
            sends=$(counter "$out" sends_completed)
            [ "${sends:-0}" -gt 1000 ] && break
        fi
        kill -0 "$bench_pid" 2>/dev/null || fail "the benchmark ended before it was read"
        sleep 0.05
    done
    kill -STOP "$bench_pid"
    out=$("$softrnic" stats "$bench_pid" --json)
    sends=$(counter "$out" sends_completed)
    echo "$out"
    [ "${sends:-0}" -gt 1000 ] || fail "no sends counted in the running benchmark"
    [ "$(counter "$out" send_bytes)" -ge $((sends * 8)) ] || fail "send_bytes < 8 x sends"
    [ "$(counter "$out" cm_connects_shm)" -ge 1 ] || fail "no shm connection counted"
    [ "$(counter "$out" qps_created)" -ge 1 ] || fail "no QP counted"
    grep -q "\"pid\":$bench_pid,\"command\":\"softrnic\"" <<<"$out" || fail "pid or command"
    "$softrnic" stats >"$tmp/all"
    grep -q "^process $bench_pid (softrnic)" "$tmp/all" || fail "not in the listing"
    kill -CONT "$bench_pid"
    wait "$bench_pid"
    bench_pid_done=$bench_pid
    bench_pid=
    [ ! -e "/dev/shm/softrnic-stats.$bench_pid_done" ] || fail "the file outlived its process"
    rc=0
    "$softrnic" stats "$bench_pid_done" 2>"$tmp/err" || rc=$?
    [ $rc = 1 ] || fail "stats of a finished process: exit $rc"
    grep -q "no counters" "$tmp/err" || fail "no reason given"
    ;;
disabled)
    # Long enough to be still running when looked at (killed by the clean-up).
    start_bench 100000000 SOFTRNIC_STATS=0
    sleep 1
    kill -0 "$bench_pid" || fail "the benchmark ended early"
    [ ! -e "/dev/shm/softrnic-stats.$bench_pid" ] || fail "SOFTRNIC_STATS=0 kept a file"
    ;;
stale)
    # Two files of processes that are gone: a whole one (a copy of a running benchmark's, read
    # once it is readable) and one cut short, as a process that died while it made its file
    # or folded a block into it leaves (it never parses).
    start_bench 100000000
    for _ in $(seq 600); do
        "$softrnic" stats "$bench_pid" >/dev/null 2>&1 && break
        kill -0 "$bench_pid" 2>/dev/null || fail "the benchmark ended early"
        sleep 0.05
    done
    "$softrnic" stats "$bench_pid" >/dev/null || fail "the benchmark's counters never became readable"
    sleep 0 &
    dead=$!
    wait $dead
    sleep 0 &
    cut_short=$!
    wait $cut_short
    fake=/dev/shm/softrnic-stats.$dead
    fake_cut=/dev/shm/softrnic-stats.$cut_short
    cp "/dev/shm/softrnic-stats.$bench_pid" "$fake"
    head -c 24 "/dev/shm/softrnic-stats.$bench_pid" >"$fake_cut"
    for p in "$dead" "$cut_short"; do
        rc=0
        "$softrnic" stats "$p" 2>"$tmp/err" || rc=$?
        [ $rc = 1 ] && grep -q "gone" "$tmp/err" ||
            fail "a dead process's file was read (pid $p, exit $rc: $(cat "$tmp/err"))"
    done
    "$softrnic" stats >"$tmp/all"
    ! grep -q "^process $dead " "$tmp/all" || fail "a dead process was listed"
    [ ! -e "$fake" ] || fail "the stale file was not removed"
    [ ! -e "$fake_cut" ] || fail "the stale file cut short was not removed"
    ;;
bad_option)
    rc=0
    "$softrnic" stats nonsense || rc=$?
    [ $rc = 2 ] || fail "exit $rc"
    ;;
esac
echo "stats_cli $mode: passed"
