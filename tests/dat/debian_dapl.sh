# debian_dapl.sh - sourced by the DAT comparison tests: make Debian's DAPL
# packages available, or say why they cannot be.
#
# ensure_debian_dapl PACKAGE FILE
#   Returns 0 when FILE exists, installing PACKAGE with apt-get first if it
#   does not and we are root (apt-get update only when the plain install
#   fails). Returns 1 otherwise. SOFTRNIC_NO_APT=1 forbids installing.
#   The comparison tests are the only users of Debian's files: the build
#   itself never looks at them.

ensure_debian_dapl() {
    _pkg=$1
    _file=$2
    [ -e "$_file" ] && return 0
    if [ "${SOFTRNIC_NO_APT:-0}" = 1 ]; then
        echo "note: $_file missing and SOFTRNIC_NO_APT=1" >&2
        return 1
    fi
    if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null 2>&1; then
        echo "note: $_file missing; installing $_pkg needs root and apt-get" >&2
        return 1
    fi
    echo "note: installing $_pkg (for $_file)" >&2
    _apt="apt-get -q -y -o DPkg::Lock::Timeout=120"
    if ! DEBIAN_FRONTEND=noninteractive $_apt install "$_pkg" >/dev/null 2>&1; then
        DEBIAN_FRONTEND=noninteractive $_apt update >/dev/null 2>&1 || true
        DEBIAN_FRONTEND=noninteractive $_apt install "$_pkg" >/dev/null 2>&1 || true
    fi
    [ -e "$_file" ] && return 0
    echo "note: could not install $_pkg" >&2
    return 1
}
