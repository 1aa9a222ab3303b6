#!/usr/bin/env bash
# `cmake --install` of a build tree into a temporary prefix, then checks what a user of the
# install gets: the public headers, each library with its soname and link-time names, the
# `softrnic` command, the provider's dat.conf lines, pkg-config files that validate, and a
# CMake package. Two small C programs (tests/install/*.c) are built against the installed
# libraries twice, through pkg-config and through find_package(softrnic), and run: one opens
# an RNIC instance through RNICPI, the other opens the softrnic IA through libdat2 with
# DAT_OVERRIDE at the installed dat.conf lines.
#   install_test.sh BUILD_DIR LIBDIR BINDIR INCLUDEDIR DATADIR CC CMAKE GENERATOR MAKE_PROGRAM
# (the install dirs as GNUInstallDirs set them in BUILD_DIR). Exit 0 on success, 1 on a
# failed check, 77 when an install dir is absolute (it would not be under the prefix).
set -euo pipefail

[ $# -eq 9 ] || { sed -n '2,11p' "$0" >&2; exit 2; }
build=$1 libdir=$2 bindir=$3 includedir=$4 datadir=$5 cc=$6 cmake=$7 generator=$8 make_program=$9
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
source_dir=$(cd "$here/../.." && pwd)
for dir in "$libdir" "$bindir" "$includedir" "$datadir"; do
    case $dir in /*) echo "SKIP: install dir $dir is absolute, outside any prefix"; exit 77 ;; esac
done
command -v pkg-config >/dev/null || { echo "FAIL: pkg-config is not installed" >&2; exit 1; }

# Nothing from the caller's environment may point the programs at other libraries.
unset LD_LIBRARY_PATH LD_PRELOAD DAT_OVERRIDE PKG_CONFIG_PATH

work=$(mktemp -d "${TMPDIR:-/tmp}/softrnic-install.XXXXXX")
trap 'rm -rf "$work"' EXIT
prefix=$work/prefix
lib=$prefix/$libdir
failures=0
fail() {
    echo "FAIL: $*" >&2
    failures=$((failures + 1))
}

"$cmake" --install "$build" --prefix "$prefix" >"$work/install.log"

# The public headers: every file of include/, unchanged.
while IFS= read -r header; do
    cmp -s "$source_dir/include/$header" "$prefix/$includedir/$header" ||
        fail "header $includedir/$header missing or different"
done < <(cd "$source_dir/include" && find . -name '*.h' | sed 's|^\./||')

soname_of() { readelf -d "$1" | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p'; }

# A library: the real file, its soname link (the name the loader looks for, matching the
# file's SONAME) and, for a linkable library, the link-time name -lNAME finds.
check_library() {
    local name=$1 soname=$2 linkable=$3
    local real
    [ -L "$lib/$soname" ] || { fail "$libdir/$soname is not a symlink"; return; }
    real=$(readlink -f "$lib/$soname")
    if [ ! -f "$real" ] || [ "$(dirname "$real")" != "$(readlink -f "$lib")" ]; then
        fail "$libdir/$soname does not resolve to a file in $libdir"
        return
    fi
    [ "$(soname_of "$real")" = "$soname" ] || fail "$real has SONAME '$(soname_of "$real")'"
    if [ "$linkable" = yes ]; then
        if [ ! -L "$lib/lib$name.so" ] || [ "$(readlink -f "$lib/lib$name.so")" != "$real" ]; then
            fail "$libdir/lib$name.so does not link to $real"
        fi
    elif [ -e "$lib/lib$name.so" ]; then
        fail "$libdir/lib$name.so is installed for a library nothing links"
    fi
    # Nothing installed may look for its dependencies in the build tree.
    if readelf -d "$real" | grep -E 'R(UN)?PATH' | grep -qF "$build"; then
        fail "$real has a run path into the build tree"
    fi
}
check_library softrnic libsoftrnic.so.0 yes
check_library dat2 libdat2.so.2 yes
check_library itapi libitapi.so.2 yes
check_library daplsoftrnic libdaplsoftrnic.so.2 no

# The command runs from the prefix, and prints the lines the install wrote.
command=$prefix/$bindir/softrnic
dat_conf=$prefix/$datadir/softrnic/dat.conf
if [ ! -x "$command" ]; then
    fail "$bindir/softrnic is not installed"
elif ! "$command" --help >/dev/null; then
    fail "$bindir/softrnic --help failed"
elif ! diff <("$command" dat-conf --prefix "$prefix") <(grep -v '^#' "$dat_conf") >&2; then
    fail "softrnic dat-conf --prefix and the installed $datadir/softrnic/dat.conf differ"
fi
grep -q "^softrnic .* $lib/libdaplsoftrnic.so.2 " "$dat_conf" ||
    fail "$datadir/softrnic/dat.conf does not name $libdir/libdaplsoftrnic.so.2"

# Installed text files name the prefix, never the build tree.
if grep -rlF "$build" "$prefix/$datadir" "$lib/pkgconfig" "$lib/cmake" >&2; then
    fail "installed files above name the build tree"
fi

# The CMake package.
for file in softrnicConfig.cmake softrnicConfigVersion.cmake softrnicTargets.cmake; do
    [ -f "$lib/cmake/softrnic/$file" ] || fail "$libdir/cmake/softrnic/$file is not installed"
done

# Runs a consumer program (PROGRAM [ARGS]): its output must match each of the extended
# regular expressions given after "--" (one line each), and the loader must have taken
# libsoftrnic/libdat2 from the prefix.
run_consumer() {
    local label=$1 program=$2 out pattern
    shift 2
    local args=()
    while [ $# -gt 0 ] && [ "$1" != -- ]; do args+=("$1"); shift; done
    shift
    if ! out=$("$program" "${args[@]}" 2>&1); then
        fail "$label: $program ${args[*]} failed: $out"
        return
    fi
    echo "$label: ${out//$'\n'/; }"
    for pattern in "$@"; do
        grep -qE "$pattern" <<<"$out" || fail "$label: no line of the output matches '$pattern'"
    done
    if ldd "$program" | grep -E 'lib(softrnic|dat2|itapi)\.so' | grep -vqF "$lib/"; then
        fail "$label: $program loads a library from outside $libdir: $(ldd "$program")"
    fi
}
# The RNIC instance, and the three IAs of the dat.conf lines with the first one opened.
rnicpi_expect=('^rnic install-check: .+, [1-9][0-9]* QPs$')
dat_expect=('^listed softrnic$' '^listed softrnic-tcp$' '^listed softrnic-shm$'
            '^opened softrnic: provider .+')
it_expect=('^interface softrnic$' '^interface softrnic-tcp$' '^interface softrnic-shm$'
           '^opened softrnic: [1-9][0-9]* spigots$')
export DAT_OVERRIDE=$dat_conf

# Route 1: pkg-config.
export PKG_CONFIG_PATH=$lib/pkgconfig
for pc in softrnic-rnicpi softrnic-dat2 softrnic-itapi; do
    if ! out=$(pkg-config --validate "$pc" 2>&1) || [ -n "$out" ]; then
        fail "pkg-config --validate $pc: $out"
    fi
    [ "$(pkg-config --modversion "$pc")" = "$(sed -n 's/^Version: //p' "$lib/pkgconfig/$pc.pc")" ] ||
        fail "pkg-config --modversion $pc"
done
mkdir -p "$work/pkg-config"
build_with_pkg_config() {
    local program=$1 package=$2
    # shellcheck disable=SC2046 # pkg-config prints several flags
    "$cc" -std=c99 -Wall -Wextra -Wpedantic -Werror $(pkg-config --cflags "$package") \
        "$here/$program.c" -o "$work/pkg-config/$program" $(pkg-config --libs "$package") ||
        fail "pkg-config: $program does not build against $package"
}
build_with_pkg_config rnicpi_open softrnic-rnicpi
build_with_pkg_config dat_open softrnic-dat2
build_with_pkg_config it_open softrnic-itapi
export LD_LIBRARY_PATH=$lib
run_consumer pkg-config "$work/pkg-config/rnicpi_open" -- "${rnicpi_expect[@]}"
run_consumer pkg-config "$work/pkg-config/dat_open" softrnic -- "${dat_expect[@]}"
run_consumer pkg-config "$work/pkg-config/it_open" -- "${it_expect[@]}"
unset LD_LIBRARY_PATH PKG_CONFIG_PATH

# Route 2: find_package(softrnic); the programs find the libraries through the run path
# CMake gives them. The package refuses a version it is not compatible with.
configure_consumer() {
    "$cmake" -S "$here/consumer" -B "$work/$1" -G "$generator" -DCMAKE_MAKE_PROGRAM="$make_program" \
        -DCMAKE_C_COMPILER="$cc" -DCMAKE_PREFIX_PATH="$prefix" -DEXPECTED_PREFIX="$prefix" \
        -DSOFTRNIC_VERSION="$2" >"$work/$1.log" 2>&1
}
if ! configure_consumer cmake "$(sed -n 's/^Version: //p' "$lib/pkgconfig/softrnic-rnicpi.pc")"; then
    fail "find_package(softrnic) failed: $(cat "$work/cmake.log")"
elif ! "$cmake" --build "$work/cmake" >"$work/cmake-build.log" 2>&1; then
    fail "the find_package(softrnic) consumer does not build: $(cat "$work/cmake-build.log")"
else
    [ "$(cat "$work/cmake/dat_conf_path")" = "$dat_conf" ] ||
        fail "softrnic_DAT_CONF is $(cat "$work/cmake/dat_conf_path"), not $dat_conf"
    run_consumer cmake "$work/cmake/rnicpi_open" -- "${rnicpi_expect[@]}"
    run_consumer cmake "$work/cmake/dat_open" softrnic -- "${dat_expect[@]}"
    run_consumer cmake "$work/cmake/it_open" -- "${it_expect[@]}"
fi
if configure_consumer cmake-incompatible 99.0; then
    fail "find_package(softrnic 99.0) accepted the installed version"
fi

[ "$failures" -eq 0 ] || exit 1
echo "PASS: the install under $prefix builds and runs consumers via pkg-config and CMake"
