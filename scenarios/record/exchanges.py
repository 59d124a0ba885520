"""The group exchanges of a recorded ``trace.jsonl``: each group request with the answer the
client read, in request order (:func:`read_exchanges`), and the field-by-field comparison of two
decoded answers (:func:`first_difference`) that ``replay --conform``'s coordinator and leader
checks share.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from protocol import group as pg
from protocol.errors import InputError

from .frames import NEXT_GEN_GROUP_APIS, decode_response

__all__ = [
    "GROUP_APIS",
    "RESPONSE_API_KEY",
    "TraceError",
    "Exchange",
    "read_exchanges",
    "first_difference",
    "coordinator_unavailable",
]

#: The classic group APIs, by key (``ApiKeys``).
GROUP_APIS = {11: "JoinGroup", 12: "Heartbeat", 13: "LeaveGroup", 14: "SyncGroup"}
#: The API key of each of groupsim's group answers (:mod:`protocol.group`).
RESPONSE_API_KEY: dict[type, int] = {
    pg.JoinGroupResponse: 11,
    pg.SyncGroupResponse: 14,
    pg.HeartbeatResponse: 12,
    pg.LeaveGroupResponse: 13,
}


class TraceError(InputError):
    """``trace.jsonl`` is missing, unreadable or not a trace (the message names file and line)."""


@dataclass(slots=True)
class Exchange:
    """One recorded group request and its answer (``response_*`` None when none came back);
    ``broker`` is the real broker's ``host:port`` its connection went to ("" when the trace
    does not say)."""

    conn: int
    t_ms: int
    api_key: int
    version: int
    correlation_id: int
    request_raw: bytes
    response_t_ms: int | None = None
    response_raw: bytes | None = None
    broker: str = ""

    @property
    def api(self) -> str:
        return GROUP_APIS.get(self.api_key) or NEXT_GEN_GROUP_APIS[self.api_key]


def _lines(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    try:
        handle = path.open("rb")
    except OSError as exc:
        raise TraceError(f"{path}: {exc.strerror or exc}") from None
    with handle:
        for lineno, line in enumerate(handle, 1):
            if not line.strip():
                continue
            try:
                entry = json.loads(line)
            except ValueError as exc:
                raise TraceError(f"{path}:{lineno}: not JSON ({exc})") from None
            if not isinstance(entry, dict):
                raise TraceError(f"{path}:{lineno}: expected an object")
            yield lineno, entry


def read_exchanges(path: Path) -> list[Exchange]:
    """The group exchanges of a ``trace.jsonl``, in request order, times in ms since the first
    line of the trace: the classic group APIs, and the heartbeats of the newer group protocols
    (:data:`~scenarios.record.frames.NEXT_GEN_GROUP_APIS`, which :func:`conform_coordinator`
    counts as skipped).

    Raises:
        TraceError: the file cannot be read or a line is not a trace entry.
    """
    exchanges: list[Exchange] = []
    open_requests: dict[tuple[int, int], Exchange] = {}
    brokers: dict[int, str] = {}  # conn -> the real broker it was opened to
    start: int | None = None
    for lineno, entry in _lines(path):
        t_ms = entry.get("t_ms")
        if not isinstance(t_ms, int):
            raise TraceError(f"{path}:{lineno}: no integer t_ms")
        start = t_ms if start is None else start
        detail = entry.get("detail")
        if entry.get("event") == "open" and isinstance(detail, str) and detail.startswith("to "):
            brokers[int(entry.get("conn", 0))] = detail[3:]
            continue
        api_key = entry.get("api_key")
        if (api_key not in GROUP_APIS and api_key not in NEXT_GEN_GROUP_APIS) or "raw" not in entry:
            continue
        try:
            raw = base64.b64decode(entry["raw"], validate=True)
            key = (int(entry["conn"]), int(entry["correlation_id"]))
            version = int(entry["version"])
        except (KeyError, TypeError, ValueError) as exc:
            raise TraceError(f"{path}:{lineno}: malformed frame entry ({exc})") from None
        if entry.get("dir") == "request":
            ex = Exchange(
                key[0], t_ms - start, api_key, version, key[1], raw, broker=brokers.get(key[0], "")
            )
            exchanges.append(ex)
            open_requests[key] = ex
        elif entry.get("dir") == "response":
            ex_open = open_requests.pop(key, None)
            if ex_open is not None:
                ex_open.response_t_ms = t_ms - start
                ex_open.response_raw = raw
    return exchanges


def first_difference(recorded: Any, ours: Any, path: str = "") -> tuple[str, Any, Any] | None:
    """The first field (dotted path) where two decoded answers differ, or None."""
    if isinstance(recorded, dict) and isinstance(ours, dict):
        for key in dict.fromkeys([*recorded, *ours]):  # the message's field order
            if key == "throttle_time":
                continue
            found = first_difference(recorded.get(key), ours.get(key), f"{path}.{key}")
            if found:
                return found
        return None
    if isinstance(recorded, list) and isinstance(ours, list):
        if len(recorded) != len(ours):
            return (f"{path}.length".lstrip("."), len(recorded), len(ours))
        for i, (a, b) in enumerate(zip(recorded, ours, strict=True)):
            found = first_difference(a, b, f"{path}[{i}]")
            if found:
                return found
        return None
    return None if recorded == ours else (path.lstrip("."), recorded, ours)


#: Errors a broker answers before the group's state machine runs
#: (``GroupCoordinatorService``/``CoordinatorRuntime``: the group's shard is not loaded).
_UNAVAILABLE = {
    14: "COORDINATOR_LOAD_IN_PROGRESS",
    15: "COORDINATOR_NOT_AVAILABLE",
    16: "NOT_COORDINATOR",
}


def coordinator_unavailable(ex: Exchange) -> str | None:
    """The name of the recorded answer's error when it is one of :data:`_UNAVAILABLE`."""
    if ex.response_raw is None:
        return None
    _, answer = decode_response(ex.response_raw, ex.api_key, ex.version)
    code = getattr(answer, "error_code", None)
    if code is None:
        return None
    return _UNAVAILABLE.get(int(getattr(code, "value", code)))
