"""The served broker's connections: one TCP listener and, per client connection, a buffered
reader of Kafka request frames (:mod:`scenarios.serve.wire` decodes them) and the slot its one
request in progress is answered through (Kafka's ``SocketServer`` mutes a channel while its
request is processed, so a parked JoinGroup or SyncGroup blocks its connection).
:class:`scenarios.serve.broker.Broker` owns what is read and answered.
"""

from __future__ import annotations

import dataclasses
import struct
from collections.abc import Callable
from typing import Any

import trio

from . import wire

__all__ = ["Connection", "Slot", "serve_tcp"]


@dataclasses.dataclass
class Slot:
    """The one in-progress request of a connection: filled by a coordinator ``Send``."""

    answer: Any = None
    done: trio.Event = dataclasses.field(default_factory=trio.Event)


class Connection:
    """One client connection: a buffered reader over the socket stream."""

    def __init__(self, number: int, stream: trio.SocketStream, host: str, idle_ms: int) -> None:
        self.number = number
        self.idle_ms = idle_ms  # connections.max.idle.ms: Kafka's Selector closes idle ones
        self.stream = stream
        self.host = host
        self.buffer = bytearray()
        self.eof = False
        self.client_id = ""
        self.address = f"?#{number}"
        self.slot: Slot | None = None

    async def _fill(self) -> bool:
        data = await self.stream.receive_some(65536)
        if not data:
            self.eof = True
            return False
        self.buffer += data
        return True

    async def read_frame(self) -> bytes | None:
        """The next request frame (without its size); ``None`` at end of stream or when idle."""
        buffer = self.buffer
        with trio.move_on_after(self.idle_ms / 1000) as idle:
            while len(buffer) < 4:
                if self.eof or not await self._fill():
                    return None
        if idle.cancelled_caught:
            return None  # idle: the caller closes the connection
        (size,) = struct.unpack_from(">i", buffer)
        if size < 0 or size > wire.MAX_FRAME_BYTES:
            raise wire.WireError(f"frame size {size} out of range")
        while len(buffer) < 4 + size:
            if self.eof or not await self._fill():
                return None
        frame = bytes(buffer[4 : 4 + size])
        del buffer[: 4 + size]
        return frame

    async def watch_eof(self) -> None:
        """Read ahead (pipelined requests stay buffered) until the peer closes."""
        while not self.eof and await self._fill():
            pass


async def serve_tcp(
    handler: Callable[[trio.SocketStream], Any],
    port: int,
    host: str,
    handler_nursery: trio.Nursery,
    *,
    task_status: Any = trio.TASK_STATUS_IGNORED,
) -> None:
    """``trio.serve_tcp`` on ``host:port`` with connection handlers in ``handler_nursery``;
    reports the listeners through ``task_status`` (``nursery.start``). Raises ``OSError``
    when the address is taken."""
    await trio.serve_tcp(
        handler, port, host=host, handler_nursery=handler_nursery, task_status=task_status
    )
