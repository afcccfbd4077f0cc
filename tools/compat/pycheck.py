#!/usr/bin/env python3
"""Google's protobuf (upb) as a third opinion on Pushline's encodings.

usage: pycheck.py DESCRIPTORS CORPUS

DESCRIPTORS is the FileDescriptorSet tools/compat/build.sh writes. CORPUS holds records
(little-endian): u16 nameLength, name, u32 length, bytes, u32 jsonLength, json — Pushline's
encoding of a message and Pushline's canonical JSON for it. For every record the message must
parse, re-serialize to exactly the same bytes, and map to the same JSON as Pushline's.
Exits 1 on any mismatch.
"""
import json
import math
import struct
import sys

from google.protobuf import descriptor_pb2, descriptor_pool, json_format, message_factory


def load_classes(path):
    files = descriptor_pb2.FileDescriptorSet()
    with open(path, "rb") as handle:
        files.ParseFromString(handle.read())
    pool = descriptor_pool.DescriptorPool()
    for file in files.file:
        pool.Add(file)
    classes = {}
    for file in files.file:
        for name in file.message_type:
            full = f"{file.package}.{name.name}"
            classes[full] = message_factory.GetMessageClass(pool.FindMessageTypeByName(full))
    return classes


def records(data):
    offset = 0
    while offset < len(data):
        (name_length,) = struct.unpack_from("<H", data, offset)
        offset += 2
        name = data[offset:offset + name_length].decode()
        offset += name_length
        (length,) = struct.unpack_from("<I", data, offset)
        offset += 4
        payload = data[offset:offset + length]
        offset += length
        (json_length,) = struct.unpack_from("<I", data, offset)
        offset += 4
        text = data[offset:offset + json_length].decode()
        offset += json_length
        yield name, payload, text


def as_float32(value):
    return struct.unpack("<f", struct.pack("<f", value))[0]


def same(ours, theirs, descriptor, path=""):
    """Structural equality of two JSON values of a field, or a string saying where they differ."""
    if isinstance(ours, dict) and isinstance(theirs, dict):
        if ours.keys() != theirs.keys():
            return f"{path}: fields {sorted(ours.keys() ^ theirs.keys())} present on one side only"
        for key in ours:
            field = descriptor.fields_by_camelcase_name.get(key) if descriptor else None
            inner = field.message_type if field is not None else None
            is_float = field is not None and field.type == field.TYPE_FLOAT
            problem = same_value(ours[key], theirs[key], inner, is_float, f"{path}.{key}")
            if problem:
                return problem
        return None
    return f"{path}: {ours!r} != {theirs!r}"


def same_value(ours, theirs, descriptor, is_float, path):
    if isinstance(ours, list) and isinstance(theirs, list):
        if len(ours) != len(theirs):
            return f"{path}: {len(ours)} elements != {len(theirs)}"
        for index, (a, b) in enumerate(zip(ours, theirs)):
            problem = same_value(a, b, descriptor, is_float, f"{path}[{index}]")
            if problem:
                return problem
        return None
    if isinstance(ours, dict):
        return same(ours, theirs, descriptor, path)
    if isinstance(ours, bool) or isinstance(theirs, bool):
        return None if ours is theirs else f"{path}: {ours!r} != {theirs!r}"
    if isinstance(ours, (int, float)) and isinstance(theirs, (int, float)):
        a, b = float(ours), float(theirs)
        if is_float:
            a, b = as_float32(a), as_float32(b)
        if a == b and math.copysign(1, a) == math.copysign(1, b):
            return None
        return f"{path}: {ours!r} != {theirs!r}"
    return None if ours == theirs else f"{path}: {ours!r} != {theirs!r}"


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    classes = load_classes(sys.argv[1])
    with open(sys.argv[2], "rb") as handle:
        data = handle.read()
    count = 0
    mismatches = []
    for index, (name, payload, text) in enumerate(records(data)):
        count += 1
        message = classes[name]()
        try:
            message.ParseFromString(payload)
        except Exception as error:  # noqa: BLE001 - report any parse failure
            mismatches.append(f"#{index} {name}: does not parse: {error}\n  {payload.hex()}")
            continue
        again = message.SerializeToString()
        if again != payload:
            first = next((i for i, (a, b) in enumerate(zip(again, payload)) if a != b), min(len(again), len(payload)))
            mismatches.append(f"#{index} {name}: re-serialized bytes differ at offset {first}\n"
                              f"  pushline: {payload.hex()}\n  upb:      {again.hex()}")
            continue
        problem = same(json.loads(text), json_format.MessageToDict(message), message.DESCRIPTOR, name)
        if problem:
            mismatches.append(f"#{index} {name}: JSON differs: {problem}")
    print(f"pycheck: {count} messages, {len(mismatches)} mismatches")
    for mismatch in mismatches[:10]:
        print(mismatch)
    sys.exit(1 if mismatches or count == 0 else 0)


if __name__ == "__main__":
    main()
