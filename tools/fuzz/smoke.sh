#!/usr/bin/env bash
# A short run of each fuzzer, as part of the test command: builds them (libFuzzer and
# AddressSanitizer, release) and runs each for FUZZ_SECONDS (30 by default), seeded with the
# sample card. A trap, a sanitizer report or a broken invariant fails the run and leaves the
# input that caused it in tools/fuzz/crashes/ (ignored by git), to be turned into a
# regression test. Longer runs: see tools/fuzz/README.md.
set -euo pipefail
cd "$(dirname "$0")/../.."

seconds="${FUZZ_SECONDS:-30}"
scratch="$PWD/.build-fuzz"
swift build -c release --sanitize=fuzzer --sanitize=address -Xswiftc -sanitize=fuzzer \
  --package-path tools/fuzz --scratch-path "$scratch"

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
crashes="$PWD/tools/fuzz/crashes"
# First byte 0 picks TrackerCard (MessageRegistry.all[0]); the rest is the sample's bytes or JSON.
mkdir -p "$work/FuzzBinary" "$work/FuzzJSON" "$work/FuzzConnection"
{ printf '\0'; cat tools/samples/tracker-card.bin; } >"$work/FuzzBinary/tracker-card"
{ printf '\0'; cat tools/samples/tracker-card.json; } >"$work/FuzzJSON/tracker-card"

for fuzzer in FuzzBinary FuzzJSON FuzzConnection; do
  length=4096
  [ "$fuzzer" = FuzzConnection ] && length=512
  echo "tools/fuzz/smoke.sh: $fuzzer for ${seconds} s"
  if ! (cd "$work" && "$scratch/release/$fuzzer" -max_total_time="$seconds" -max_len="$length" \
    -timeout=10 -print_final_stats=1 "$work/$fuzzer" 2>"$work/$fuzzer.log"); then
    mkdir -p "$crashes"
    cp "$work"/crash-* "$work"/leak-* "$work"/timeout-* "$work"/oom-* "$crashes"/ 2>/dev/null || true
    tail -n 60 "$work/$fuzzer.log"
    echo "tools/fuzz/smoke.sh: $fuzzer failed; its input is in $crashes" >&2
    exit 1
  fi
  grep -E "^stat::number_of_executed_units" "$work/$fuzzer.log" | sed "s/^/  $fuzzer /"
done
