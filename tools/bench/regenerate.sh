#!/usr/bin/env bash
# Regenerates the peers' code from proto/tracker.proto. Run after a wire change; the test
# suite fails while the committed protoc-c output differs from what protoc-c generates.
#   protoc-c: apt-get install -y protobuf-c-compiler
#   protoc-gen-swift: built once from swift-protobuf 1.39.0 outside the repo, e.g.
#     git clone https://github.com/apple/swift-protobuf /tmp/spb && git -C /tmp/spb checkout 1.39.0
#     swift build -c release --product protoc-gen-swift --package-path /tmp/spb
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
plugin=${PROTOC_GEN_SWIFT:-/tmp/spb/.build/release/protoc-gen-swift}

protoc-c --c_out="$here/Sources/ProtobufCPeer" -I"$root/proto" "$root/proto/tracker.proto"
mv "$here/Sources/ProtobufCPeer/tracker.pb-c.h" "$here/Sources/ProtobufCPeer/include/tracker.pb-c.h"
protoc --plugin=protoc-gen-swift="$plugin" --swift_out="$here/Sources/SwiftProtobufPeer" \
  --swift_opt=Visibility=Public -I"$root/proto" "$root/proto/tracker.proto"
