"""Synthesized ``trace.jsonl`` files for ``replay --conform`` tests: no broker needed.

:class:`LaggingBroker` stands in for a loaded Kafka broker. It is groupsim's own
:class:`coordinator.group.GroupCoordinator`, so every answer it records is one groupsim gives
too, except for *when* things happen: each timer fires ``timer_lag_ms(key, deadline)`` after it
(a timer wheel and an event loop running late), and a request may reach the coordinator
``delay_ms`` after the proxy recorded it (a request queue backlog). A trace written this way
conforms only if the replay finds the order of timer and request the "broker" took; editing one
recorded answer afterwards (:func:`tamper`) plants a genuine divergence.

Requests are encoded at JoinGroup/SyncGroup/Heartbeat v3 (before KIP-394's MEMBER_ID_REQUIRED,
so a member joins with one request), the answers with groupsim's own kio translation.
"""

from __future__ import annotations

import base64
import datetime
import io
import json
from collections.abc import Callable
from heapq import heappop, heappush
from pathlib import Path
from typing import Any

from kio.serial import entity_writer

from coordinator.config import CoordinatorConfig
from coordinator.group import GroupCoordinator
from protocol import group as pg
from protocol.effects import CancelTimer, Send, SetTimer
from scenarios.record.conform import Conformance, conform_coordinator, read_exchanges
from scenarios.serve import wire
from scenarios.serve.translate import from_group_response, to_group_request

#: The conform tests' broker: ``group.initial.rebalance.delay.ms`` 1 s; sessions down to
#: 500 ms allowed.
CONFIG = CoordinatorConfig.from_mapping(
    {"group.initial.rebalance.delay.ms": 1000, "group.min.session.timeout.ms": 500}
)

_VERSION = 3
_NAMES = {11: "JoinGroup", 12: "Heartbeat", 14: "SyncGroup"}
_RESPONSE_KEY = {
    pg.JoinGroupResponse: 11,
    pg.SyncGroupResponse: 14,
    pg.HeartbeatResponse: 12,
    pg.LeaveGroupResponse: 13,
}


def _frame(api_key: int, correlation_id: int, client_id: str, **body: Any) -> bytes:
    cls = wire._payload_class(api_key, _VERSION, False)
    header_cls = cls.__header_schema__  # type: ignore[attr-defined]
    buffer = io.BytesIO()
    entity_writer(header_cls)(
        buffer,
        header_cls(
            request_api_key=api_key,
            request_api_version=_VERSION,
            correlation_id=correlation_id,
            client_id=client_id,
        ),
    )
    entity_writer(cls)(buffer, cls(**body))
    return buffer.getvalue()


class LaggingBroker:
    """One group's coordinator whose timers fire late, writing what a proxy would record.

    Args:
        config: the group settings.
        timer_lag_ms: how late (ms) the timer with this key and deadline (ms) fires.
        group_id: the group every request names.
    """

    def __init__(
        self,
        config: CoordinatorConfig,
        timer_lag_ms: Callable[[str, int], int] = lambda key, at_ms: 0,
        group_id: str = "g",
    ) -> None:
        self.group_id = group_id
        self._lag = timer_lag_ms
        self._made = 0
        self._coordinator = GroupCoordinator(group_id, config, self._member_id)
        self._timers: dict[str, tuple[int, int]] = {}
        self._heap: list[tuple[int, int, str]] = []
        self._seq = 0
        self._conns: dict[str, int] = {}
        self._correlation: dict[int, int] = {}
        # conn -> requests not answered yet: (correlation id, api key, wire request, request)
        self._open: dict[int, list[tuple[int, int, wire.Request, pg.Request]]] = {}
        self.lines: list[dict[str, Any]] = [{"t_ms": 0, "event": "listening", "detail": "synth"}]
        #: client id -> (member id, generation) from its last JoinGroup answer
        self.joined: dict[str, tuple[str, int]] = {}
        self.leader = ""

    def _member_id(self, prefix: str) -> str:
        self._made += 1
        return f"{prefix}-{self._made:04d}"

    def _run_timers(self, until_ms: int) -> None:
        while self._heap and self._heap[0][0] <= until_ms:
            fire_ms, seq, key = heappop(self._heap)
            if self._timers.get(key, (None, None))[1] != seq:
                continue
            del self._timers[key]
            self._apply(self._coordinator.fire(key, fire_ms), fire_ms)

    def _apply(self, effects: list[Any], now_ms: int) -> None:
        for effect in effects:
            if isinstance(effect, SetTimer):
                self._seq += 1
                fire_ms = effect.at_ms + self._lag(effect.key, effect.at_ms)
                self._timers[effect.key] = (fire_ms, self._seq)
                heappush(self._heap, (fire_ms, self._seq, effect.key))
            elif isinstance(effect, CancelTimer):
                self._timers.pop(effect.key, None)
            elif isinstance(effect, Send):
                self._answer(int(effect.dest), effect.message, now_ms)

    def _answer(self, conn: int, message: Any, now_ms: int) -> None:
        api_key = _RESPONSE_KEY[type(message)]
        queue = self._open[conn]
        pick = next(item for item in queue if item[1] == api_key)
        queue.remove(pick)
        correlation_id, _, request, req = pick
        body = from_group_response(request, req, message)
        raw = wire.encode_response(api_key, _VERSION, correlation_id, body)[4:]
        client = request.client_id
        if isinstance(message, pg.JoinGroupResponse) and message.error == pg.ErrorCode.NONE:
            self.joined[client] = (message.member_id, message.generation_id)
            self.leader = message.leader
        self._line(now_ms, conn, client, "response", api_key, correlation_id, raw)

    def _line(
        self, t_ms: int, conn: int, client: str, way: str, api_key: int, corr: int, raw: bytes
    ) -> None:
        self.lines.append(
            {
                "t_ms": t_ms,
                "conn": conn,
                "client_id": client,
                "dir": way,
                "api": _NAMES[api_key],
                "api_key": api_key,
                "version": _VERSION,
                "correlation_id": corr,
                "raw": base64.b64encode(raw).decode(),
            }
        )

    def _send(self, t_ms: int, delay_ms: int, client: str, api_key: int, **body: Any) -> None:
        conn = self._conns.setdefault(client, len(self._conns) + 1)
        corr = self._correlation[conn] = self._correlation.get(conn, 0) + 1
        raw = _frame(api_key, corr, client, group_id=self.group_id, **body)
        self._line(t_ms, conn, client, "request", api_key, corr, raw)
        arrives = t_ms + delay_ms
        self._run_timers(arrives)
        request = wire.decode_request(raw)
        req = to_group_request(request)
        self._open.setdefault(conn, []).append((corr, api_key, request, req))
        self._apply(self._coordinator.handle(str(conn), req, arrives), arrives)

    def join(self, t_ms: int, client: str, *, delay_ms: int = 0, session_ms: int = 10_000) -> None:
        """``client`` sends a JoinGroup at ``t_ms`` (its member id from its last answer)."""
        self._run_timers(t_ms)
        member_id = self.joined.get(client, ("", -1))[0]
        module = wire.module(11, _VERSION, False)
        self._send(
            t_ms,
            delay_ms,
            client,
            11,
            session_timeout=datetime.timedelta(milliseconds=session_ms),
            rebalance_timeout=datetime.timedelta(seconds=10),
            member_id=member_id,
            protocol_type="consumer",
            protocols=(module.JoinGroupRequestProtocol(name="range", metadata=b"\x00"),),
        )

    def sync(self, t_ms: int, client: str, *, delay_ms: int = 0) -> None:
        """``client`` sends a SyncGroup at ``t_ms`` (the leader assigns nothing to everyone)."""
        self._run_timers(t_ms)
        member_id, generation = self.joined[client]
        module = wire.module(14, _VERSION, False)
        assignments = ()
        if member_id == self.leader:
            assignments = tuple(
                module.SyncGroupRequestAssignment(member_id=m, assignment=b"")
                for m, _ in self.joined.values()
            )
        self._send(
            t_ms,
            delay_ms,
            client,
            14,
            generation_id=generation,
            member_id=member_id,
            group_instance_id=None,
            assignments=assignments,
        )

    def heartbeat(self, t_ms: int, client: str, *, delay_ms: int = 0) -> None:
        """``client`` sends a Heartbeat at ``t_ms``."""
        self._run_timers(t_ms)
        member_id, generation = self.joined[client]
        self._send(
            t_ms,
            delay_ms,
            client,
            12,
            generation_id=generation,
            member_id=member_id,
            group_instance_id=None,
        )

    def write(self, path: Path, until_ms: int) -> Path:
        """Runs the timers to ``until_ms`` and writes the trace (lines in time order)."""
        self._run_timers(until_ms)
        lines = sorted(self.lines, key=lambda line: line["t_ms"])  # stable: same-ms order kept
        path.write_text("".join(json.dumps(line) + "\n" for line in lines))
        return path


def tamper(path: Path, api: str, nth: int, edit: Callable[[dict[str, Any]], None]) -> None:
    """Rewrites the ``nth`` recorded ``api`` answer of a synthesized trace: ``edit`` changes
    the decoded kio fields (a dict of the response's dataclass fields), re-encoded in place."""
    import dataclasses

    lines = [json.loads(line) for line in path.read_text().splitlines()]
    answers = [e for e in lines if e.get("dir") == "response" and e.get("api") == api]
    entry = answers[nth]
    raw = base64.b64decode(entry["raw"])
    api_key = entry["api_key"]
    cls = wire.response_class(api_key, _VERSION)
    from kio.serial import entity_reader

    header, size = entity_reader(cls.__header_schema__)(raw, 0)  # type: ignore[attr-defined]
    body, _ = entity_reader(cls)(raw, size)
    fields = {f.name: getattr(body, f.name) for f in dataclasses.fields(body)}
    edit(fields)
    new = wire.encode_response(api_key, _VERSION, header.correlation_id, cls(**fields))[4:]
    entry["raw"] = base64.b64encode(new).decode()
    path.write_text("".join(json.dumps(e) + "\n" for e in lines))


def retime(path: Path, api: str, nth: int, t_ms: int) -> None:
    """Moves the ``nth`` recorded ``api`` answer of a synthesized trace to ``t_ms`` (the
    trace's clock, ms): the proxy saw it come back then. Lines stay in time order."""
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    answers = [e for e in lines if e.get("dir") == "response" and e.get("api") == api]
    answers[nth]["t_ms"] = t_ms
    lines.sort(key=lambda line: line["t_ms"])  # stable: same-ms order kept
    path.write_text("".join(json.dumps(e) + "\n" for e in lines))


def conform(trace: Path, **kwargs: int) -> Conformance:
    """``replay --conform`` of the trace at ``trace`` under :data:`CONFIG` (``kwargs``:
    :func:`scenarios.record.conform.conform_coordinator`'s tolerances and windows, ms)."""
    return conform_coordinator(read_exchanges(trace), CONFIG, **kwargs)
