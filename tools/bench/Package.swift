// swift-tools-version: 6.1
// The codec benchmark: Pushline against swift-protobuf and protobuf-c on the same messages.
// A package of its own, so that the product's build and `swift test` never pay for the peers.
import PackageDescription

let package = Package(
  name: "PushlineBench",
  platforms: [.macOS(.v15)],
  dependencies: [
    .package(name: "Pushline", path: "../.."),
    .package(url: "https://github.com/apple/swift-protobuf", exact: "1.39.0"),
    .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
    .package(url: "https://github.com/ordo-one/malloc-interposer", exact: "1.6.1"),
    .package(url: "https://github.com/grpc/grpc-swift-2", exact: "2.4.3"),
    .package(url: "https://github.com/apple/swift-nio", from: "2.101.2"),
    .package(url: "https://github.com/grpc/grpc-swift-nio-transport", exact: "2.9.2"),
    .package(url: "https://github.com/apple/swift-metrics", from: "2.13.0"),
    .package(url: "https://github.com/swift-server/swift-prometheus", from: "2.4.1"),
  ],
  targets: [
    // swift-protobuf's generated code for proto/tracker.proto, committed (regenerate.sh).
    .target(name: "SwiftProtobufPeer", dependencies: [.product(name: "SwiftProtobuf", package: "swift-protobuf")]),
    // protoc-c's output for proto/tracker.proto, committed (regenerate.sh), plus a small shim.
    .target(name: "ProtobufCPeer", linkerSettings: [.linkedLibrary("protobuf-c")]),
    .executableTarget(
      name: "pushline-bench",
      dependencies: [
        .product(name: "PushlineSchema", package: "Pushline"),
        .product(name: "PushlineWire", package: "Pushline"),
        .product(name: "PushlineRPC", package: "Pushline"),
        .product(name: "PushlineRPCNIO", package: "Pushline"),
        .product(name: "PushlineClient", package: "Pushline"),
        .product(name: "PushlineBroker", package: "Pushline"),
        .product(name: "PushlineCLI", package: "Pushline"),
        .product(name: "CoreMetrics", package: "swift-metrics"),
        .product(name: "Prometheus", package: "swift-prometheus"),
        .product(name: "GRPCCore", package: "grpc-swift-2"),
        .product(name: "NIOCore", package: "swift-nio"),
        .product(name: "NIOPosix", package: "swift-nio"),
        .product(name: "GRPCNIOTransportHTTP2", package: "grpc-swift-nio-transport"),
        .product(name: "SwiftProtobuf", package: "swift-protobuf"),
        .product(name: "ArgumentParser", package: "swift-argument-parser"),
        .product(name: "MallocInterposerSwift", package: "malloc-interposer"),
        "SwiftProtobufPeer", "ProtobufCPeer",
      ]
    ),
  ],
  swiftLanguageModes: [.v6]
)
