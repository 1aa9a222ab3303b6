#!/usr/bin/env bash
# `softrnic doctor` on situations the test makes, each checked by what the command says and
# its exit status:
#   json              --json is one well-formed object (CHECKER: a cmake -P script) with
#                     every check, each with a known status
#   dat_conf_ok       DAT_OVERRIDE names this build's provider: the check passes
#   dat_conf_broken   DAT_OVERRIDE names a library that is not there: fail, exit 1, a fix
#   dat_conf_missing  no softrnic line: warn, with the dat-conf command as the fix
#   descriptors       a hard descriptor limit too low for the connections asked: fail
#   cma_disabled      SOFTRNIC_SHM_CMA=0: the CMA check says so (warn)
#   ports_busy        one of bench's ports held by another process: warn naming the port
#   bad_option        an unknown option or a bad number: exit 2
set -euo pipefail
mode=$1 softrnic=$2 cmake=$3 checker=$4
tmp=$(mktemp -d)
holder=
cleanup() {
    [ -n "$holder" ] && kill "$holder" 2>/dev/null || true
    rm -rf "$tmp"
}
trap cleanup EXIT

# run ARGS...: the command's stdout in $tmp/out, its exit status in $rc
run() {
    rc=0
    "$@" >"$tmp/out" 2>"$tmp/err" || rc=$?
    cat "$tmp/out" "$tmp/err"
}
expect() {  # expect REGEX: a line of the output matches
    grep -Eq -- "$1" "$tmp/out" || { echo "FAIL: no line matches: $1"; exit 1; }
}
expect_rc() {
    [ "$rc" = "$1" ] || { echo "FAIL: exit status $rc, expected $1"; exit 1; }
}

case "$mode" in
json)
    run "$softrnic" doctor --json
    exec "$cmake" -DJSON_FILE="$tmp/out" -P "$checker"
    ;;
dat_conf_ok)
    "$softrnic" dat-conf >"$tmp/dat.conf"
    DAT_OVERRIDE=$tmp/dat.conf run "$softrnic" doctor
    /sbin/ldconfig -p >"$tmp/ldconfig"  # not piped into grep -q: pipefail and SIGPIPE
    if grep -q 'libdat2\.so\.2 ' "$tmp/ldconfig"; then
        expect "^ok +dat\.conf +.*names softrnic, softrnic-tcp, softrnic-shm; the provider loads$"
    else
        expect "^warn +dat\.conf +.*the provider loads, but libdat2.so.2 .* is not installed"
    fi
    ;;
dat_conf_broken)
    "$softrnic" dat-conf --prefix "$tmp/nowhere" >"$tmp/dat.conf"
    DAT_OVERRIDE=$tmp/dat.conf run "$softrnic" doctor
    expect_rc 1
    expect "^fail +dat\.conf +.*softrnic: .*nowhere.*libdaplsoftrnic\.so\.2"
    expect "fix: rewrite the softrnic lines"
    expect "something softrnic needs is missing"
    ;;
dat_conf_missing)
    echo "OpenIB-cma u2.0 nonthreadsafe default libdaplofa.so.2 dapl.2.0 \"ib0 0\" \"\"" \
        >"$tmp/dat.conf"
    DAT_OVERRIDE=$tmp/dat.conf run "$softrnic" doctor
    expect "^warn +dat\.conf +.*names no softrnic IA"
    expect "fix: softrnic dat-conf >> $tmp/dat.conf"
    ;;
descriptors)
    # A hard limit can be lowered without privilege, in this subshell only.
    (ulimit -Sn 256 && ulimit -Hn 256 && run "$softrnic" doctor --connections 1000 &&
        expect_rc 1 &&
        expect "^fail +descriptors +soft 256, hard 256; 1000 connections need about 3064" &&
        expect "fix: raise the hard limit to 3064")
    ;;
cma_disabled)
    SOFTRNIC_SHM_CMA=0 run "$softrnic" doctor
    expect "^warn +cma +disabled by SOFTRNIC_SHM_CMA=0"
    expect "fix: unset SOFTRNIC_SHM_CMA"
    ;;
ports_busy)
    # perl-base is on every Debian system: hold a listening socket on an ephemeral port.
    perl -MIO::Socket::INET -e '
        my $s = IO::Socket::INET->new(Listen => 1, LocalAddr => "0.0.0.0", LocalPort => 0,
                                      Proto => "tcp") or die $!;
        open(my $f, ">", $ARGV[0]) or die $!; print $f $s->sockport, "\n"; close $f;
        sleep 60;' "$tmp/port" &
    holder=$!
    for _ in $(seq 100); do [ -s "$tmp/port" ] && break; sleep 0.05; done
    port=$(cat "$tmp/port")
    [ "$port" -gt 1 ] && [ "$port" -le 65533 ] || { echo "SKIP: port $port"; exit 77; }
    run "$softrnic" doctor --port $((port - 1))
    expect "^warn +ports +TCP ports in use: $port \("
    expect "fix: softrnic bench --port N"
    ;;
bad_option)
    run "$softrnic" doctor --frobnicate
    expect_rc 2
    run "$softrnic" doctor --connections 0
    expect_rc 2
    run "$softrnic" doctor --port 65534
    expect_rc 2
    ;;
*)
    echo "unknown mode $mode"
    exit 2
    ;;
esac
