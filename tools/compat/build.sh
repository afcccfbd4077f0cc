#!/usr/bin/env bash
# Builds the compatibility peers into OUTDIR: protoc-c's C for proto/, the protobuf-c harness
# linked against it, and a descriptor set for Google's Python protobuf. Quick and idempotent.
set -euo pipefail
out=${1:?usage: tools/compat/build.sh OUTDIR}
root=$(cd "$(dirname "$0")/../.." && pwd)
here="$root/tools/compat"

need() { command -v "$1" >/dev/null || { echo "build.sh: $1 is missing: apt-get install -y $2" >&2; exit 1; }; }
need protoc-c protobuf-c-compiler
need protoc protobuf-compiler
need pkg-config pkg-config
need cc gcc
pkg-config --exists libprotobuf-c || { echo "build.sh: libprotobuf-c is missing: apt-get install -y libprotobuf-c-dev" >&2; exit 1; }

mkdir -p "$out/gen"
protoc-c --c_out="$out/gen" -I"$root/proto" "$root"/proto/*.proto
protoc --include_imports --descriptor_set_out="$out/descriptors.pb" -I"$root/proto" "$root"/proto/*.proto
# shellcheck disable=SC2046
cc -O2 -Wall -Wextra -Werror -std=c11 -I"$out/gen" $(pkg-config --cflags libprotobuf-c) \
  -o "$out/pbc-harness" "$here/pbc_harness.c" "$out"/gen/*.pb-c.c $(pkg-config --libs libprotobuf-c) -lm
