"""``groupsim record``: a Kafka-protocol proxy in front of a real cluster.

Clients bootstrap from the proxy. Each connection gets its own connection to the broker it
stands in for, and every frame goes through unchanged — except the answers that name brokers
(Metadata, FindCoordinator, DescribeCluster), whose addresses are rewritten to the proxy's own
listeners (one per real broker, opened the first time a broker is named), so clients keep
talking through it. Like a Kafka broker's ``SocketServer``, frames are read as a 4-byte size
and a body; a client may pipeline several requests, matched to their answers by correlation id.

Plaintext only: a TLS ClientHello or a SaslHandshake/SaslAuthenticate request closes the
connection with a one-line error in both files. Hostile or odd traffic (an unknown API key is
forwarded untouched; a frame cut short, a client gone mid-request, the upstream going away)
closes that one connection and is written down; the recorder and what it wrote are unaffected.
"""

from __future__ import annotations

import socket
import struct
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

import trio

from .frames import (
    ADDRESS_APIS,
    NEXT_GEN_GROUP_APIS,
    RECORDED_APIS,
    SASL_AUTHENTICATE,
    SASL_HANDSHAKE,
    FrameError,
    RequestHead,
    decode_request_body,
    decode_response,
    looks_like_tls,
    read_request_head,
    rewrite_addresses,
)
from .trace import Recording

__all__ = ["RecordOptions", "Proxy", "MAX_FRAME_BYTES", "MAX_IN_FLIGHT"]

#: Largest frame accepted either way (Kafka's ``socket.request.max.bytes`` default, 100 MiB).
MAX_FRAME_BYTES = 104_857_600
#: Requests remembered per connection while their answers are awaited; older ones are
#: forgotten (an acks=0 Produce is never answered), so memory stays bounded.
MAX_IN_FLIGHT = 1024
_SIZE = struct.Struct(">i")


class ConnectionClosed(Exception):
    """One side closed or sent something the proxy cannot carry; ``reason`` says which."""


@dataclass(frozen=True, slots=True)
class RecordOptions:
    """What to proxy: ``upstream`` (host, port) of a bootstrap broker; the listener for it at
    ``host``:``port`` (0: any free port); other brokers get listeners on ``host`` at free
    ports, advertised to clients as ``advertised_host``."""

    upstream: tuple[str, int]
    host: str = "127.0.0.1"
    port: int = 0
    advertised_host: str | None = None


class _Pending(OrderedDict[int, tuple[RequestHead, Any]]):
    """Requests awaiting their answer, by correlation id, at most :data:`MAX_IN_FLIGHT`."""

    def add(self, head: RequestHead, body: Any) -> None:
        self[head.correlation_id] = (head, body)
        if len(self) > MAX_IN_FLIGHT:
            self.popitem(last=False)


async def _read_frame(stream: trio.abc.ReceiveStream, buffer: bytearray) -> bytes:
    """The next frame's body (its size prefix removed).

    Raises:
        ConnectionClosed: the stream ended (cleanly between frames or cut short inside one),
            or the size is negative or over :data:`MAX_FRAME_BYTES`.
    """
    while len(buffer) < 4:
        data = await stream.receive_some(65536)
        if not data:
            raise ConnectionClosed("closed" if not buffer else "closed inside a frame size")
        buffer += data
    (size,) = _SIZE.unpack_from(buffer)
    if size < 0 or size > MAX_FRAME_BYTES:
        raise ConnectionClosed(f"frame size {size} is outside 0..{MAX_FRAME_BYTES}")
    while len(buffer) < 4 + size:
        data = await stream.receive_some(65536)
        if not data:
            raise ConnectionClosed(f"closed after {len(buffer) - 4} of a {size}-byte frame")
        buffer += data
    frame = bytes(buffer[4 : 4 + size])
    del buffer[: 4 + size]
    return frame


class Proxy:
    """The recording proxy (see the module docstring).

    Args:
        options: what to proxy and where to listen.
        recording: where frames and events go.
        clock_ms: wall-clock milliseconds (the command passes ``time.time() * 1000``; tests
            may pass their own).

    Use ``await nursery.start(proxy.run)``: it returns the bootstrap listener's port and
    serves until cancelled.
    """

    def __init__(self, options: RecordOptions, recording: Recording, clock_ms: Any) -> None:
        self.options = options
        self.recording = recording
        self._clock_ms = clock_ms
        self._listeners: dict[tuple[str, int], tuple[str, int]] = {}
        self._nursery: trio.Nursery | None = None
        self._connections = 0
        self._cuts: dict[str, float] = {}  # client id -> until when (the clock's ms)
        self.port = 0

    def _now(self) -> None:
        self.recording.at(int(self._clock_ms()))

    def cut(self, client_id: str, duration_ms: int) -> None:
        """A network partition of one client for ``duration_ms`` (groupsim's ``partition``
        fault, as a test harness drives it): every frame of a connection whose ``client.id`` is
        ``client_id`` or starts with ``client_id + "-"`` (a Kafka Streams client's consumer,
        restore consumer and admin client) is held, both ways, on every broker's listener,
        until the cut ends, then delivered in order. Nothing is closed or dropped: as behind a
        real partition (TCP keeps the bytes and retransmits them once the path heals), the
        client finds out by its own request timeouts and closes the connection itself, and
        its new connections are held too. Dropping frames inside a live connection would
        instead hand the client answers out of correlation order, which no network does.
        Written to ``trace.jsonl`` as a ``cut`` event and to ``events.jsonl`` as a ``fault``
        record (``partition``, ``member``, ``duration_ms``)."""
        until = self._clock_ms() + duration_ms
        self._cuts[client_id] = until
        self._now()
        self.recording.fault("partition", client_id, duration_ms)

    def _cut_left_ms(self, client_id: str | None) -> float:
        """How much longer ``client_id``'s frames are held (ms; 0 when it is not cut)."""
        if not client_id or not self._cuts:
            return 0.0
        now = self._clock_ms()
        left = 0.0
        for cut, until in list(self._cuts.items()):
            if now >= until:
                del self._cuts[cut]
            elif client_id == cut or client_id.startswith(cut + "-"):
                left = max(left, until - now)
        return left

    async def _hold_while_cut(self, client_id: str | None) -> None:
        """Waits until no cut holds ``client_id``'s frames (a cut made meanwhile holds on)."""
        while (left := self._cut_left_ms(client_id)) > 0:
            await trio.sleep(left / 1000)

    async def run(self, *, task_status: Any = trio.TASK_STATUS_IGNORED) -> None:
        """Listen for the bootstrap broker and serve until cancelled."""
        async with trio.open_nursery() as nursery:
            self._nursery = nursery
            host, port = self._listen(self.options.upstream, self.options.port)
            self.port = port
            task_status.started(port)

    def _listen(self, upstream: tuple[str, int], port: int = 0) -> tuple[str, int]:
        """Opens (once) the listener standing in for ``upstream``; its advertised address."""
        known = self._listeners.get(upstream)
        if known is not None:
            return known
        assert self._nursery is not None
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((self.options.host, port))
            sock.listen(128)
        except OSError:
            sock.close()
            raise
        bound = sock.getsockname()[1]
        advertised = (self.options.advertised_host or self.options.host, bound)
        self._listeners[upstream] = advertised
        listener = trio.SocketListener(trio.socket.from_stdlib_socket(sock))
        self._nursery.start_soon(self._accept, listener, upstream)
        self._now()
        self.recording.listening(advertised[0], bound, f"{upstream[0]}:{upstream[1]}")
        return advertised

    def listener_for(self, host: str, port: int) -> tuple[str, int]:
        """The address clients are given for the real broker at ``host``:``port``."""
        return self._listen((host, port))

    async def _accept(self, listener: trio.SocketListener, upstream: tuple[str, int]) -> None:
        async with listener:
            while True:
                client = await listener.accept()
                assert self._nursery is not None
                self._connections += 1
                self._nursery.start_soon(self._connection, client, upstream, self._connections)

    async def _connection(
        self, client: trio.SocketStream, upstream: tuple[str, int], conn: int
    ) -> None:
        """Carries one client connection to its broker until either side closes."""
        label = f"?#{conn}"
        self._now()
        self.recording.connection(conn, "open", f"to {upstream[0]}:{upstream[1]}")
        try:
            server = await trio.open_tcp_stream(*upstream)
        except OSError as exc:
            self._now()
            self.recording.connection(
                conn, "error", f"upstream {upstream[0]}:{upstream[1]}: {exc}", label
            )
            await client.aclose()
            return
        state = _ConnState(label)
        reason = "closed"
        try:
            async with trio.open_nursery() as nursery:

                async def carry(direction: str) -> None:
                    nonlocal reason
                    try:
                        if direction == "request":
                            await self._requests(client, server, conn, state)
                        else:
                            await self._responses(server, client, conn, state)
                    except ConnectionClosed as exc:
                        reason = f"{'client' if direction == 'request' else 'upstream'} {exc}"
                    except (trio.BrokenResourceError, trio.ClosedResourceError) as exc:
                        reason = f"{direction} side broken: {exc or type(exc).__name__}"
                    except FrameError as exc:
                        reason = f"error: {exc}"
                    nursery.cancel_scope.cancel()

                nursery.start_soon(carry, "request")
                nursery.start_soon(carry, "response")
        finally:
            with trio.CancelScope(shield=True):
                await client.aclose()
                await server.aclose()
            self._now()
            if reason.startswith("error: "):
                self.recording.connection(conn, "error", reason[7:], state.label)
            else:
                self.recording.connection(conn, "close", reason)

    async def _requests(
        self,
        client: trio.SocketStream,
        server: trio.SocketStream,
        conn: int,
        state: _ConnState,
    ) -> None:
        buffer = bytearray()
        first = True
        while True:
            if first:
                first = False
                data = await client.receive_some(65536)
                if not data:
                    raise ConnectionClosed("closed")
                if looks_like_tls(bytes(data[:3])):
                    raise FrameError(
                        "TLS is not supported: groupsim record proxies plaintext listeners only"
                    )
                buffer += data
            frame = await _read_frame(client, buffer)
            head = read_request_head(frame)
            if head.api_key in (SASL_HANDSHAKE, SASL_AUTHENTICATE):
                raise FrameError(
                    "SASL is not supported: groupsim record proxies plaintext listeners only"
                )
            if state.label.startswith("?#"):
                state.label = f"{head.client_id}#{conn}"
            body = None
            if head.api_key in RECORDED_APIS or head.api_key in ADDRESS_APIS:
                body = decode_request_body(frame, head)
            state.client_id = head.client_id
            await self._hold_while_cut(head.client_id)  # partitioned: it waits for the heal
            state.pending.add(head, body)
            self._now()
            if head.api_key in RECORDED_APIS or head.api_key in NEXT_GEN_GROUP_APIS:
                self.recording.frame(conn, state.label, head, "request", body, frame)
            await server.send_all(_SIZE.pack(len(frame)) + frame)

    async def _responses(
        self,
        server: trio.SocketStream,
        client: trio.SocketStream,
        conn: int,
        state: _ConnState,
    ) -> None:
        buffer = bytearray()
        while True:
            frame = await _read_frame(server, buffer)
            await self._hold_while_cut(state.client_id)  # partitioned: it waits for the heal
            (correlation_id,) = _SIZE.unpack_from(frame) if len(frame) >= 4 else (None,)
            entry = state.pending.pop(correlation_id, None) if correlation_id is not None else None
            if entry is not None:
                head, request = entry
                if head.api_key in RECORDED_APIS or head.api_key in ADDRESS_APIS:
                    _, body = decode_response(frame, head.api_key, head.api_version)
                    if body is not None and head.api_key in ADDRESS_APIS:
                        moved = rewrite_addresses(
                            head.api_key,
                            head.api_version,
                            head.correlation_id,
                            body,
                            self.listener_for,
                        )
                        if moved is not None:
                            frame, body = moved
                    if head.api_key in RECORDED_APIS:
                        self._now()
                        self.recording.frame(
                            conn, state.label, head, "response", body, frame, request
                        )
            await client.send_all(_SIZE.pack(len(frame)) + frame)


class _ConnState:
    """One connection's label (``"<client.id>#<n>"``) and its requests awaiting answers."""

    __slots__ = ("label", "pending", "client_id")

    def __init__(self, label: str) -> None:
        self.label = label
        self.pending = _Pending()
        self.client_id: str | None = None
