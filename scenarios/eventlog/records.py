"""Typed event-log records: one msgspec Struct per record kind, a tagged union on ``kind``.

The log itself stays a list of dicts (:mod:`scenarios.eventlog.log`); the Structs of
:mod:`scenarios.eventlog.kinds`, :mod:`scenarios.eventlog.kinds_coordinator`,
:mod:`scenarios.eventlog.kinds_connect`,
:mod:`scenarios.eventlog.kinds_streams`, :mod:`scenarios.eventlog.kinds_consumer` and
:mod:`scenarios.eventlog.kinds_serve` (``groupsim serve``) are its closed schema
(log_version 1). Every record is ``t_ms`` (virtual ms), ``seq``, ``kind``, then the
kind's fields in the order the emitters write them. A field that some records of a kind carry
and others do not defaults to :data:`msgspec.UNSET`, so an absent key stays absent and an
explicit ``null`` stays ``null`` when a record is re-encoded (:func:`record_to_dict`).
``docs/event-log.md`` says what each kind means; ``docs/event-log.schema.json`` is
:func:`log_schema`'s output.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Iterator, Mapping, Sequence
from typing import Any, cast

import msgspec

from scenarios.eventlog import kinds as k
from scenarios.eventlog import kinds_connect as kc
from scenarios.eventlog import kinds_consumer as ku
from scenarios.eventlog import kinds_coordinator as kg
from scenarios.eventlog import kinds_serve as kv
from scenarios.eventlog import kinds_streams as ks

__all__ = [
    "DecodedLog",
    "LogRecord",
    "RECORD_TYPES",
    "decode_kinds",
    "decode_log",
    "decode_record",
    "log_schema",
    "record_to_dict",
]

# ----------------------------------------------------------------------------- the union

LogRecord = (
    k.RunStart
    | k.Phase
    | k.Step
    | k.Config
    | k.Fault
    | k.LateRequest
    | k.RunEnd
    | k.GroupState
    | k.Generation
    | k.GroupLoaded
    | k.MemberAdded
    | k.MemberRemoved
    | k.MemberStart
    | k.MemberStop
    | k.MemberCrash
    | k.MemberFatal
    | k.JoinGroupRequest
    | k.JoinGroupResponse
    | k.SyncGroupRequest
    | k.SyncGroupResponse
    | k.HeartbeatRequest
    | k.HeartbeatResponse
    | k.RebalanceHeartbeat
    | k.CompletingHeartbeat
    | k.LeaveGroup
    | k.TimerFired
    | k.CoordinatorUnknown
    | k.CoordinatorFound
    | k.Assignor
    | k.Assignment
    | k.Revoke
    | kc.ConnectorStart
    | kc.ConnectorStarted
    | kc.ConnectorStop
    | kc.ConnectorStopped
    | kc.TaskStart
    | kc.TaskStarted
    | kc.TaskStop
    | kc.TaskStopped
    | kc.ConnectorStartFailed
    | kc.TaskStartFailed
    | kc.StaticConfigIgnored
    | kc.SessionKey
    | kc.InternalRequest
    | kc.InternalRequestVerified
    | kc.InternalRequestRejected
    | kc.HerderStall
    | kc.ProtocolDowngrade
    | ks.SubscriptionVersionUpdate
    | ks.StreamsAssignment
    | ks.ProbingRebalanceScheduled
    | ks.ActiveTaskStart
    | ks.ActiveTaskRunning
    | ks.ActiveTaskStopped
    | ks.StandbyTaskStart
    | ks.StandbyTaskCaughtUp
    | ks.StandbyTaskStopped
    | ks.StreamThreadStall
    | ku.ConsumerAssignor
    | ku.ConsumerAssignment
    | ku.PartitionsRevoked
    | ku.PartitionsLost
    | ku.PollStall
    | ku.PollTimeout
    | ku.JoinTimeout
    | ku.SubscriptionChanged
    | ku.PartitionsAdded
    | k.Violation
    | k.MemberReplaced
    | kg.CompletingJoin
    | kg.BoundedJoin
    | kg.MemberPending
    | kg.MemberPendingRemoved
    | kg.JoinRescheduled
    | kg.PendingSyncComplete
    | kg.CoordinatorOpened
    | kg.CoordinatorRequest
    | kg.CoordinatorResponse
    | kg.CoordinatorTimer
    | kv.Listening
    | kv.WireRequest
    | kv.WireResponse
    | kv.ConnectionErrorRecord
    | kv.AnswerDropped
    | kv.OffsetCommit
)

#: ``{kind: Struct}`` for every record kind.
RECORD_TYPES: dict[str, type[k._Rec]] = {
    cls.__struct_config__.tag: cls  # type: ignore[misc]
    for cls in LogRecord.__args__  # type: ignore[attr-defined]
}


def decode_record(record: dict[str, Any]) -> LogRecord:
    """Validate a record dict against its kind's Struct.

    Raises:
        msgspec.ValidationError: unknown ``kind``, an unknown or missing field, or a value of
            the wrong type (the message names the field as ``$.field``).
    """
    return msgspec.convert(record, LogRecord)  # type: ignore[arg-type]


def decode_kinds(
    records: Iterable[Mapping[str, Any]], kinds: Collection[str]
) -> Iterator[LogRecord]:
    """The records of ``kinds`` among ``records`` (dicts of the log), in order, each decoded
    into its kind's Struct; records of other kinds are skipped undecoded. Decoding into the
    one class costs about a microsecond (into the union, ``decode_record``, ~100 times that).

    Raises:
        msgspec.ValidationError: a record of ``kinds`` does not match its Struct.
    """
    for record in records:
        kind = record.get("kind")
        if kind in kinds:
            yield cast(LogRecord, msgspec.convert(record, RECORD_TYPES[kind]))  # type: ignore[index]


def decode_log(records: Iterable[Mapping[str, Any]]) -> list[LogRecord]:
    """Every record of a log (dicts, in order) decoded into its kind's Struct: what the
    end-of-run checkers read, decoded once per log (each record into its one class by its
    ``kind``, about a microsecond each, rather than through the union).

    Raises:
        KeyError: a record of an unknown ``kind``.
        msgspec.ValidationError: a record does not match its kind's Struct.
    """
    types = RECORD_TYPES
    convert = msgspec.convert
    return [
        convert(record, types[record["kind"]])  # type: ignore[misc]
        for record in records
    ]


class DecodedLog:
    """:func:`decode_log` of a log that grows by appends between calls, each record decoded
    once: :meth:`of` decodes only the records added since its last call when it is given the
    same list, grown (the engine's ``EventLog.records``: the runner checks the log at the end
    of a run and summarizes it again after the checks' records and ``run_end``). Any other
    list is decoded from its start."""

    __slots__ = ("_records", "_typed", "_last")

    def __init__(self) -> None:
        self._records: Sequence[Mapping[str, Any]] | None = None
        self._typed: list[LogRecord] = []
        self._last: Mapping[str, Any] | None = None

    def of(self, records: Sequence[Mapping[str, Any]]) -> list[LogRecord]:
        """``decode_log(records)`` (a new list).

        Raises:
            KeyError: a record of an unknown ``kind``.
            msgspec.ValidationError: a record does not match its kind's Struct.
        """
        done = len(self._typed)
        grown = records is self._records and len(records) >= done
        if not grown or (done and records[done - 1] is not self._last):
            self._records, self._typed, done = records, [], 0
        self._typed.extend(decode_log(records[done:]))
        self._last = records[-1] if records else None
        return list(self._typed)

    def release_at_end(self, records: Sequence[Mapping[str, Any]]) -> None:
        """Let the decoded records go once ``records`` ends with ``run_end`` (nothing more will
        be appended; a run's kind lives on in a reference cycle with its engine, and Structs
        held until a full collection cost every later collection): a later :meth:`of`
        decodes from the start."""
        if records and records[-1]["kind"] == "run_end":
            self._records, self._typed, self._last = None, [], None


def record_to_dict(record: LogRecord) -> dict[str, Any]:
    """The record as the event log writes it: ``t_ms``, ``seq``, ``kind``, then the kind's
    fields in definition order; UNSET fields absent, ``None`` as ``null``."""
    fields = msgspec.to_builtins(record)
    kind = fields.pop("kind")
    out = {"t_ms": fields.pop("t_ms"), "seq": fields.pop("seq"), "kind": kind}
    out.update(fields)
    return out


def log_schema() -> dict[str, Any]:
    """The JSON Schema (2020-12) of one event-log line: the tagged union over every kind."""
    schema: dict[str, Any] = msgspec.json.schema(LogRecord)  # type: ignore[arg-type]
    schema = {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": "groupsim event-log record (log_version 1)",
        "description": (
            "One line of events.jsonl. Generated from scenarios/eventlog/records.py; "
            "see docs/event-log.md."
        ),
        **schema,
    }
    return schema
