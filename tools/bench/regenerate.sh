#!/usr/bin/env bash
# Regenerates the peers' committed code from proto/tracker.proto. Run after a wire change; the
# test suite fails while the committed protoc-c output differs from what protoc-c generates.
#
#   Sources/ProtobufCPeer/{tracker.pb-c.c, include/tracker.pb-c.h}  protoc-c 1.4.1
#       (apt-get install -y protobuf-c-compiler libprotobuf-c-dev)
#   Sources/SwiftProtobufPeer/tracker.pb.swift                      protoc + protoc-gen-swift 1.39.0
#
# protoc-gen-swift must match the swift-protobuf the package links (1.39.0). The script uses
# $PROTOC_GEN_SWIFT, else /tmp/spb/.build/release/protoc-gen-swift, building it there first
# (outside the repository, several minutes) when it is missing:
#   git clone --branch 1.39.0 --depth 1 https://github.com/apple/swift-protobuf /tmp/spb
#   swift build -c release --product protoc-gen-swift --package-path /tmp/spb
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
swift_protobuf_version=1.39.0
plugin=${PROTOC_GEN_SWIFT:-/tmp/spb/.build/release/protoc-gen-swift}

if [ ! -x "$plugin" ]; then
  [ -z "${PROTOC_GEN_SWIFT:-}" ] || { echo "regenerate.sh: $plugin is not executable" >&2; exit 1; }
  [ -d /tmp/spb ] || git clone --quiet --branch "$swift_protobuf_version" --depth 1 https://github.com/apple/swift-protobuf /tmp/spb
  swift build -c release --product protoc-gen-swift --package-path /tmp/spb
fi
version=$("$plugin" --version)
[ "$version" = "protoc-gen-swift $swift_protobuf_version" ] || {
  echo "regenerate.sh: $plugin is '$version', want protoc-gen-swift $swift_protobuf_version" >&2
  exit 1
}

protoc-c --c_out="$here/Sources/ProtobufCPeer" -I"$root/proto" "$root/proto/tracker.proto"
mv "$here/Sources/ProtobufCPeer/tracker.pb-c.h" "$here/Sources/ProtobufCPeer/include/tracker.pb-c.h"
protoc --plugin=protoc-gen-swift="$plugin" --swift_out="$here/Sources/SwiftProtobufPeer" \
  --swift_opt=Visibility=Public -I"$root/proto" "$root/proto/tracker.proto"
echo "regenerated with $(protoc-c --version | head -1) and $version"
