// swift-tools-version: 6.1
import PackageDescription

let strictSettings: [SwiftSetting] = [
  .enableUpcomingFeature("InternalImportsByDefault"),
  .enableUpcomingFeature("ExistentialAny"),
  .enableUpcomingFeature("MemberImportVisibility"),
]

let package = Package(
  name: "Pushline",
  platforms: [.macOS(.v15)],
  products: [
    .library(name: "PushlineWire", targets: ["PushlineWire"]),
    .library(name: "PushlineSchema", targets: ["PushlineSchema"]),
    .library(name: "PushlineRPC", targets: ["PushlineRPC"]),
    .library(name: "PushlineRPCNIO", targets: ["PushlineRPCNIO"]),
    .library(name: "PushlineBroker", targets: ["PushlineBroker"]),
    .library(name: "PushlineClient", targets: ["PushlineClient"]),
    .library(name: "PushlineText", targets: ["PushlineText"]),
    .library(name: "PushlineRPCTesting", targets: ["PushlineRPCTesting"]),
    .library(name: "PushlineTesting", targets: ["PushlineTesting"]),
    .library(name: "PushlineCLI", targets: ["PushlineCLI"]),
    .executable(name: "pushline", targets: ["pushline"]),
  ],
  dependencies: [
    .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
    .package(url: "https://github.com/apple/swift-nio", from: "2.101.2"),
    .package(url: "https://github.com/groue/GRDB.swift", from: "7.10.0"),
    .package(url: "https://github.com/vapor/jwt-kit", from: "5.8.0"),
    .package(url: "https://github.com/apple/swift-metrics", from: "2.13.0"),
    .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
    .package(url: "https://github.com/swift-server/swift-prometheus", from: "2.4.1"),
    .package(url: "https://github.com/swift-server/swift-service-lifecycle", from: "2.13.0"),
  ],
  targets: [
    .target(name: "PushlineWire", swiftSettings: strictSettings),
    .target(name: "PushlineSchema", dependencies: ["PushlineWire"], swiftSettings: strictSettings),
    .systemLibrary(name: "CZlib", pkgConfig: "zlib", providers: [.apt(["zlib1g-dev"])]),
    // The messages as text — protobuf's canonical JSON, read and written, and a field-per-line
    // dump — for the CLI's codec commands and the fuzzers, with nothing else to build.
    .target(name: "PushlineText", dependencies: ["PushlineWire", "PushlineSchema"], swiftSettings: strictSettings),
    .target(name: "PushlineRPC", dependencies: ["PushlineWire", "PushlineSchema"], swiftSettings: strictSettings),
    // Harnesses that need the RPC layer alone (the connection fuzzer builds nothing more).
    .target(name: "PushlineRPCTesting", dependencies: ["PushlineWire", "PushlineSchema", "PushlineRPC"], swiftSettings: strictSettings),
    .target(
      name: "PushlineRPCNIO",
      dependencies: [
        "PushlineRPC", "PushlineSchema", "PushlineWire", "CZlib",
        .product(name: "NIOCore", package: "swift-nio"),
        .product(name: "NIOPosix", package: "swift-nio"),
        .product(name: "CoreMetrics", package: "swift-metrics"),
        .product(name: "Logging", package: "swift-log"),
      ],
      swiftSettings: strictSettings
    ),
    .target(
      name: "PushlineBroker",
      dependencies: [
        "PushlineRPC", "PushlineSchema", "PushlineWire",
        .product(name: "GRDB", package: "GRDB.swift"),
        .product(name: "GRDBSQLite", package: "GRDB.swift"),
        .product(name: "JWTKit", package: "jwt-kit"),
        .product(name: "CoreMetrics", package: "swift-metrics"),
        .product(name: "Logging", package: "swift-log"),
      ],
      swiftSettings: strictSettings
    ),
    .target(
      name: "PushlineClient",
      dependencies: [
        "PushlineRPC", "PushlineSchema", "PushlineWire",
        .product(name: "GRDB", package: "GRDB.swift"),
      ],
      swiftSettings: strictSettings
    ),
    .target(
      name: "PushlineTesting",
      dependencies: [
        "PushlineWire", "PushlineSchema", "PushlineRPC", "PushlineRPCNIO", "PushlineBroker", "PushlineClient",
        .product(name: "NIOCore", package: "swift-nio"),
        .product(name: "NIOPosix", package: "swift-nio"),
        .product(name: "Logging", package: "swift-log"),
      ],
      swiftSettings: strictSettings),
    .target(
      name: "PushlineCLI",
      dependencies: [
        "PushlineWire",
        "PushlineSchema",
        "PushlineText",
        "PushlineRPC",
        "PushlineRPCNIO",
        "PushlineBroker",
        "PushlineClient",
        .product(name: "ArgumentParser", package: "swift-argument-parser"),
        .product(name: "NIOCore", package: "swift-nio"),
        .product(name: "NIOPosix", package: "swift-nio"),
        .product(name: "NIOHTTP1", package: "swift-nio"),
        .product(name: "CoreMetrics", package: "swift-metrics"),
        .product(name: "Logging", package: "swift-log"),
        .product(name: "Prometheus", package: "swift-prometheus"),
        .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
        .product(name: "UnixSignals", package: "swift-service-lifecycle"),
      ],
      swiftSettings: strictSettings
    ),
    .executableTarget(
      name: "pushline",
      dependencies: ["PushlineCLI", .product(name: "ArgumentParser", package: "swift-argument-parser")],
      swiftSettings: strictSettings
    ),
    .testTarget(name: "PushlineWireTests", dependencies: ["PushlineWire"], swiftSettings: strictSettings),
    .testTarget(
      name: "PushlineSchemaTests",
      dependencies: ["PushlineWire", "PushlineSchema", "PushlineTesting", "PushlineText"],
      resources: [.copy("Fixtures")],
      swiftSettings: strictSettings
    ),
    .testTarget(
      name: "PushlineRPCTests", dependencies: ["PushlineRPC", "PushlineRPCTesting", "PushlineSchema", "PushlineTesting", "PushlineWire"],
      swiftSettings: strictSettings
    ),
    .testTarget(
      name: "PushlineRPCNIOTests",
      dependencies: [
        "PushlineRPC", "PushlineRPCNIO", "PushlineSchema", "PushlineTesting", "PushlineWire",
        .product(name: "NIOCore", package: "swift-nio"),
        .product(name: "NIOPosix", package: "swift-nio"),
        .product(name: "NIOEmbedded", package: "swift-nio"),
        .product(name: "CoreMetrics", package: "swift-metrics"),
        .product(name: "MetricsTestKit", package: "swift-metrics"),
        .product(name: "Logging", package: "swift-log"),
      ],
      swiftSettings: strictSettings
    ),
    .testTarget(
      name: "PushlineBrokerTests",
      dependencies: [
        "PushlineBroker", "PushlineRPC", "PushlineRPCNIO", "PushlineSchema", "PushlineTesting", "PushlineWire",
        .product(name: "GRDB", package: "GRDB.swift"),
        .product(name: "JWTKit", package: "jwt-kit"),
        .product(name: "NIOCore", package: "swift-nio"),
        .product(name: "MetricsTestKit", package: "swift-metrics"),
      ],
      swiftSettings: strictSettings
    ),
    .testTarget(
      name: "PushlineClientTests",
      dependencies: [
        "PushlineClient", "PushlineBroker", "PushlineCLI", "PushlineRPC", "PushlineRPCNIO", "PushlineSchema", "PushlineTesting",
        "PushlineWire",
        .product(name: "GRDB", package: "GRDB.swift"),
        .product(name: "NIOCore", package: "swift-nio"),
      ],
      swiftSettings: strictSettings
    ),
    .testTarget(
      name: "PushlineCompatTests",
      dependencies: ["PushlineWire", "PushlineSchema", "PushlineTesting", "PushlineText"],
      swiftSettings: strictSettings
    ),
    .testTarget(
      name: "PushlineCLITests",
      dependencies: [
        "PushlineWire", "PushlineSchema", "PushlineText", "PushlineRPC", "PushlineRPCNIO", "PushlineBroker", "PushlineClient", "PushlineCLI",
        .product(name: "ArgumentParser", package: "swift-argument-parser"),
        .product(name: "Logging", package: "swift-log"),
        .product(name: "NIOCore", package: "swift-nio"),
        .product(name: "NIOPosix", package: "swift-nio"),
        .product(name: "Prometheus", package: "swift-prometheus"),
        .product(name: "ServiceLifecycleTestKit", package: "swift-service-lifecycle"),
      ],
      swiftSettings: strictSettings
    ),
  ],
  swiftLanguageModes: [.v6]
)
