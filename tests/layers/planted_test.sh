#!/usr/bin/env bash
# scripts/check-layers must refuse each kind of violation: a copy of the tree gets one
# planted and the check has to fail on it, naming the file (and pass on the clean copy).
#   planted_test.sh SOURCE_DIR
set -euo pipefail
src=$1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/clean"
cp -r "$src/src" "$src/include" "$src/README.md" "$work/clean/"
bash "$src/scripts/check-layers" "$work/clean" >/dev/null

# plant NAME FILE LINE: the check must fail on a copy whose FILE starts with LINE, and say so.
plant() {
    local name=$1 file=$2 line=$3 t="$work/$1"
    cp -r "$work/clean" "$t"
    mkdir -p "$(dirname "$t/$file")"
    { echo "$line"; cat "$t/$file" 2>/dev/null || true; } >"$t/$file.new"
    mv "$t/$file.new" "$t/$file"
    if out=$(bash "$src/scripts/check-layers" "$t" 2>&1); then
        echo "FAIL $name: the check passed with '$line' in $file" >&2
        exit 1
    fi
    grep -q "$file" <<<"$out" || {
        echo "FAIL $name: the report does not name $file: $out" >&2
        exit 1
    }
    echo "ok   $name"
}

plant face_includes_engine src/api/dat/provider/planted.cpp '#include "engine/qp.hpp"'
plant face_includes_transport src/api/dat/provider/planted.cpp '#include "transport/shm/shm.hpp"'
plant face_includes_rnicpi_internals src/api/common/planted.hpp '#include "rnicpi/provider.hpp"'
plant transport_includes_engine src/transport/tcp/planted.cpp '#include "engine/device.hpp"'
plant engine_includes_transport_internals src/engine/planted.cpp '#include "transport/shm/shm.hpp"'
plant base_includes_engine src/base/planted.hpp '#include "engine/device.hpp"'
plant cm_header_includes_transport src/cm/connection_manager.hpp '#include "transport/tcp/tcp_channel.hpp"'
plant mad_includes_engine src/mad/planted.cpp '#include "engine/device.hpp"'
plant mad_includes_transport src/mad/planted.hpp '#include "transport/transport.hpp"'
plant face_includes_mad src/api/dat/provider/planted.cpp '#include "mad/common.hpp"'
plant engine_includes_ib_internals src/engine/planted.cpp '#include "transport/ib/local_subnet.hpp"'
plant stray_getenv src/engine/planted.cpp 'const char *v = std::getenv("SOFTRNIC_NEW_THING");'
