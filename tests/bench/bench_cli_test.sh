#!/usr/bin/env bash
# bench_cli_test.sh MODE SOFTRNIC CMAKE CHECKER
#   tcp_json        softrnic bench --transport tcp --json (it spawns its own server)
#   server_connect  softrnic bench --server 127.0.0.1 --port 0, then --connect to it
#   connections_shm, connections_tcp
#                   softrnic bench --connections 60 --burst 16 over that transport (3 full
#                   bursts and a partial one, 2 rounds, so the server serves several SETUPs)
#   phase_done      a --server driven by a scripted client over the control protocol: it
#                   ends the phase (a raw TCP ping-pong) with DONE
#   client_killed   a --server whose --connect client is SIGKILLed mid-test: the server
#                   reports the error and exits 1 (no sanitizer report)
#   connections_fd_limit
#                   300 shm connections under a soft descriptor limit of 256: the command
#                   raises it towards the hard limit (exit 77, a skip, when the hard limit
#                   itself is too low)
# The JSON goes through CHECKER (a cmake -P script) for well-formedness and contents.
set -euo pipefail
mode=$1 softrnic=$2 cmake=$3 checker=$4
tmp=$(mktemp -d)
server_pid=
cleanup() {
    if [ -n "$server_pid" ] && kill -0 "$server_pid" 2>/dev/null; then
        kill "$server_pid" 2>/dev/null || true
    fi
    if [ -s "$tmp/server.err" ]; then
        echo "server stderr:"
        cat "$tmp/server.err"
    fi
    rm -rf "$tmp"
}
trap cleanup EXIT

common=(--iters 20 --rounds 1 --window 8 --json --no-progress)

# start_server: `softrnic bench --server` on 127.0.0.1 with an ephemeral port, in the
# background (server_pid; stdout in server.out, stderr in server.err); sets `port` once
# the server has printed it.
start_server() {
    # Created here: the background job's redirection happens in the child, which the first
    # sed below could otherwise beat (it then failed, "can't read server.out").
    : >"$tmp/server.out"
    "$softrnic" bench --server 127.0.0.1 --port 0 --transport tcp >"$tmp/server.out" \
        2>"$tmp/server.err" &
    server_pid=$!
    port=
    for _ in $(seq 1 200); do
        port=$(sed -n 's/.* port \([0-9][0-9]*\) (connection manager.*/\1/p' "$tmp/server.out")
        [ -n "$port" ] && break
        kill -0 "$server_pid" 2>/dev/null || { echo "server exited early" >&2; exit 1; }
        sleep 0.05
    done
    [ -n "$port" ] || { echo "server did not report its port" >&2; exit 1; }
}
case "$mode" in
tcp_json)
    sizes="8;4096;1048576"
    "$softrnic" bench --transport tcp --size 8,4096,1048576 "${common[@]}" >"$tmp/out.json"
    ;;
server_connect)
    sizes="8;65536"
    start_server
    echo "server: $(cat "$tmp/server.out")"
    "$softrnic" bench --connect 127.0.0.1 --port "$port" --size 8,65536 "${common[@]}" \
        >"$tmp/out.json"
    # The server serves one client and exits with status 0.
    wait "$server_pid"
    server_pid=
    ;;
memory_polled_shm)
    # The write ping-pong as dtest -W runs it (each side polls the peer's last byte, not its
    # CQ): every round must come back, through the shm transport's direct placement or its
    # ring.
    "$softrnic" bench --transport shm --size 8,4096 --ops write --lat-wait memory --no-ref \
        "${common[@]}" >"$tmp/out.json"
    cat "$tmp/out.json"
    exec "$cmake" -DJSON_FILE="$tmp/out.json" -DSIZES="8;4096" -DOPS="write" -DREFS=0 \
        -P "$checker"
    ;;
connections_shm | connections_tcp)
    "$softrnic" bench --transport "${mode#connections_}" --connections 60 --burst 16 \
        --rounds 2 --json --no-progress >"$tmp/out.json"
    cat "$tmp/out.json"
    exec "$cmake" -DJSON_FILE="$tmp/out.json" -DCONNS=60 \
        -P "$(dirname "$checker")/check_connect_json.cmake"
    ;;
connections_fd_limit)
    hard=$(ulimit -Hn)
    if [ "$hard" != unlimited ] && [ "$hard" -lt 1000 ]; then
        echo "SKIP: hard descriptor limit $hard"
        exit 77
    fi
    ulimit -Sn 256
    "$softrnic" bench --transport shm --connections 300 --rounds 1 --json --no-progress \
        >"$tmp/out.json"
    cat "$tmp/out.json"
    exec "$cmake" -DJSON_FILE="$tmp/out.json" -DCONNS=300 \
        -P "$(dirname "$checker")/check_connect_json.cmake"
    ;;
phase_done)
    # The server says when its side of a phase has ended (DONE), and the client waits for
    # that before it tears its QP down: its own side can end first, and its abortive close
    # then flushed the receives the server still had posted while it polled for its last
    # send's completion (the shm send test failed so, on the server's side, about one run
    # in fifteen on a loaded machine). A raw TCP ping-pong stands for the phase here.
    start_server
    exec 3<>"/dev/tcp/127.0.0.1/$port"
    answer() {  # answer WANTED: the server's next control line, which must start so
        IFS= read -r -t 20 line <&3 || { echo "FAIL: no answer (wanted $1)" >&2; exit 1; }
        echo "server: $line"
        [ "${line%% *}" = "$1" ] || { echo "FAIL: wanted $1" >&2; exit 1; }
    }
    printf 'HELLO 2 tcp\n' >&3
    answer OK
    raw_port=${line##* }
    printf 'SETUP rawpp 8\n' >&3
    answer OK
    exec 4<>"/dev/tcp/127.0.0.1/$raw_port"
    answer READY
    printf 'PHASE lat 3\n' >&3
    answer GO
    for _ in 1 2 3; do
        printf 'pingpong' >&4
        IFS= read -r -N 8 -t 20 reply <&4 || { echo "FAIL: no ping-pong reply" >&2; exit 1; }
    done
    answer DONE
    printf 'BYE\n' >&3
    answer OK
    exec 3>&- 4>&-
    wait "$server_pid"
    server_pid=
    exit 0
    ;;
client_killed)
    # A server whose client dies mid-test reports the error and exits with status 1. Its
    # error path once reset the test's session after the RNIC under it had gone (ASan:
    # stack-use-after-scope in RdmaSession::close).
    start_server
    "$softrnic" bench --connect 127.0.0.1 --port "$port" --no-ref --size 1048576 --ops write \
        --time 30 --rounds 1 --no-progress >"$tmp/client.out" 2>&1 &
    client_pid=$!
    sleep 1
    kill -9 "$client_pid"
    wait "$client_pid" 2>/dev/null || true
    status=0
    wait "$server_pid" || status=$?
    server_pid=
    echo "server status $status; stderr:"
    cat "$tmp/server.err"
    if grep -q "Sanitizer\|runtime error" "$tmp/server.err"; then
        echo "FAIL: the server's error path tripped a sanitizer" >&2
        exit 1
    fi
    [ "$status" = 1 ] || { echo "FAIL: server exit status $status, expected 1" >&2; exit 1; }
    # The server's own message ("softrnic bench server: ..."), not a log line (those start
    # with a time stamp and also name softrnic).
    grep -q "^softrnic bench server: " "$tmp/server.err" ||
        { echo "FAIL: no error message" >&2; exit 1; }
    exit 0
    ;;
*)
    echo "unknown mode $mode" >&2
    exit 2
    ;;
esac
cat "$tmp/out.json"
"$cmake" -DJSON_FILE="$tmp/out.json" -DSIZES="$sizes" -DOPS="send;write;read" -DREFS=1 \
    -P "$checker"
