#!/usr/bin/env bash
# Wireshark acceptance of softrnic's iWARP wire format (brief: shared/specs/
# iwarp-wire-format.md, sections 7.2-7.4). For each run it captures on `lo` (tcpdump,
# filter `tcp port P`, P chosen here) while twoproc_tests runs its wire scenario
# (TwoProcWireshark.Scenario: MPA Request/Reply with private data, Send, Send+SE, Send+Inv,
# RDMA Write, RDMA Read, and a bad-STag Write answered by a Terminate), then has tshark
# decode the capture with the MPA/DDP/RDMAP dissectors and fails on:
#   - any malformed frame or expert item of severity error,
#   - any bad CRC (and, with CRC on, no CRC verified at all),
#   - any TCP payload on the port that was not dissected as MPA/iWARP,
#   - an MPA Request/Reply missing, without the private data the test sent, with the wrong
#     CRC flag, or sharing its TCP segment with an FPDU (tcp.len != 20 + PD_Length),
#   - an RDMAP opcode count different from what the scenario sends (one FPDU each: Send,
#     Send with SE, Send with Invalidate, Read Request, Read Response, Terminate; two RDMA
#     Writes).
# Runs: IPv4 with CRC on, IPv6 with CRC off.
#
# Usage: wireshark_check.sh <path to twoproc_tests>
# Installs tshark and tcpdump (Debian packages) when missing. Exit status: 0 pass, 1 fail,
# 77 skipped: only when tshark/tcpdump are missing and cannot be installed. Every step is
# bounded by `timeout`; the capture process and files are removed on every path
# (KEEP_PCAP=1 keeps the directory for debugging).
set -uo pipefail

BIN=${1:-}
if [[ -z $BIN || ! -x $BIN ]]; then
    echo "usage: $0 <twoproc_tests binary>" >&2
    exit 1
fi

log() { echo "[wireshark_check] $*"; }
FAILED=0
fail() {
    echo "[wireshark_check] FAIL: $*"
    FAILED=1
}

WORK=$(mktemp -d "${TMPDIR:-/tmp}/twoproc-wireshark.XXXXXX") || exit 1
chmod 755 "$WORK"
CAP_PID=
cleanup() {
    if [[ -n $CAP_PID ]] && kill -0 "$CAP_PID" 2>/dev/null; then
        kill -INT "$CAP_PID" 2>/dev/null
        for _ in $(seq 1 20); do kill -0 "$CAP_PID" 2>/dev/null || break; sleep 0.1; done
        kill -KILL "$CAP_PID" 2>/dev/null
        wait "$CAP_PID" 2>/dev/null
    fi
    CAP_PID=
    if [[ ${KEEP_PCAP:-0} == 1 ]]; then
        log "kept $WORK"
    else
        rm -rf "$WORK"
    fi
}
trap cleanup EXIT
trap 'exit 1' INT TERM HUP

# ------------------------------------------------------------------------ tools
have_tools() { command -v tshark >/dev/null 2>&1 && command -v tcpdump >/dev/null 2>&1; }
install_tools() {
    have_tools && return 0
    if [[ $(id -u) -ne 0 ]] || ! command -v apt-get >/dev/null 2>&1; then
        log "tshark/tcpdump missing and cannot be installed here (not root or no apt-get)"
        return 1
    fi
    log "installing tshark and tcpdump"
    echo "wireshark-common wireshark-common/install-setuid boolean false" | debconf-set-selections
    local apt=(apt-get -o DPkg::Lock::Timeout=300 -y --no-install-recommends)
    if ! DEBIAN_FRONTEND=noninteractive timeout 900 "${apt[@]}" install tshark tcpdump \
        >"$WORK/apt.log" 2>&1; then
        timeout 300 apt-get -o DPkg::Lock::Timeout=300 update >>"$WORK/apt.log" 2>&1
        DEBIAN_FRONTEND=noninteractive timeout 900 "${apt[@]}" install tshark tcpdump \
            >>"$WORK/apt.log" 2>&1
    fi
    have_tools && return 0
    tail -n 20 "$WORK/apt.log"
    return 1
}
if ! install_tools; then
    log "SKIP: tshark/tcpdump unavailable"
    exit 77
fi
log "$(tshark --version 2>/dev/null | head -n 1)"

OPTS=(-o tcp.try_heuristic_first:TRUE --enable-heuristic iwarp_mpa_tcp
    --disable-heuristic rpcrdma_iwarp --disable-heuristic smb_direct_iwarp)
tshark2() { timeout 120 tshark -n -2 -r "$PCAP" "${OPTS[@]}" "$@" 2>>"$WORK/tshark.err"; }

to_hex() { printf '%s' "$1" | od -An -tx1 -v | tr -d ' \n'; }
# Must match wire_scenario_test.cpp.
REQ_PD_HEX=$(to_hex "softrnic-twoproc MPA request private data")
REP_PD_HEX=$(to_hex "softrnic-twoproc MPA reply private data")
# RDMAP opcode -> FPDUs the scenario sends (every message fits one FPDU on lo). RDMA Write
# counts the connection manager's RFC 6581 RTR (a zero-length Write) and the test's two.
declare -A EXPECT_OPS=([0]=3 [1]=1 [2]=1 [3]=1 [4]=1 [5]=1 [7]=1)
declare -A OP_NAME=([0]="RDMA Write" [1]="Read Request" [2]="Read Response" [3]="Send"
    [4]="Send with Invalidate" [5]="Send with SE" [6]="Send with SE and Invalidate"
    [7]="Terminate")

pick_port() {
    local p
    for _ in $(seq 1 100); do
        p=$((20000 + RANDOM % 30000))
        if ! ss -Htan "( sport = :$p or dport = :$p )" 2>/dev/null | grep -q .; then
            echo "$p"
            return 0
        fi
    done
    return 1
}

# ------------------------------------------------------------------------ one run
# run <name> <gtest parameter suffix> <crc 0|1>
run() {
    local name=$1 param=$2 crc=$3 port rc
    PCAP="$WORK/$name.pcap"
    port=$(pick_port) || {
        fail "$name: no free port"
        return
    }
    log "$name: capturing tcp port $port on lo"
    timeout 300 tcpdump -i lo -n -U --immediate-mode -s 0 -Z root -w "$PCAP" "tcp port $port" \
        >"$WORK/$name.tcpdump.log" 2>&1 &
    CAP_PID=$!
    for _ in $(seq 1 100); do
        grep -q "listening on" "$WORK/$name.tcpdump.log" 2>/dev/null && break
        kill -0 "$CAP_PID" 2>/dev/null || break
        sleep 0.1
    done
    if ! grep -q "listening on" "$WORK/$name.tcpdump.log" 2>/dev/null; then
        fail "$name: tcpdump did not start: $(cat "$WORK/$name.tcpdump.log")"
        cleanup_capture
        return
    fi
    TWOPROC_WIRE_PORT=$port timeout 120 "$BIN" \
        --gtest_filter="Tcp/TwoProcWireshark.Scenario/$param" >"$WORK/$name.test.log" 2>&1
    rc=$?
    sleep 0.5 # let the last segments reach the capture
    cleanup_capture
    if [[ $rc -ne 0 ]] || ! grep -q "wire scenario done" "$WORK/$name.test.log"; then
        fail "$name: the scenario test failed (exit $rc):"
        cat "$WORK/$name.test.log"
        return
    fi
    grep "packets captured\|dropped by kernel" "$WORK/$name.tcpdump.log" | sed "s/^/    /"
    check "$name" "$port" "$crc"
}

cleanup_capture() {
    if [[ -n $CAP_PID ]]; then
        kill -INT "$CAP_PID" 2>/dev/null
        for _ in $(seq 1 50); do kill -0 "$CAP_PID" 2>/dev/null || break; sleep 0.1; done
        kill -KILL "$CAP_PID" 2>/dev/null
        wait "$CAP_PID" 2>/dev/null
        CAP_PID=
    fi
}

check() {
    local name=$1 port=$2 crc=$3 out n
    local nframes
    nframes=$(tshark2 -T fields -e frame.number | wc -l)
    if [[ $nframes -lt 10 ]]; then
        fail "$name: only $nframes frames captured"
        return
    fi

    # 1. Nothing malformed, no expert error.
    out=$(tshark2 -Y '_ws.malformed || _ws.expert.severity >= error') ||
        fail "$name: tshark failed: $(tail -n 3 "$WORK/tshark.err")"
    [[ -z $out ]] || fail "$name: malformed frames or expert errors:"$'\n'"$out"

    # 2. CRC: none bad; with CRC negotiated every FPDU verified good.
    out=$(tshark2 -V)
    n=$(grep -c 'Bad CRC32' <<<"$out")
    [[ $n -eq 0 ]] || fail "$name: $n bad CRC32 reported"
    local good
    good=$(grep -c 'Good CRC32' <<<"$out")

    # 3. Every TCP payload on the port dissected as MPA/iWARP.
    out=$(tshark2 -Y "tcp.port==$port && tcp.len>0 && !iwarp_mpa && !tcp.reassembled_in" \
        -T fields -e frame.number -e tcp.len)
    [[ -z $out ]] || fail "$name: TCP payload not dissected as MPA/iWARP (frame, length):"$'\n'"$out"

    # 4. MPA Request and Reply: private data, CRC flag, alone in their segment.
    local req rep
    req=$(tshark2 -Y 'iwarp_mpa.req' -T fields -E separator=' ' -e iwarp_mpa.crc_flag \
        -e iwarp_mpa.rej_flag -e iwarp_mpa.pdlength -e tcp.len -e iwarp_mpa.privatedata)
    rep=$(tshark2 -Y 'iwarp_mpa.rep' -T fields -E separator=' ' -e iwarp_mpa.crc_flag \
        -e iwarp_mpa.rej_flag -e iwarp_mpa.pdlength -e tcp.len -e iwarp_mpa.privatedata)
    check_mpa "$name" Request "$req" "$REQ_PD_HEX" "$crc"
    check_mpa "$name" Reply "$rep" "$REP_PD_HEX" "$crc"

    # 5. RDMAP opcodes: each expected message seen, as often as it was sent.
    out=$(tshark2 -Y 'iwarp_ddp_rdmap' -T fields -e frame.number -e iwarp_rdma.opcode \
        -e iwarp_ddp.qn -e iwarp_ddp.msn -e iwarp_mpa.ulpdulength)
    echo "$out" | sed "s/^/    /"
    declare -A seen=()
    local total=0 op
    for op in $(cut -f2 <<<"$out" | tr ',' '\n'); do
        [[ -n $op ]] || continue
        op=$((op))
        seen[$op]=$((${seen[$op]:-0} + 1))
        total=$((total + 1))
    done
    local expect_total=0
    for op in "${!EXPECT_OPS[@]}"; do
        expect_total=$((expect_total + EXPECT_OPS[$op]))
        if [[ ${seen[$op]:-0} -ne ${EXPECT_OPS[$op]} ]]; then
            fail "$name: ${OP_NAME[$op]} (opcode $op): ${seen[$op]:-0} FPDUs decoded, ${EXPECT_OPS[$op]} sent"
        fi
    done
    for op in "${!seen[@]}"; do
        [[ -n ${EXPECT_OPS[$op]:-} ]] || fail "$name: unexpected opcode $op (${seen[$op]} FPDUs)"
    done
    # Same count as sent: nothing hidden in the Request/Reply segments (brief 7.4).
    [[ $total -eq $expect_total ]] || fail "$name: $total FPDUs decoded, $expect_total sent"
    if [[ $crc == 1 ]]; then
        [[ $good -eq $total ]] || fail "$name: CRC on, but $good of $total FPDU CRCs verified good"
    else
        [[ $good -eq 0 ]] || fail "$name: CRC off, yet $good CRCs were checked"
    fi
    log "$name: $nframes frames, $total FPDUs decoded, $good good CRCs"
    [[ $crc == 1 ]] && selftest "$name" "$port" "$(awk -F'\t' '$2 == "0x03" {print $1; exit}' <<<"$out")"
}

# The checks must be able to fail: a copy of the capture with one CRC byte of the first
# Send FPDU flipped has to show exactly one bad CRC, and a copy without the MPA start-up
# frames has to show undissected payload.
selftest() {
    local name=$1 port=$2 frame=$3 bad="$WORK/$name.corrupt.pcap" cut="$WORK/$name.cut.pcap"
    if [[ -z $frame || $(od -An -tx1 -N4 "$PCAP" | tr -d ' \n') != d4c3b2a1 ]]; then
        fail "$name: self-test: no Send frame or not a classic pcap file"
        return
    fi
    local -a caps
    mapfile -t caps < <(tshark2 -T fields -e frame.cap_len)
    local off=24 i
    for ((i = 0; i < frame - 1; i++)); do off=$((off + 16 + caps[i])); done
    off=$((off + 16 + caps[frame - 1] - 1)) # last byte of the frame: part of the MPA CRC
    cp "$PCAP" "$bad"
    local byte
    byte=$(od -An -tu1 -j "$off" -N1 "$bad" | tr -d ' ')
    printf "$(printf '\\%03o' $((byte ^ 0xA5)))" |
        dd of="$bad" bs=1 seek="$off" conv=notrunc status=none
    local n
    n=$(PCAP=$bad tshark2 -V | grep -c 'Bad CRC32')
    [[ $n -eq 1 ]] || fail "$name: self-test: a flipped CRC byte in frame $frame gave $n bad CRCs"
    if command -v editcap >/dev/null 2>&1; then
        timeout 60 editcap -r "$PCAP" "$cut" "$frame-$((${#caps[@]}))" 2>/dev/null
        n=$(PCAP=$cut tshark2 -Y "tcp.port==$port && tcp.len>0 && !iwarp_mpa && !tcp.reassembled_in" |
            wc -l)
        [[ $n -gt 0 ]] || fail "$name: self-test: a capture without the MPA start-up looked dissected"
    fi
    log "$name: self-test passed (a corrupted CRC and a missing MPA start-up are detected)"
}

# check_mpa <name> <Request|Reply> <fields line> <expected ULP private data hex> <crc>
check_mpa() {
    local name=$1 what=$2 line=$3 pd_hex=$4 crc=$5
    if [[ -z $line ]]; then
        fail "$name: no MPA $what decoded"
        return
    fi
    if [[ $(wc -l <<<"$line") -ne 1 ]]; then
        fail "$name: more than one MPA $what:"$'\n'"$line"
        return
    fi
    local c r pdlen tcplen pd
    read -r c r pdlen tcplen pd <<<"$line"
    pd=${pd//:/}
    [[ $((c)) -eq $crc || ($c == True && $crc == 1) || ($c == False && $crc == 0) ]] ||
        fail "$name: MPA $what CRC flag $c, expected $crc"
    [[ $((r)) -eq 0 || $r == False ]] || fail "$name: MPA $what has the reject flag"
    # MPA v2: the private data is the 4-byte IRD/ORD block followed by the ULP's bytes.
    [[ ${pd:8} == "$pd_hex" ]] || fail "$name: MPA $what private data ${pd:-none}, expected ...$pd_hex"
    [[ $tcplen -eq $((20 + pdlen)) ]] ||
        fail "$name: MPA $what segment holds $tcplen bytes, the frame is $((20 + pdlen)) (FPDU glued to it?)"
}

run ipv4-crc IPv4_Crc 1
run ipv6-nocrc IPv6_NoCrc 0

if [[ $FAILED -ne 0 ]]; then
    log "FAILED"
    exit 1
fi
log "PASSED"
exit 0
