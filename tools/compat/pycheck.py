#!/usr/bin/env python3
"""Google's protobuf (upb) as a third opinion on Pushline's encodings.

usage: pycheck.py DESCRIPTORS CORPUS

DESCRIPTORS is the FileDescriptorSet tools/compat/build.sh writes. CORPUS holds records
(little-endian): u16 nameLength, name, u32 length, bytes, u32 jsonLength, json, where bytes
are Pushline's encoding of a message of the named type and json is Pushline's canonical JSON
for it. For every record the message must parse (with its required fields), re-serialize to
exactly the same bytes, and map (json_format.MessageToDict, default options) to the same JSON.

Prints `pycheck: N messages, M mismatches` and the first 10 mismatches. Exit status: 0 when
everything agrees, 1 on any mismatch, 2 on bad usage or an unreadable corpus.
"""
import json
import math
import struct
import sys
from fractions import Fraction

try:
    from google.protobuf import descriptor_pb2, descriptor_pool, json_format, message_factory
    from google.protobuf.descriptor import FieldDescriptor
except ImportError:
    sys.exit("pycheck: the Python package protobuf is missing: pip install protobuf")

SHOWN_MISMATCHES = 10
DIFFERENCES_PER_MESSAGE = 5
FULL_HEX_LIMIT = 1024  # bytes; longer encodings are shown around the first difference


def load_classes(path):
    """Message classes by full name, for every message (nested ones too) of the descriptor set."""
    files = descriptor_pb2.FileDescriptorSet()
    with open(path, "rb") as handle:
        files.ParseFromString(handle.read())
    pool = descriptor_pool.DescriptorPool()
    for file in files.file:
        pool.Add(file)
    classes = {}

    def add(descriptor):
        classes[descriptor.full_name] = message_factory.GetMessageClass(descriptor)
        for nested in descriptor.nested_types:
            add(nested)

    for file in files.file:
        for message in pool.FindFileByName(file.name).message_types_by_name.values():
            add(message)
    return classes


class CorpusError(Exception):
    pass


def records(data):
    offset = 0

    def take(count, what):
        nonlocal offset
        if len(data) - offset < count:
            raise CorpusError(f"corpus truncated in the {what} of record at offset {offset}")
        chunk = data[offset:offset + count]
        offset += count
        return chunk

    while offset < len(data):
        (name_length,) = struct.unpack("<H", take(2, "name length"))
        name = take(name_length, "name").decode("utf-8", "replace")
        (length,) = struct.unpack("<I", take(4, "length"))
        payload = take(length, "bytes")
        (json_length,) = struct.unpack("<I", take(4, "JSON length"))
        text = take(json_length, "JSON")
        yield name, payload, text


# ---- where in the encoding a difference is ---------------------------------------------------

def read_varint(data, offset):
    value = shift = 0
    while True:
        byte = data[offset]
        offset += 1
        value |= (byte & 0x7F) << shift
        shift += 7
        if byte < 0x80:
            return value, offset


def locate(data, offset, descriptor):
    """A path like `payload(4).tiers(11)[2].reward(2)` to the field of `data` holding byte `offset`."""
    try:
        position, counts = 0, {}
        while position < len(data):
            start = position
            key, position = read_varint(data, position)
            number, wire_type = key >> 3, key & 7
            body = position
            if wire_type == 0:
                _, position = read_varint(data, position)
            elif wire_type == 1:
                position += 8
            elif wire_type == 5:
                position += 4
            elif wire_type == 2:
                length, body = read_varint(data, position)
                position = body + length
            else:
                return f"field {number} (wire type {wire_type})"
            field = descriptor.fields_by_number.get(number) if descriptor else None
            index = counts.get(number, 0)
            counts[number] = index + 1
            if start <= offset < position:
                if field is None:
                    return f"unknown field {number}"
                step = f"{field.json_name}({number})" + (f"[{index}]" if field.is_repeated else "")
                if field.type == FieldDescriptor.TYPE_MESSAGE and wire_type == 2 and offset >= body:
                    return step + "." + locate(data[body:position], offset - body, field.message_type)
                return step
        return "the end of the message"
    except (IndexError, ValueError):
        return "a malformed spot"


def hex_view(data, offset):
    if len(data) <= FULL_HEX_LIMIT:
        return data.hex()
    start, end = max(0, offset - 256), min(len(data), offset + 256)
    return f"(bytes {start}..{end} of {len(data)}) " + data[start:end].hex()


# ---- JSON comparison ------------------------------------------------------------------------

def parse_json(text):
    """Strict JSON: no NaN/Infinity tokens (canonical JSON spells them as strings), no duplicate
    keys, and `-0` kept as a negative zero."""

    def no_constants(token):
        raise ValueError(f"{token} is not JSON (the canonical form is the string \"{token}\")")

    def no_duplicates(pairs):
        result = {}
        for key, value in pairs:
            if key in result:
                raise ValueError(f"duplicate key {key!r}")
            result[key] = value
        return result

    def integer(token):
        value = int(token)
        return -0.0 if value == 0 and token.startswith("-") else value

    return json.loads(text, parse_constant=no_constants, object_pairs_hook=no_duplicates, parse_int=integer)


def as_float32(value):
    try:
        return struct.unpack("<f", struct.pack("<f", value))[0]
    except OverflowError:
        return value


def numbers_equal(ours, theirs, is_float32):
    if isinstance(ours, int) and isinstance(theirs, int):
        return ours == theirs
    try:
        a, b = float(ours), float(theirs)
    except OverflowError:  # an integer beyond the double range: compare exactly
        return Fraction(ours) == Fraction(theirs)
    if is_float32:
        a, b = as_float32(a), as_float32(b)
    if math.isnan(a) or math.isnan(b):
        return math.isnan(a) and math.isnan(b)
    return a == b and math.copysign(1, a) == math.copysign(1, b)


def compare(ours, theirs, descriptor, path, differences):
    """Appends to `differences` every place (up to a few) where two JSON values differ.

    `descriptor` is the message descriptor when the values are objects of a message, else the
    field descriptor of the values (or None)."""
    if len(differences) >= DIFFERENCES_PER_MESSAGE:
        return
    where = path or "(top level)"
    if isinstance(ours, dict) and isinstance(theirs, dict):
        fields = {field.json_name: field for field in descriptor.fields} if descriptor is not None else {}
        for key in sorted(ours.keys() | theirs.keys()):
            inner = f"{path}.{key}" if path else key
            if key not in theirs:
                differences.append(f"{inner}: only in Pushline's JSON: {ours[key]!r}")
            elif key not in ours:
                differences.append(f"{inner}: missing from Pushline's JSON (upb has {theirs[key]!r})")
            else:
                field = fields.get(key)
                if field is not None and field.type == FieldDescriptor.TYPE_MESSAGE:
                    compare_field(ours[key], theirs[key], field, field.message_type, inner, differences)
                else:
                    compare_field(ours[key], theirs[key], field, None, inner, differences)
        return
    if isinstance(ours, list) and isinstance(theirs, list):
        if len(ours) != len(theirs):
            differences.append(f"{where}: {len(ours)} elements in Pushline's JSON, {len(theirs)} in upb's")
        for index, (a, b) in enumerate(zip(ours, theirs)):
            compare(a, b, descriptor, f"{path}[{index}]", differences)
        return
    differences.append(f"{where}: Pushline {ours!r} != upb {theirs!r}")


def compare_field(ours, theirs, field, message_type, path, differences):
    if isinstance(ours, list) and isinstance(theirs, list):
        if len(ours) != len(theirs):
            differences.append(f"{path}: {len(ours)} elements in Pushline's JSON, {len(theirs)} in upb's")
        for index, (a, b) in enumerate(zip(ours, theirs)):
            compare_field(a, b, field, message_type, f"{path}[{index}]", differences)
        return
    if message_type is not None:
        compare(ours, theirs, message_type, path, differences)
        return
    if isinstance(ours, bool) or isinstance(theirs, bool):
        same = ours is theirs
    elif isinstance(ours, (int, float)) and isinstance(theirs, (int, float)):
        same = numbers_equal(ours, theirs, field is not None and field.type == FieldDescriptor.TYPE_FLOAT)
    else:
        same = type(ours) is type(theirs) and ours == theirs
    if not same and len(differences) < DIFFERENCES_PER_MESSAGE:
        differences.append(f"{path}: Pushline {ours!r} != upb {theirs!r}")


# ---- one record -----------------------------------------------------------------------------

def check(classes, index, name, payload, text):
    """None when upb agrees with Pushline on this record, else a description of the mismatch."""
    head = f"#{index} {name}"
    message_class = classes.get(name)
    if message_class is None:
        return f"{head}: no such message type in the descriptor set"
    message = message_class()
    try:
        message.ParseFromString(payload)
    except Exception as error:  # noqa: BLE001 - any parse failure is a finding
        return f"{head}: upb does not parse Pushline's bytes: {error}\n  pushline: {hex_view(payload, 0)}"
    if not message.IsInitialized():
        return (f"{head}: missing required fields {message.FindInitializationErrors()}\n"
                f"  pushline: {hex_view(payload, 0)}")
    again = message.SerializeToString()
    if again != payload:
        first = next((i for i, (a, b) in enumerate(zip(again, payload)) if a != b), min(len(again), len(payload)))
        return (f"{head}: upb re-serializes differently, first at offset {first} "
                f"(Pushline {len(payload)} bytes, upb {len(again)}; in {locate(payload, first, message.DESCRIPTOR)})\n"
                f"  pushline: {hex_view(payload, first)}\n  upb:      {hex_view(again, first)}")
    try:
        ours = parse_json(text.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as error:
        return f"{head}: Pushline's JSON is not valid JSON: {error}\n  {text[:400]!r}"
    theirs = json_format.MessageToDict(message)
    differences = []
    compare(ours, theirs, message.DESCRIPTOR, "", differences)
    if differences:
        return f"{head}: JSON differs:\n" + "\n".join(f"  {difference}" for difference in differences)
    return None


def main():
    if len(sys.argv) != 3:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    try:
        classes = load_classes(sys.argv[1])
        with open(sys.argv[2], "rb") as handle:
            data = handle.read()
    except Exception as error:  # noqa: BLE001
        print(f"pycheck: {error}", file=sys.stderr)
        sys.exit(2)
    count = 0
    mismatches = []
    try:
        for index, (name, payload, text) in enumerate(records(data)):
            count += 1
            problem = check(classes, index, name, payload, text)
            if problem:
                mismatches.append(problem)
    except CorpusError as error:
        print(f"pycheck: {error}", file=sys.stderr)
        sys.exit(2)
    print(f"pycheck: {count} messages, {len(mismatches)} mismatches")
    for mismatch in mismatches[:SHOWN_MISMATCHES]:
        print(mismatch)
    sys.exit(1 if mismatches else 0)


if __name__ == "__main__":
    main()
