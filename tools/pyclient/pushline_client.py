#!/usr/bin/env python3
"""An independent Pushline client, written from docs/PROTOCOL.md and proto/*.proto alone.

Library: `Connection` speaks the RPC layer of PROTOCOL.md section 2 (preface, handshake,
frames, unary, server-streaming and pipelined calls, per-message deflate, PING/PONG, GOAWAY);
`TopicCopy` applies TopicUpdates following the client rules of section 3.3.

CLI:
    pushline_client.py health HOST:PORT [--service NAME]
    pushline_client.py publish HOST:PORT --token T --topic X (--card-json '{...}' ... | --remove ID ... | < cards) [--stream]
    pushline_client.py subscribe HOST:PORT --token T --topic X [--epoch E --offset O] [--count N]
    pushline_client.py get-cards HOST:PORT --token T --topic X

Dependencies: Python 3, Google's `protobuf` package, `protoc` (to build the message classes
from proto/ at run time, unless --descriptors names a FileDescriptorSet).
"""
from __future__ import annotations

import argparse
import json
import os
import select
import socket
import struct
import subprocess
import sys
import tempfile
import time
import zlib

try:
    from google.protobuf import descriptor_pb2, descriptor_pool, json_format, message_factory
except ImportError:  # pragma: no cover
    sys.exit("pushline_client: the Python package protobuf is missing: pip install protobuf")

# --- Constants from docs/PROTOCOL.md ------------------------------------------------------

MAGIC = b"PUSHLINE"  # 2.1
VERSION = 1  # 2.1: this document describes version 1
FRAME_HEADER = 9  # 2.2
MAX_FRAME_LIMIT = (1 << 24) - 1  # 2.2: a 24-bit length

# 2.3 frame kinds
HANDSHAKE, CALL_START, MESSAGE, HALF_CLOSE, STATUS, CANCEL, PING, PONG, GOAWAY = range(9)
KIND_NAMES = ["HANDSHAKE", "CALL_START", "MESSAGE", "HALF_CLOSE", "STATUS", "CANCEL", "PING", "PONG", "GOAWAY"]

# Protocol defaults for absent Limits values (2.2: frame 1 MiB; 3.3: message 4 MiB; the 2.8
# transcript announces 100 calls).
DEFAULT_MAX_FRAME = 1 << 20
CONTINUES = 0x01  # MESSAGE flag: the message continues in the call's next MESSAGE frame (2.3)
DEFAULT_MAX_MESSAGE = 4 << 20
DEFAULT_MAX_CALLS = 100

COMPRESSION_THRESHOLD = 1024  # 2.9: every message of 1 KiB or more
IDENTITY, DEFLATE = 0, 1  # rpc.proto Compression

CLIENT_KEEPALIVE_SECONDS = 20.0  # 2.7
CLIENT_KEEPALIVE_TIMEOUT_SECONDS = 60.0  # 2.7

# gRPC status codes (2.5.3)
STATUS_NAMES = [
    "OK", "CANCELLED", "UNKNOWN", "INVALID_ARGUMENT", "DEADLINE_EXCEEDED", "NOT_FOUND",
    "ALREADY_EXISTS", "PERMISSION_DENIED", "RESOURCE_EXHAUSTED", "FAILED_PRECONDITION",
    "ABORTED", "OUT_OF_RANGE", "UNIMPLEMENTED", "INTERNAL", "UNAVAILABLE", "DATA_LOSS",
    "UNAUTHENTICATED",
]
OK, CANCELLED, DEADLINE_EXCEEDED, RESOURCE_EXHAUSTED, INTERNAL, UNAVAILABLE = 0, 1, 4, 8, 13, 14


def status_name(code: int) -> str:
    return STATUS_NAMES[code] if 0 <= code < len(STATUS_NAMES) else f"CODE_{code}"


# Methods (2.5, 3)
HEALTH_CHECK = "/pushline.Health/Check"
PUBLISH = "/pushline.Publisher/Publish"
PUBLISH_STREAM = "/pushline.Publisher/PublishStream"
SUBSCRIBE = "/pushline.Tracker/Subscribe"
GET_CARDS = "/pushline.Tracker/GetCards"

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))

# --- Message classes ----------------------------------------------------------------------


class Messages:
    """Message classes by short name, built at run time from a FileDescriptorSet."""

    def __init__(self, descriptor_set_path: str | None = None, proto_dir: str | None = None):
        data = self._descriptor_set(descriptor_set_path, proto_dir or os.path.join(REPO, "proto"))
        files = descriptor_pb2.FileDescriptorSet()
        files.ParseFromString(data)
        pool = descriptor_pool.DescriptorPool()
        for file in files.file:
            pool.Add(file)
        self.by_full_name = {}
        for file in files.file:
            for message in file.message_type:
                full = f"{file.package}.{message.name}" if file.package else message.name
                self.by_full_name[full] = message_factory.GetMessageClass(pool.FindMessageTypeByName(full))
        self.pool = pool

    @staticmethod
    def _descriptor_set(path, proto_dir) -> bytes:
        if path:
            with open(path, "rb") as handle:
                return handle.read()
        protos = sorted(os.path.join(proto_dir, name) for name in os.listdir(proto_dir) if name.endswith(".proto"))
        with tempfile.TemporaryDirectory(prefix="pushline-pyclient-") as directory:
            out = os.path.join(directory, "descriptors.pb")
            try:
                subprocess.run(
                    ["protoc", "--include_imports", f"--descriptor_set_out={out}", f"-I{proto_dir}", *protos],
                    check=True, capture_output=True)
            except FileNotFoundError:
                sys.exit("pushline_client: protoc is missing (apt-get install protobuf-compiler), or pass --descriptors")
            except subprocess.CalledProcessError as error:
                sys.exit(f"pushline_client: protoc failed: {error.stderr.decode(errors='replace')}")
            with open(out, "rb") as handle:
                return handle.read()

    def __getattr__(self, name):
        for package in ("pushline.rpc", "pushline.broker", "pushline.tracker", "pushline.onboarding"):
            cls = self.__dict__.get("by_full_name", {}).get(f"{package}.{name}")
            if cls is not None:
                return cls
        raise AttributeError(name)


# --- Errors -------------------------------------------------------------------------------


class PushlineError(Exception):
    pass


class ProtocolError(PushlineError):
    """The peer broke the protocol; the connection is closed."""


class RPCError(PushlineError):
    """A call ended with a non-OK STATUS (or the equivalent decided locally)."""

    def __init__(self, code: int, message: str = "", retry_after_millis: int | None = None, metadata=()):
        self.code = code
        self.code_name = status_name(code)
        self.message = message
        self.retry_after_millis = retry_after_millis
        self.metadata = list(metadata)
        text = f"{self.code_name} ({code})"
        if message:
            text += f": {message}"
        if retry_after_millis is not None:
            text += f" [retryAfterMillis={retry_after_millis}]"
        super().__init__(text)

    def to_dict(self):
        result = {"code": self.code, "codeName": self.code_name, "message": self.message}
        if self.retry_after_millis is not None:
            result["retryAfterMillis"] = self.retry_after_millis
        return result


class GoAwayReceived(RPCError):
    """The server sent GOAWAY and this call is not among those it still serves."""


# --- The connection -----------------------------------------------------------------------


class _Call:
    def __init__(self, call_id: int, method: str):
        self.id = call_id
        self.method = method
        self.messages: list[bytes] = []  # decoded (inflated) response messages not yet consumed
        self.status = None  # CallStatus once ended
        self.error: RPCError | None = None  # ended locally (GOAWAY, connection lost, bad message)
        self.deadline: float | None = None
        self.unfinished: bytearray | None = None  # a message whose MESSAGE frames are still arriving (2.3)

    @property
    def ended(self):
        return self.status is not None or self.error is not None


class Connection:
    """One Pushline RPC connection (PROTOCOL.md section 2), blocking and single-threaded.

    Frames for every call are read by whichever call is waiting; each call keeps its own
    queue, so a unary call can run while a stream is open.
    """

    def __init__(self, host: str, port: int, token: str | None = None, *, messages: Messages,
                 compressions=(DEFLATE, IDENTITY), max_frame_size=DEFAULT_MAX_FRAME,
                 max_message_size=DEFAULT_MAX_MESSAGE, max_concurrent_calls=DEFAULT_MAX_CALLS,
                 user_agent="pushline-python", connect_timeout=10.0, log=None):
        self.m = messages
        self.log = log  # a callable taking a line, or None
        self.token = token
        self.compressions = list(compressions)
        self.announced = {"frame": max_frame_size, "message": max_message_size, "calls": max_concurrent_calls}
        self.sock = socket.create_connection((host, port), timeout=connect_timeout)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.buffer = bytearray()
        self.calls: dict[int, _Call] = {}
        self.next_call_id = 1
        self.goaway = None
        self.closed = False
        self.send_failed = False
        self.last_sent = self.last_received = time.monotonic()
        self.server_hello = None
        self.compression = IDENTITY
        self.limits = dict(self.announced)
        self.keepalive = CLIENT_KEEPALIVE_SECONDS
        try:
            self._handshake(user_agent)
        except BaseException:
            self.close()
            raise

    # -- plumbing --

    def _trace(self, text):
        if self.log:
            self.log(text)

    def _send(self, data: bytes):
        if self.closed or self.send_failed:
            raise RPCError(UNAVAILABLE, "connection closed")
        try:
            self.sock.sendall(data)
        except OSError as error:
            self.send_failed = True
            self._drain()  # a GOAWAY the server sent before closing says why
            self._lost(f"send failed: {error}")
            if self.goaway is not None:
                retry = self.goaway.retryAfterMillis if self.goaway.HasField("retryAfterMillis") else None
                raise GoAwayReceived(UNAVAILABLE, f"the server sent GOAWAY ({self.goaway.message}): retry on a new connection", retry) from None
            raise RPCError(UNAVAILABLE, f"connection lost: {error}") from None
        self.last_sent = time.monotonic()

    def _send_frame(self, kind: int, call_id: int, payload: bytes = b"", flags: int = 0):
        if len(payload) > self.limits["frame"]:
            raise PushlineError(f"a {KIND_NAMES[kind]} payload of {len(payload)} bytes exceeds the frame limit {self.limits['frame']}")
        header = struct.pack(">I", len(payload))[1:] + bytes([kind, flags]) + struct.pack(">I", call_id & 0x7FFFFFFF)
        self._trace(f"-> {KIND_NAMES[kind]} call {call_id} {len(payload)} bytes" + (" CONTINUES" if flags & CONTINUES else ""))
        self._send(header + payload)

    def _send_message(self, call_id: int, payload: bytes):
        """Sends a MESSAGE payload (flag byte + message) in frames no longer than the agreed limit (2.3)."""
        size = self.limits["frame"]
        for start in range(0, max(len(payload), 1), size):
            more = start + size < len(payload)
            self._send_frame(MESSAGE, call_id, payload[start:start + size], CONTINUES if more else 0)

    def _recv_some(self, timeout: float | None) -> bool:
        """Reads what has arrived into the buffer; False on timeout. Raises on EOF."""
        ready, _, _ = select.select([self.sock], [], [], timeout)
        if not ready:
            return False
        try:
            chunk = self.sock.recv(65536)
        except OSError as error:
            self._lost(f"receive failed: {error}")
            raise RPCError(UNAVAILABLE, f"connection lost: {error}") from None
        if not chunk:
            self._lost("the server closed the connection")
            raise RPCError(UNAVAILABLE, "connection closed by the server")
        self.buffer += chunk
        self.last_received = time.monotonic()
        return True

    def _read_exactly(self, count: int, timeout: float) -> bytes:
        deadline = time.monotonic() + timeout
        while len(self.buffer) < count:
            remaining = deadline - time.monotonic()
            if remaining <= 0 or not self._recv_some(remaining):
                raise PushlineError("timed out waiting for the server")
        data = bytes(self.buffer[:count])
        del self.buffer[:count]
        return data

    def _parse_header(self):
        """(length, kind, call id) of the frame at the buffer's start, checked (2.2)."""
        header = bytes(self.buffer[:FRAME_HEADER])
        length = int.from_bytes(header[0:3], "big")
        kind, flags = header[3], header[4]  # only MESSAGE's CONTINUES is defined; others are ignored
        raw_id = int.from_bytes(header[5:9], "big")
        if raw_id & 0x80000000:
            self._violation("the reserved bit R is set")
        if length > self.announced["frame"]:
            # Rejected as soon as the header has arrived, without waiting for the payload.
            self._violation(f"a frame of {length} bytes exceeds the announced maximum {self.announced['frame']}")
        return length, kind, flags, raw_id

    def _next_frame(self, timeout: float | None):
        """The next complete frame (kind, flags, call id, payload), or None when `timeout` passes."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            if len(self.buffer) >= FRAME_HEADER:
                length, kind, flags, call_id = self._parse_header()
                if len(self.buffer) >= FRAME_HEADER + length:
                    payload = bytes(self.buffer[FRAME_HEADER:FRAME_HEADER + length])
                    del self.buffer[:FRAME_HEADER + length]
                    more = " CONTINUES" if kind == MESSAGE and flags & CONTINUES else ""
                    self._trace(f"<- {KIND_NAMES[kind] if kind < len(KIND_NAMES) else hex(kind)} call {call_id} {length} bytes{more}")
                    return kind, flags, call_id, payload
            remaining = None if deadline is None else deadline - time.monotonic()
            if remaining is not None and remaining <= 0:
                return None
            if not self._recv_some(remaining):
                return None

    def _violation(self, reason: str):
        """2.3: a violation is answered with GOAWAY carrying the reason, then the connection closes."""
        try:
            goaway = self.m.GoAway(lastCallID=0, code=INTERNAL, message=reason)
            self._send_frame(GOAWAY, 0, goaway.SerializeToString())
        except PushlineError:
            pass
        self._lost(f"protocol violation: {reason}")
        raise ProtocolError(reason)

    def _lost(self, reason: str):
        """The connection is gone: every call still open ends UNAVAILABLE."""
        if not self.closed:
            self.closed = True
            try:
                self.sock.close()
            except OSError:
                pass
        for call in self.calls.values():
            if not call.ended:
                call.error = RPCError(UNAVAILABLE, reason)

    def close(self):
        if not self.closed:
            self.closed = True
            try:
                self.sock.close()
            except OSError:
                pass

    def __enter__(self):
        return self

    def __exit__(self, *_):
        self.close()

    # -- handshake (2.1, 2.5) --

    def _handshake(self, user_agent):
        hello = self.m.ClientHello(minVersion=VERSION, maxVersion=VERSION)
        hello.compressions.extend(self.compressions)
        hello.limits.maxFrameSize = self.announced["frame"]
        hello.limits.maxMessageSize = self.announced["message"]
        hello.limits.maxConcurrentCalls = self.announced["calls"]
        if self.token is not None:
            hello.authToken = self.token
        hello.userAgent = user_agent
        payload = hello.SerializeToString()
        self._trace("-> preface")
        self._send(MAGIC + struct.pack(">H", VERSION))
        # The HANDSHAKE frame may not exceed the default limit before limits are agreed.
        self._send_frame(HANDSHAKE, 0, payload)

        preface = self._read_exactly(10, 10.0)
        if preface[:8] != MAGIC:
            self.close()
            raise ProtocolError(f"the server's preface is not PUSHLINE: {preface.hex()}")
        server_version = struct.unpack(">H", preface[8:10])[0]
        self._trace(f"<- preface version {server_version}")
        while True:
            frame = self._next_frame(10.0)
            if frame is None:
                self.close()
                raise PushlineError("timed out waiting for the ServerHello")
            kind, flags, call_id, payload = frame
            if kind == HANDSHAKE:
                break
            if kind == GOAWAY:
                goaway = self.m.GoAway.FromString(payload)
                self.close()
                raise GoAwayReceived(goaway.code if goaway.HasField("code") else UNAVAILABLE,
                                     goaway.message, goaway.retryAfterMillis if goaway.HasField("retryAfterMillis") else None)
            if kind < len(KIND_NAMES):
                self._violation(f"{KIND_NAMES[kind]} before the ServerHello")
            # unknown kinds are ignored (2.3)
        server = self.m.ServerHello.FromString(payload)
        if server.version != VERSION:
            self._violation(f"the server chose version {server.version}; this client speaks {VERSION}")
        self.server_hello = server
        self.compression = server.compression if server.HasField("compression") else IDENTITY
        if self.compression != IDENTITY and self.compression not in self.compressions:
            self._violation(f"the server chose compression {self.compression}, which this client did not offer")

        def theirs(field, default):
            return getattr(server.limits, field) if server.HasField("limits") and server.limits.HasField(field) else default

        self.limits = {
            "frame": min(self.announced["frame"], theirs("maxFrameSize", DEFAULT_MAX_FRAME), MAX_FRAME_LIMIT),
            "message": min(self.announced["message"], theirs("maxMessageSize", DEFAULT_MAX_MESSAGE)),
            "calls": min(self.announced["calls"], theirs("maxConcurrentCalls", DEFAULT_MAX_CALLS)),
        }
        if server.HasField("keepaliveIntervalMillis") and server.keepaliveIntervalMillis > 0:
            self.keepalive = min(CLIENT_KEEPALIVE_SECONDS, server.keepaliveIntervalMillis / 1000.0)
        self._trace(f"negotiated compression={'DEFLATE' if self.compression == DEFLATE else 'IDENTITY'} limits={self.limits}")

    # -- messages (2.3 MESSAGE, 2.9) --

    def _encode_message(self, message) -> bytes:
        data = message.SerializeToString()
        if len(data) > self.limits["message"]:
            raise RPCError(RESOURCE_EXHAUSTED, f"message of {len(data)} bytes exceeds the limit {self.limits['message']}")
        if self.compression == DEFLATE and len(data) >= COMPRESSION_THRESHOLD:
            compressed = zlib.compress(data)
            self._trace(f"   compressed message sent: {len(data)} -> {len(compressed)} bytes")
            return b"\x01" + compressed
        return b"\x00" + data

    def _reassemble(self, call: _Call, payload: bytes, continues: int) -> bytes | None:
        """The whole MESSAGE payload once its last frame has arrived, else None (2.3)."""
        if call.unfinished is None and not continues:
            return payload
        call.unfinished = (call.unfinished or bytearray()) + payload
        if len(call.unfinished) - 1 > self.limits["message"]:
            raise RPCError(RESOURCE_EXHAUSTED, f"a message of more than {self.limits['message']} bytes")
        if continues:
            return None
        message, call.unfinished = bytes(call.unfinished), None
        return message

    def _decode_message(self, payload: bytes) -> bytes:
        """The message bytes of a MESSAGE payload; raises RPCError (the call's end) when bad."""
        if not payload:
            raise RPCError(INTERNAL, "a MESSAGE frame without its compressed flag")
        flag, body = payload[0], payload[1:]
        if flag == 0:
            if len(body) > self.limits["message"]:
                raise RPCError(RESOURCE_EXHAUSTED, f"message of {len(body)} bytes exceeds the limit")
            return body
        if flag != 1 or self.compression == IDENTITY:
            raise RPCError(INTERNAL, "a compressed message on a connection that agreed IDENTITY"
                           if flag == 1 else f"unknown compressed flag {flag}")
        # Inflate in chunks; stop as soon as the output would exceed the maximum message size.
        inflater = zlib.decompressobj()
        limit = self.limits["message"]
        out = bytearray()
        data = body
        try:
            while True:
                chunk = inflater.decompress(data, 65536)
                out += chunk
                if len(out) > limit:
                    raise RPCError(RESOURCE_EXHAUSTED, f"a compressed message inflates past the limit of {limit} bytes")
                data = inflater.unconsumed_tail
                if not data:
                    break
            if not inflater.eof:
                out += inflater.flush()
                if len(out) > limit:
                    raise RPCError(RESOURCE_EXHAUSTED, f"a compressed message inflates past the limit of {limit} bytes")
        except zlib.error as error:
            raise RPCError(INTERNAL, f"not a deflate stream: {error}") from None
        if not inflater.eof or inflater.unused_data:
            raise RPCError(INTERNAL, "not a complete deflate stream")
        self._trace(f"   compressed message received: {len(body)} -> {len(out)} bytes")
        return bytes(out)

    # -- the frame pump --

    def _pump(self, timeout: float | None):
        """Handles one incoming frame (or keepalive duty); returns after at most `timeout`."""
        if self.closed:
            raise RPCError(UNAVAILABLE, "connection closed")
        now = time.monotonic()
        if now - self.last_received >= CLIENT_KEEPALIVE_TIMEOUT_SECONDS:
            self._lost("the server is not answering (keepalive timeout)")
            raise RPCError(UNAVAILABLE, "keepalive timeout")
        ping_due = self.last_sent + self.keepalive - now
        wait = ping_due if timeout is None else min(timeout, ping_due)
        frame = self._next_frame(max(0.0, wait))
        if frame is None:
            if time.monotonic() - self.last_sent >= self.keepalive:
                self._send_frame(PING, 0, os.urandom(8))
            return
        kind, flags, call_id, payload = frame
        if kind == PING:
            if call_id != 0 or len(payload) != 8:
                self._violation("a PING that is not 8 bytes on call 0")
            self._send_frame(PONG, 0, payload)
        elif kind == PONG:
            pass
        elif kind == GOAWAY:
            self._on_goaway(self.m.GoAway.FromString(payload))
        elif kind in (MESSAGE, STATUS, HALF_CLOSE):
            call = self.calls.get(call_id)
            if call is None:
                if call_id == 0 or call_id >= self.next_call_id:
                    self._violation(f"{KIND_NAMES[kind]} for call {call_id}, never started")
                return  # a call that has already ended: crossed in flight, ignored
            if call.ended:
                return
            if kind == MESSAGE:
                try:
                    message = self._reassemble(call, payload, flags & CONTINUES)
                    if message is not None:
                        call.messages.append(self._decode_message(message))
                except RPCError as error:
                    call.error = error
                    self._send_frame(CANCEL, call.id)
            elif kind == STATUS:
                call.status = self.m.CallStatus.FromString(payload)
            # HALF_CLOSE from the server: nothing to do; its STATUS ends the call.
        elif kind in (HANDSHAKE, CALL_START, CANCEL):
            self._violation(f"{KIND_NAMES[kind]} from the server")
        # kinds 0x9 and above: ignored (2.3)

    def _on_goaway(self, goaway):
        self.goaway = goaway
        code = goaway.code if goaway.HasField("code") else UNAVAILABLE
        retry = goaway.retryAfterMillis if goaway.HasField("retryAfterMillis") else None
        self._trace(f"   GOAWAY lastCallID={goaway.lastCallID} code={status_name(code)} {goaway.message!r}")
        for call in self.calls.values():
            if not call.ended and call.id > goaway.lastCallID:
                call.error = GoAwayReceived(UNAVAILABLE, f"retry on a new connection (GOAWAY {status_name(code)}: {goaway.message})", retry)

    # -- calls (2.5) --

    def _drain(self):
        """Handles the frames that have already arrived, without waiting (a GOAWAY, say)."""
        try:
            while not self.closed:
                if len(self.buffer) >= FRAME_HEADER:
                    length = int.from_bytes(self.buffer[0:3], "big")
                    if len(self.buffer) >= FRAME_HEADER + length:
                        self._pump(0)
                        continue
                if not select.select([self.sock], [], [], 0)[0]:
                    break
                self._recv_some(0)
        except (RPCError, ProtocolError):
            pass  # the connection is gone; the caller sees it

    def _start(self, method: str, request, timeout: float | None, half_close: bool = True) -> _Call:
        """Starts a call; with `request` None (a pipelined call, 2.6) it sends no request."""
        self._drain()
        if self.goaway is not None:
            retry = self.goaway.retryAfterMillis if self.goaway.HasField("retryAfterMillis") else None
            raise GoAwayReceived(UNAVAILABLE, "the server sent GOAWAY: retry on a new connection", retry)
        open_calls = sum(1 for call in self.calls.values() if not call.ended)
        if open_calls >= self.limits["calls"]:
            raise RPCError(RESOURCE_EXHAUSTED, f"{open_calls} calls already open (limit {self.limits['calls']})")
        call = _Call(self.next_call_id, method)
        self.next_call_id += 1
        self.calls[call.id] = call
        start = self.m.CallStart(method=method)
        if timeout is not None:
            start.timeoutMillis = max(1, int(timeout * 1000))
            call.deadline = time.monotonic() + timeout
        self._send_frame(CALL_START, call.id, start.SerializeToString())
        if request is not None:
            self._send_message(call.id, self._encode_message(request))
        if half_close:
            self._send_frame(HALF_CLOSE, call.id)
        return call

    def _wait(self, call: _Call, until_end: bool = False):
        """Pumps frames until `call` has a message (or, with `until_end`, has ended)."""
        while not call.ended and (until_end or not call.messages):
            remaining = None
            if call.deadline is not None:
                remaining = call.deadline - time.monotonic()
                if remaining <= 0:
                    self.cancel(call)
                    call.error = RPCError(DEADLINE_EXCEEDED, "deadline exceeded")
                    break
            self._pump(remaining)

    def _raise_if_failed(self, call: _Call):
        if call.error is not None:
            raise call.error
        status = call.status
        if status is not None and status.code != OK:
            raise RPCError(status.code, status.message,
                           status.retryAfterMillis if status.HasField("retryAfterMillis") else None,
                           [(entry.key, entry.value) for entry in status.metadata])

    def cancel(self, call: _Call):
        if not call.ended and not self.closed:
            self._send_frame(CANCEL, call.id)
            call.error = RPCError(CANCELLED, "cancelled by the client")

    def unary(self, method: str, request, response_type, timeout: float | None = None):
        """One request, one response (2.5.3); raises RPCError on a non-OK STATUS."""
        call = self._start(method, request, timeout)
        self._wait(call, until_end=True)
        self.calls.pop(call.id, None)
        self._raise_if_failed(call)
        if len(call.messages) != 1:
            raise RPCError(INTERNAL, f"a unary call ended OK with {len(call.messages)} responses")
        return response_type.FromString(call.messages[0])

    def pipelined(self, method: str, requests, response_type, timeout: float | None = None):
        """Many requests on one call, each answered by one response in request order (2.6):
        keeps at most the agreed `maxConcurrentCalls` unanswered, half-closes after the last,
        and returns the responses once the STATUS is OK; raises RPCError otherwise."""
        call = self._start(method, None, timeout, half_close=False)
        window = self.limits["calls"]
        sent = 0
        answers = []
        for request in requests:
            while sent - len(answers) - len(call.messages) >= window and not call.ended:
                self._wait(call)
                answers += call.messages
                call.messages = []
            if call.ended:
                break
            self._send_message(call.id, self._encode_message(request))
            sent += 1
        if not call.ended:
            self._send_frame(HALF_CLOSE, call.id)
        self._wait(call, until_end=True)
        answers += call.messages
        self.calls.pop(call.id, None)
        self._raise_if_failed(call)
        if len(answers) != sent:
            raise RPCError(INTERNAL, f"a pipelined call ended OK with {len(answers)} responses to {sent} requests")
        return [response_type.FromString(answer) for answer in answers]

    def server_stream(self, method: str, request, response_type, timeout: float | None = None) -> "Stream":
        """One request, then responses until STATUS (2.6)."""
        return Stream(self, self._start(method, request, timeout), response_type)

    # -- the services --

    def health(self, service: str = "", timeout: float | None = 10.0):
        return self.unary(HEALTH_CHECK, self.m.HealthCheckRequest(service=service), self.m.HealthCheckResponse, timeout)

    def publish(self, request, timeout: float | None = 30.0):
        return self.unary(PUBLISH, request, self.m.PublishResponse, timeout)

    def publish_stream(self, requests, timeout: float | None = 30.0):
        """Publishes `requests` on one PublishStream (3.2): a PublishOutcome for each, in order."""
        return self.pipelined(PUBLISH_STREAM, requests, self.m.PublishOutcome, timeout)

    def get_cards(self, topic: str, timeout: float | None = 30.0):
        return self.unary(GET_CARDS, self.m.GetCardsRequest(topic=topic), self.m.TopicUpdate, timeout)

    def subscribe(self, positions) -> "Stream":
        """`positions`: (topic, epoch or None, offset or None) triples."""
        request = self.m.SubscribeRequest()
        for topic, epoch, offset in positions:
            position = request.topics.add(topic=topic)
            if epoch is not None:
                position.epoch = epoch
            if offset is not None:
                position.offset = offset
        return self.server_stream(SUBSCRIBE, request, self.m.TopicUpdate)


class Stream:
    """The responses of a server-streaming call; iterate, then the STATUS is checked."""

    def __init__(self, connection: Connection, call: _Call, response_type):
        self.connection = connection
        self.call = call
        self.response_type = response_type

    def __iter__(self):
        return self

    def __next__(self):
        call = self.call
        self.connection._wait(call)
        if call.messages:
            return self.response_type.FromString(call.messages.pop(0))
        self.connection.calls.pop(call.id, None)
        self.connection._raise_if_failed(call)
        raise StopIteration

    def cancel(self):
        self.connection.cancel(self.call)
        self.connection.calls.pop(self.call.id, None)


# --- The client's copy of a topic (3.3) ---------------------------------------------------


class TopicCopy:
    """A client's cards of one topic, with its position (epoch, offset)."""

    def __init__(self, topic: str):
        self.topic = topic
        self.epoch = None
        self.position = None  # throughOffset of the last applied update
        self.cards = {}  # cardID -> TrackerCard
        # 3.3, a snapshot in parts: where the whole ends, and the cards held before it that
        # no part or change has brought again yet (kept until the position reaches it at a
        # complete update: before that, a card changed since may still be on its way).
        self.snapshot_through = None
        self.awaiting_snapshot = set()

    def apply(self, update) -> bool:
        """Applies a TopicUpdate; False when it was ignored (another epoch without a snapshot)."""
        if update.snapshot:
            # 3.3: the client replaces its cards of the topic with these.
            held = self.cards
            self.cards = {change.cardID: change.card for change in update.changes if change.HasField("card")}
            self.epoch, self.position = update.epoch, update.throughOffset
            self.snapshot_through, self.awaiting_snapshot = None, set()
            left_out = set(held) - set(self.cards)
            if left_out and update.HasField("snapshotThroughOffset") and update.snapshotThroughOffset > update.throughOffset:
                # 3.3: the first part of a snapshot in parts keeps the cards it leaves out.
                self.awaiting_snapshot = left_out
                self.cards.update({card_id: held[card_id] for card_id in left_out})
                self.snapshot_through = update.snapshotThroughOffset
            return True
        if self.epoch is not None and update.epoch != self.epoch:
            return False  # 3.3 / broker.proto: another epoch comes with snapshot = true
        for change in update.changes:
            # 3.3: a client must ignore changes at or below its position.
            if self.position is not None and change.HasField("offset") and change.offset <= self.position:
                continue
            self.awaiting_snapshot.discard(change.cardID)
            if change.HasField("card"):
                self.cards[change.cardID] = change.card
            else:
                self.cards.pop(change.cardID, None)
        self.epoch = update.epoch
        if self.position is None or update.throughOffset > self.position:
            self.position = update.throughOffset
        reached = self.position >= self.snapshot_through if self.snapshot_through is not None else False
        # (getattr: descriptors from before broker.proto's field 8 do not know `complete`.)
        if self.snapshot_through is not None and (reached and getattr(update, "complete", False) or not self.awaiting_snapshot):
            for card_id in self.awaiting_snapshot:
                self.cards.pop(card_id, None)
            self.snapshot_through, self.awaiting_snapshot = None, set()
        return True

    def live_cards(self, now_seconds: float | None = None):
        """The cards not expired (3.3: expiry is the client's job), by cardID."""
        now = time.time() if now_seconds is None else now_seconds
        return [card for card_id, card in sorted(self.cards.items())
                if not (card.HasField("expiresAt") and card.expiresAt <= now)]


# --- CLI ----------------------------------------------------------------------------------


def _address(text: str):
    host, _, port = text.rpartition(":")
    if not host or not port.isdigit():
        raise argparse.ArgumentTypeError(f"expected HOST:PORT, got {text!r}")
    return host.strip("[]"), int(port)


def _json_line(message) -> str:
    return json.dumps(json_format.MessageToDict(message), separators=(",", ":"), ensure_ascii=False)


def _cards_from_stdin(messages: Messages):
    text = sys.stdin.read().strip()
    if not text:
        return []
    try:
        value = json.loads(text)
        items = value if isinstance(value, list) else [value]
    except json.JSONDecodeError:
        items = [json.loads(line) for line in text.splitlines() if line.strip()]
    return [json_format.ParseDict(item, messages.TrackerCard()) for item in items]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="pushline_client.py", description=__doc__.split("\n\n")[0])
    parser.add_argument("--descriptors", help="a FileDescriptorSet of proto/ (default: run protoc on proto/)")
    parser.add_argument("--identity", action="store_true", help="offer IDENTITY only (no deflate)")
    parser.add_argument("-v", "--verbose", action="store_true", help="trace frames on stderr")
    commands = parser.add_subparsers(dest="command", required=True)

    health = commands.add_parser("health", help="/pushline.Health/Check")
    health.add_argument("address", type=_address)
    health.add_argument("--service", default="")
    health.add_argument("--token")

    publish = commands.add_parser("publish", help="/pushline.Publisher/Publish")
    publish.add_argument("address", type=_address)
    publish.add_argument("--token", required=True)
    publish.add_argument("--topic", required=True)
    publish.add_argument("--card-json", action="append", default=[], help="a TrackerCard in JSON (repeatable)")
    publish.add_argument("--remove", action="append", default=[], metavar="CARD_ID", help="remove a card (repeatable)")
    publish.add_argument("--idempotency-key")
    publish.add_argument("--stream", action="store_true",
                         help="publish each card and removal on its own, on one /pushline.Publisher/PublishStream")

    subscribe = commands.add_parser("subscribe", help="/pushline.Tracker/Subscribe")
    subscribe.add_argument("address", type=_address)
    subscribe.add_argument("--token", required=True)
    subscribe.add_argument("--topic", required=True, action="append", help="repeatable")
    subscribe.add_argument("--epoch", type=int, help="resume position (one topic only)")
    subscribe.add_argument("--offset", type=int, help="resume position (one topic only)")
    subscribe.add_argument("--count", type=int, help="stop after this many updates")

    get_cards = commands.add_parser("get-cards", help="/pushline.Tracker/GetCards")
    get_cards.add_argument("address", type=_address)
    get_cards.add_argument("--token", required=True)
    get_cards.add_argument("--topic", required=True)

    args = parser.parse_args(argv)
    messages = Messages(args.descriptors)
    log = (lambda line: print(line, file=sys.stderr, flush=True)) if args.verbose else None
    host, port = args.address
    compressions = (IDENTITY,) if args.identity else (DEFLATE, IDENTITY)
    try:
        with Connection(host, port, getattr(args, "token", None), messages=messages, compressions=compressions, log=log) as connection:
            if args.command == "health":
                response = connection.health(args.service)
                status = messages.pool.FindEnumTypeByName("pushline.rpc.ServingStatus").values_by_number[response.status].name
                print(status, flush=True)
                return 0 if status == "SERVING" else 3
            if args.command == "publish":
                request = messages.PublishRequest(topic=args.topic)
                cards = [json_format.Parse(text, messages.TrackerCard()) for text in args.card_json]
                if not cards and not args.remove:
                    cards = _cards_from_stdin(messages)
                for card in cards:
                    request.changes.add(cardID=card.cardID, card=card)
                for card_id in args.remove:
                    request.changes.add(cardID=card_id)
                if args.stream:
                    if args.idempotency_key:
                        parser.error("--idempotency-key names one publish; --stream makes one per change")
                    requests = [messages.PublishRequest(topic=args.topic, changes=[change]) for change in request.changes]
                    for outcome in connection.publish_stream(requests):
                        print(_json_line(outcome), flush=True)
                    return 0
                if args.idempotency_key:
                    request.idempotencyKey = args.idempotency_key
                print(_json_line(connection.publish(request)), flush=True)
                return 0
            if args.command == "get-cards":
                print(_json_line(connection.get_cards(args.topic)), flush=True)
                return 0
            if args.command == "subscribe":
                if (args.epoch is None) != (args.offset is None) or (args.epoch is not None and len(args.topic) != 1):
                    parser.error("--epoch and --offset go together, with one --topic")
                copies = {topic: TopicCopy(topic) for topic in args.topic}
                positions = [(topic, args.epoch, args.offset) for topic in args.topic]
                if args.epoch is not None:
                    copies[args.topic[0]].epoch, copies[args.topic[0]].position = args.epoch, args.offset
                stream = connection.subscribe(positions)
                received = 0
                ended = False
                try:
                    for update in stream:
                        print(_json_line(update), flush=True)
                        copy = copies.get(update.topic)
                        if copy is None or not copy.apply(update):
                            print(f"pushline_client: ignored an update of {update.topic!r} epoch {update.epoch}", file=sys.stderr)
                        received += 1
                        if args.count is not None and received >= args.count:
                            break
                    else:
                        ended = True
                finally:
                    if not ended and not connection.closed:
                        stream.cancel()
                    for copy in copies.values():
                        final = {"topic": copy.topic, "epoch": None if copy.epoch is None else str(copy.epoch),
                                 "position": None if copy.position is None else str(copy.position),
                                 "cards": [json_format.MessageToDict(card) for card in copy.live_cards()]}
                        print(json.dumps({"final": final}, separators=(",", ":"), ensure_ascii=False), flush=True)
                return 0
    except RPCError as error:
        print(json.dumps({"error": error.to_dict()}, ensure_ascii=False), file=sys.stderr, flush=True)
        return 1
    except (PushlineError, OSError) as error:
        print(json.dumps({"error": {"codeName": "CLIENT", "message": str(error)}}), file=sys.stderr, flush=True)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
