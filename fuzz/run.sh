#!/usr/bin/env bash
# Builds the fuzz targets (fuzz/CMakeLists.txt) with clang and runs each for N seconds (default 30)
# on a temporary copy of its seed corpus. Exits non-zero on any crash, leak, sanitizer
# report or invariant failure (the crashing input is kept and its path printed).
#
#   fuzz/run.sh [seconds]
#   SOFTRNIC_FUZZ_BUILD=/tmp/fz fuzz/run.sh 60     # build directory override
set -euo pipefail

secs=${1:-30}
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

# The top level includes fuzz/ behind -DSOFTRNIC_FUZZ=ON once integrated; until then
# fuzz/CMakeLists.txt is configured on its own.
if grep -q 'SOFTRNIC_FUZZ' "$root/CMakeLists.txt"; then
  src=$root
  build=${SOFTRNIC_FUZZ_BUILD:-$root/build/fuzz}
  extra=(-DSOFTRNIC_FUZZ=ON -DSOFTRNIC_BUILD_TESTS=OFF -DSOFTRNIC_BUILD_BENCH=OFF)
else
  src=$root/fuzz
  build=${SOFTRNIC_FUZZ_BUILD:-$root/build/fuzz-standalone}
  extra=()
  echo "note: top-level CMakeLists.txt has no SOFTRNIC_FUZZ option; configuring fuzz/ standalone"
fi

CC=clang CXX=clang++ cmake -S "$src" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  "${extra[@]}" >/dev/null
cmake --build "$build" --target fpdu_decoder_fuzz mpa_startup_fuzz mad_fuzz stats_fuzz \
  shm_ring_fuzz shm_hello_fuzz dat_conf_fuzz

work=$(mktemp -d "${TMPDIR:-/tmp}/softrnic-fuzz.XXXXXX")
failed=0
for pair in fpdu_decoder_fuzz:fpdu mpa_startup_fuzz:mpa mad_fuzz:mad stats_fuzz:stats \
  shm_ring_fuzz:shm_ring shm_hello_fuzz:shm_hello dat_conf_fuzz:dat_conf; do
  target=${pair%%:*}
  corpus=${pair##*:}
  exe=$(find "$build" -type f -name "$target" -perm -u+x | head -n 1)
  if [[ -z "$exe" ]]; then
    echo "error: $target was not built (is the compiler clang?)" >&2
    exit 2
  fi
  mkdir -p "$work/$corpus"
  cp "$root/fuzz/corpus/$corpus/"* "$work/$corpus/"
  echo "== $target: ${secs}s on $(ls "$work/$corpus" | wc -l) seeds"
  set +e
  "$exe" -max_total_time="$secs" -print_final_stats=1 -artifact_prefix="$work/$target-" \
    "$work/$corpus" >"$work/$target.log" 2>&1
  rc=$?
  set -e
  grep -E '^(#[0-9]+ +DONE|stat::number_of_executed_units|stat::average_exec_per_sec|stat::peak_rss_mb)' \
    "$work/$target.log" || true
  if [[ $rc -ne 0 ]]; then
    failed=1
    echo "FAIL: $target exited with $rc; log: $work/$target.log" >&2
    grep -E 'ERROR|invariant failed|SUMMARY|Test unit written' "$work/$target.log" >&2 || true
  else
    echo "ok: $target, no crashes"
  fi
done

if [[ $failed -eq 0 ]]; then
  rm -rf "$work"
else
  echo "artifacts kept in $work" >&2
fi
exit $failed
