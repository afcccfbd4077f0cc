#!/usr/bin/env bash
# Installs what Pushline's tests need on a fresh Debian machine (apt and PyPI packages), then
# builds the package and runs every test. Safe to run again: it installs only what is missing.
set -euo pipefail
cd "$(dirname "$0")/.."

missing=()
command -v pkg-config >/dev/null || missing+=(pkg-config)
command -v protoc >/dev/null || missing+=(protobuf-compiler)
command -v protoc-c >/dev/null || missing+=(protobuf-c-compiler)
dpkg -s libprotobuf-c-dev >/dev/null 2>&1 || missing+=(libprotobuf-c-dev)
dpkg -s zlib1g-dev >/dev/null 2>&1 || missing+=(zlib1g-dev)
dpkg -s libsqlite3-dev >/dev/null 2>&1 || missing+=(libsqlite3-dev)
command -v cc >/dev/null || missing+=(gcc)
if ((${#missing[@]})); then
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo=sudo
  echo "tools/test.sh: installing ${missing[*]}"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}"
fi
if ! python3 -c 'import google.protobuf' 2>/dev/null; then
  echo "tools/test.sh: installing Python protobuf"
  python3 -m pip install --quiet --disable-pip-version-check protobuf
fi

swift build
# One test at a time: the end-to-end tests run brokers, Python clients and C peers as real
# processes and the demo on the wall clock, and on a 2-core machine running them all at once
# starved each other for seconds (ping and demo timeouts). Serially the suite takes ~3 minutes.
swift test --no-parallel
# Then each fuzzer for 30 s (libFuzzer + AddressSanitizer): bad input must never trap a decoder
# or a connection's state machine. About 4 minutes, most of it the sanitized build.
bash tools/fuzz/smoke.sh
