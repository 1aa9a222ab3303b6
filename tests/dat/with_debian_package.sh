#!/bin/sh
# with_debian_package.sh PACKAGE FILE COMMAND... - run COMMAND once FILE (from
# Debian's PACKAGE) is present, installing the package if we may; exit 77
# (CTest skip) when it cannot be had.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
package=$1
file=$2
shift 2
. "$here/debian_dapl.sh"
if ! ensure_debian_dapl "$package" "$file"; then
    echo "SKIP: $file ($package) is not installed"
    exit 77
fi
exec "$@"
