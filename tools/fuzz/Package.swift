// swift-tools-version: 6.1
// libFuzzer entry points for Pushline's decoders; see README.md for how to build and run them.
import PackageDescription

let package = Package(
  name: "PushlineFuzz",
  platforms: [.macOS(.v15)],
  dependencies: [.package(name: "Pushline", path: "../..")],
  targets: [
    .executableTarget(
      name: "FuzzBinary",
      dependencies: [
        .product(name: "PushlineWire", package: "Pushline"),
        .product(name: "PushlineSchema", package: "Pushline"),
        .product(name: "PushlineText", package: "Pushline"),
      ]
    ),
    .executableTarget(
      name: "FuzzConnection",
      dependencies: [.product(name: "PushlineRPCTesting", package: "Pushline")]
    ),
    .executableTarget(
      name: "FuzzJSON",
      dependencies: [
        .product(name: "PushlineSchema", package: "Pushline"),
        .product(name: "PushlineText", package: "Pushline"),
      ]
    ),
  ],
  swiftLanguageModes: [.v6]
)
