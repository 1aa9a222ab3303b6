#!/usr/bin/env bash
# deb_test.sh SOURCE_DIR - the Debian packages, built and used as a user would (root, CI):
#   1. dpkg-buildpackage -b -us -uc on a copy of the tree; lintian on the result, failing on
#      any warning or error;
#   2. apt-get install of the packages: /etc/dat.conf gains softrnic's three IA names and
#      keeps every line it had; `softrnic doctor` (installed) finds the provider;
#   3. Debian's unmodified dtest through the system dat.conf, no DAT_OVERRIDE, over shared
#      memory and over TCP; a C program built against the installed libsoftrnic-dev
#      through pkg-config;
#   4. apt-get purge: /etc/dat.conf is byte for byte what it was before the install.
# Changes the machine's packages and /etc/dat.conf; everything it installed is purged and
# dat.conf put back on every exit path.
set -euo pipefail
src=$(cd "$1" && pwd)
export DEBIAN_FRONTEND=noninteractive
unset DAT_OVERRIDE

if [ "$(id -u)" -ne 0 ]; then
    echo "SKIP: needs root (installs packages)"
    exit 77
fi
apt-get install -y -qq --no-install-recommends debhelper lintian dpkg-dev pandoc dapl2-utils \
    pkg-config g++ iproute2 >/dev/null

tmp=$(mktemp -d /tmp/softrnic-deb.XXXXXX)
packages=(libsoftrnic0 libitapi2 libsoftrnic-dev libdaplsoftrnic2 softrnic-tools)
cp /etc/dat.conf "$tmp/dat.conf.before"
cleanup() {
    local rc=$?
    pkill -f "dtest -P softrnic" 2>/dev/null || true
    apt-get purge -y -qq "${packages[@]}" >/dev/null 2>&1 || true
    if ! cmp -s /etc/dat.conf "$tmp/dat.conf.before"; then
        cp "$tmp/dat.conf.before" /etc/dat.conf
    fi
    rm -rf "$tmp"
    exit $rc
}
trap cleanup EXIT
fail() {
    echo "FAIL: $*"
    exit 1
}

echo "== build the packages"
mkdir "$tmp/build"
(cd "$src" && tar --exclude=./build --exclude=./.git --exclude='./obj-*' --exclude=./debian/tmp \
    -cf - .) | tar -xf - -C "$tmp/build"
(cd "$tmp/build" && dpkg-buildpackage -b -us -uc >"$tmp/build.log" 2>&1) ||
    { tail -40 "$tmp/build.log"; fail "dpkg-buildpackage"; }
ls "$tmp"/*.deb

echo "== lintian"
lintian --fail-on warning,error \
    "$tmp"/softrnic_*.changes || fail "lintian"

echo "== install"
apt-get install -y -qq "$tmp"/libsoftrnic0_*.deb "$tmp"/libitapi2_*.deb "$tmp"/libsoftrnic-dev_*.deb \
    "$tmp"/libdaplsoftrnic2_*.deb "$tmp"/softrnic-tools_*.deb >/dev/null
multiarch=$(dpkg-architecture -qDEB_HOST_MULTIARCH)
lib=/usr/lib/$multiarch/libdaplsoftrnic.so.2
for ia in softrnic softrnic-tcp softrnic-shm; do
    grep -Eq "^$ia u2.0 nonthreadsafe default $lib dapl.2.0 \"lo 0\" \"\"$" /etc/dat.conf ||
        fail "/etc/dat.conf has no line for $ia naming $lib"
done
# Every line that was there is still there, in order, before softrnic's.
head -c "$(stat -c %s "$tmp/dat.conf.before")" /etc/dat.conf | cmp -s - "$tmp/dat.conf.before" ||
    fail "the install changed /etc/dat.conf's existing lines"
# Installing again (reconfiguring) adds nothing twice.
dpkg-reconfigure libdaplsoftrnic2
[ "$(grep -c "$lib" /etc/dat.conf)" = 3 ] || fail "reconfigure duplicated softrnic's lines"
softrnic doctor | tee "$tmp/doctor.txt" || true
grep -Eq "^ok +dat\.conf +/etc/dat\.conf names softrnic, softrnic-tcp, softrnic-shm; the provider loads$" \
    "$tmp/doctor.txt" || fail "softrnic doctor does not find the installed provider"
man -w softrnic softrnic-doctor 7 softrnic 5 softrnic-dat.conf >/dev/null || fail "man pages"

echo "== dtest through the system dat.conf"
# dtest_pair IA: one dtest server and client over 127.0.0.1 with IA name IA.
dtest_pair() {
    local ia=$1 server
    timeout 120 dtest -P "$ia" -s >"$tmp/server.$ia.log" 2>&1 &
    server=$!
    for _ in $(seq 300); do
        grep -Eq "waiting for client|[Ss]erver ready" "$tmp/server.$ia.log" &&
            [ -n "$(ss -Hltn 'sport = :15828' 2>/dev/null)" ] && break
        kill -0 $server 2>/dev/null || break
        sleep 0.05
    done
    local crc=0 src=0
    timeout 120 dtest -P "$ia" -h 127.0.0.1 >"$tmp/client.$ia.log" 2>&1 || crc=$?
    wait $server || src=$?
    if [ $crc != 0 ] || [ $src != 0 ] || ! grep -q PASSED "$tmp/client.$ia.log"; then
        tail -5 "$tmp/server.$ia.log" "$tmp/client.$ia.log"
        fail "dtest -P $ia (client $crc, server $src)"
    fi
    echo "dtest -P $ia: PASSED"
}
dtest_pair softrnic-shm
dtest_pair softrnic-tcp

echo "== programs built against libsoftrnic-dev (RNICPI and IT-API)"
cc -std=c11 -Wall -Werror "$src/tests/install/rnicpi_open.c" -o "$tmp/rnicpi_open" \
    $(pkg-config --cflags --libs softrnic-rnicpi)
cc -std=c99 -Wall -Werror "$src/tests/install/it_open.c" -o "$tmp/it_open" \
    $(pkg-config --cflags --libs softrnic-itapi)
out=$("$tmp/it_open") || fail "it_open exited with $?"
grep -q "^opened softrnic: [1-9][0-9]* spigots$" <<<"$out" || fail "it_open: $out"
out=$("$tmp/rnicpi_open") || fail "rnicpi_open exited with $?"
grep -q "rnic install-check: softrnic" <<<"$out" || fail "rnicpi_open: $out"

echo "== purge"
apt-get purge -y -qq "${packages[@]}" >/dev/null
cmp /etc/dat.conf "$tmp/dat.conf.before" || fail "/etc/dat.conf differs after the purge"
echo "deb_test: passed"
