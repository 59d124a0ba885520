"""Helpers to write event logs by hand in tests."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import msgspec
from msgspec import inspect

from scenarios.check.violation import Violation
from scenarios.eventlog.records import RECORD_TYPES, LogRecord, decode_log


class Log:
    """Builds records like the runtime does: ``log.add(t_ms, kind, **fields)``. The helpers
    write complete records (``groupsim check`` validates them against
    ``scenarios/eventlog/records.py``)."""

    def __init__(self) -> None:
        self.records: list[dict[str, Any]] = []

    def add(self, t_ms: int, kind: str, **fields: Any) -> dict[str, Any]:
        record = {"t_ms": t_ms, "seq": len(self.records), "kind": kind, **fields}
        self.records.append(record)
        return record

    def start(self, connectors: dict[str, int], workers: list[str]) -> Log:
        self.add(
            0,
            "run_start",
            log_version=1,
            scenario="t",
            seed=0,
            workers=workers,
            connectors=connectors,
        )
        self.add(0, "config", offset=1, connectors=connectors)
        for w in workers:
            self.add(0, "member_start", member=w, config={})
        return self

    def generation(
        self, t: int, gen: int, protocol: str | None = "sessioned", leader_id: str | None = "w1-1"
    ) -> None:
        self.add(
            t,
            "generation",
            generation=gen,
            protocol=protocol,
            leader="w1",
            leader_id=leader_id,
            members=[],
            member_ids=[],
        )

    def assignment(self, t: int, member: str, gen: int, leader_id: str = "w1-1") -> None:
        self.add(
            t,
            "assignment",
            member=member,
            member_id=f"{member}-1",
            generation=gen,
            protocol="sessioned",
            leader_id=leader_id,
            error=0,
            config_offset=1,
            connectors=[],
            tasks=[],
            revoked_connectors=[],
            revoked_tasks=[],
            delay_ms=0,
        )

    def run_task(self, t: int, member: str, task: str, gen: int, start_ms: int = 0) -> None:
        self.add(t, "task_start", member=member, task=task, generation=gen)
        self.add(t + start_ms, "task_started", member=member, task=task, generation=gen)

    def stop_task(
        self, t: int, member: str, task: str, stop_ms: int = 0, reason: str = "revoked"
    ) -> None:
        self.add(t, "task_stop", member=member, task=task, reason=reason)
        self.add(t + stop_ms, "task_stopped", member=member, task=task, reason=reason)

    def run_connector(self, t: int, member: str, connector: str, gen: int) -> None:
        self.add(t, "connector_start", member=member, connector=connector, generation=gen)
        self.add(t, "connector_started", member=member, connector=connector, generation=gen)


def numbered(*records: dict[str, Any]) -> list[dict[str, Any]]:
    """``records`` as a log: each with its ``seq`` (its index), the rest as written."""
    return [{"seq": i, **r} for i, r in enumerate(records)]


def violation_names(violations: Sequence[Violation]) -> list[str]:
    """The ``invariant`` of each violation, in order: as a checker returns them, or as
    ``groupsim check`` finds them (its located violations)."""
    return [v.invariant for v in violations]


def _neutral(t: inspect.Type) -> Any:
    """A value of type ``t`` that says nothing: None, "", 0, False, empty, the first literal."""
    if isinstance(t, inspect.UnionType):
        if any(isinstance(a, inspect.NoneType) for a in t.types):
            return None
        return _neutral(t.types[0])
    if isinstance(t, inspect.LiteralType):
        return t.values[0]
    if isinstance(t, inspect.StructType):
        return {f.encode_name: _neutral(f.type) for f in t.fields if f.required}
    neutral = {
        inspect.StrType: "",
        inspect.IntType: 0,
        inspect.FloatType: 0.0,
        inspect.BoolType: False,
        inspect.ListType: [],
        inspect.DictType: {},
    }
    return neutral[type(t)]  # type: ignore[index]


def complete(records: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Hand-written ``records`` made whole for the log's Structs: a missing ``seq`` is the
    record's index, a missing required field a neutral value of its type (:func:`_neutral`),
    so a test names only what it is about."""
    out = []
    for i, r in enumerate(records):
        info = inspect.type_info(RECORD_TYPES[r["kind"]])
        assert isinstance(info, inspect.StructType)
        filled = {f.encode_name: _neutral(f.type) for f in info.fields if f.required}
        out.append({**filled, "seq": i, **r})
    return out


def typed(records: Sequence[dict[str, Any]]) -> list[LogRecord]:
    """Hand-written ``records`` (:func:`complete`) decoded into their Structs, for a checker
    that reads typed records."""
    whole = complete(records)
    try:
        return decode_log(whole)
    except msgspec.ValidationError as exc:  # a test's own mistake: say which record
        raise AssertionError(f"{exc}: {whole}") from None


def over_dicts(
    checker: Callable[[Sequence[LogRecord]], list[Violation]],
) -> Callable[[Sequence[dict[str, Any]]], list[Violation]]:
    """A checker over typed records (``reads_typed``) run on hand-written records
    (:func:`typed`), as a test writes them."""

    def run(records: Sequence[dict[str, Any]]) -> list[Violation]:
        return checker(typed(records))

    return run
