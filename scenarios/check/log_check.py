"""``groupsim check``: re-check the invariants of a saved event log.

The recorded ``violation`` records are ignored; every other record is fed again to a fresh
:class:`scenarios.check.invariants.InvariantChecker`, and the end-of-run liveness/balance check of
:func:`scenarios.check.liveness.liveness_violations` is repeated on the whole log, and so are
the protocol checkers of :mod:`scenarios.check.protocol_checkers` (each violation at its
offending record's time).

Each function hands back :class:`scenarios.check.violation.LocatedViolation` s (a typed
violation with ``t_ms``); the callers that write JSON or print turn them into dicts
(:meth:`~scenarios.check.violation.LocatedViolation.report`).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from scenarios import kinds
from scenarios.check.consumer_ownership import consumer_log_violations
from scenarios.check.invariants import InvariantChecker
from scenarios.check.liveness import liveness_violations
from scenarios.check.metrics import connect_summary
from scenarios.check.protocol_checkers import protocol_violations
from scenarios.check.violation import LocatedViolation, located
from scenarios.eventlog import LogFormatError, read_jsonl
from scenarios.eventlog.kinds import Violation as Violated
from scenarios.eventlog.records import decode_log
from scenarios.input.limits import LimitExceeded, check_limit, limit

__all__ = ["check_log", "check_records", "check_group_log", "check_consumer_log"]


def check_records(records: Sequence[dict[str, Any]]) -> list[LocatedViolation]:
    """Re-check a log's records (see :func:`check_log`).

    A log of several groups (``groupsim serve`` tags coordinator records with ``group``) is
    checked one group at a time: each group's records, with the records that name no group;
    each violation then names its ``group``, and they come sorted by ``t_ms``.
    """
    groups = _group_ids(records)
    if len(groups) <= 1:
        return _check_one_group(records)
    found: list[LocatedViolation] = []
    for group in groups:
        own = [r for r in records if r.get("group", group) == group]
        found.extend(v.replace(group=group) for v in _check_one_group(own))
    found.sort(key=lambda v: v.t_ms)
    return found


def _group_ids(records: Sequence[dict[str, Any]]) -> list[str]:
    """The distinct ``group`` values of a log, in order of appearance."""
    return list(dict.fromkeys(r["group"] for r in records if "group" in r))


def _check_one_group(records: Sequence[dict[str, Any]]) -> list[LocatedViolation]:
    """One group's log, checked by its kind (:meth:`scenarios.kinds.GroupKind.log_violations`:
    the ``run_start`` record's ``app``, when it is the first record)."""
    return kinds.of_log(records, within=1).log_violations(records)


def check_group_log(records: Sequence[dict[str, Any]]) -> list[LocatedViolation]:
    """A Connect or Streams group's log: the invariant checker fed again (the online checker:
    record dicts, as they are emitted), the end-of-run liveness/balance check and the protocol
    checkers (each violation with ``t_ms``) over the log decoded once
    (:func:`scenarios.eventlog.records.decode_log`).

    Raises:
        msgspec.ValidationError: a record does not match its kind's Struct.
    """
    typed = decode_log(records)
    checker = InvariantChecker()
    found: list[LocatedViolation] = []
    for record, r in zip(records, typed, strict=True):
        if isinstance(r, Violated):
            continue
        for violation in checker.feed(record):
            found.append(located(r.t_ms, violation))
    end_ms = typed[-1].t_ms if typed else 0
    for violation in checker.finish():
        found.append(located(end_ms, violation))
    live = [r for r in typed if not isinstance(r, Violated)]
    summary = connect_summary(live)
    if summary.unsettled:
        for ended in liveness_violations(live, summary):
            found.append(located(end_ms, ended))
    by_seq: dict[Any, int] = {r.seq: r.t_ms for r in live}
    for broken in protocol_violations(_live_dicts(records), live):
        found.append(located(by_seq.get(broken.cause_seq, end_ms), broken))
    return found


def _live_dicts(records: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """``records`` without the ``violation`` records (what the protocol checkers index by
    kind)."""
    return [r for r in records if r["kind"] != "violation"]


def check_log(path: str | Path) -> list[LocatedViolation]:
    """Re-read a saved ``events.jsonl`` and re-run the invariant checks on it.

    Returns:
        the violations found, in log order: each a
        :class:`scenarios.check.violation.LocatedViolation` whose ``t_ms`` is the time of the
        offending record (the end of the run for liveness/balance), with ``invariant``,
        ``detail`` and the items involved (unset when a rule names none); safety violations
        also carry ``cause_seq``, the offending record's ``seq``. ``v.report()`` is the dict
        ``groupsim check`` prints, ``{"t_ms": ..., "invariant": ..., "detail": ..., ...}``.

    Every record is validated against its kind's Struct (:mod:`scenarios.eventlog.records`)
    first: an unknown kind or field, or a value of the wrong type, is a ``LogFormatError``.

    The file and each line are bounded first (the ``log_bytes`` and ``log_line_bytes``
    limits, docs/limits.md).

    Raises:
        scenarios.eventlog.LogFormatError: the file is not a valid event log, or is larger
            than a limit.
        OSError: the file cannot be read.
    """
    path = Path(path)
    try:
        check_limit(str(path), path.stat().st_size, "log_bytes")
        max_line = limit("log_line_bytes")
    except LimitExceeded as exc:
        raise LogFormatError(str(exc)) from None
    return check_records(read_jsonl(path, validate=True, max_line_bytes=max_line))


def check_consumer_log(records: Sequence[dict[str, Any]]) -> list[LocatedViolation]:
    """A consumer group's log: the ownership rules and the protocol checkers
    (:func:`scenarios.check.consumer_ownership.consumer_log_violations`), over the log
    decoded once (:func:`scenarios.eventlog.records.decode_log`).

    Raises:
        msgspec.ValidationError: a record does not match its kind's Struct.
    """
    live = _live_dicts(records)
    typed = decode_log(live)
    end_ms = int(records[-1]["t_ms"]) if records else 0
    by_seq: dict[Any, int] = {r.seq: r.t_ms for r in typed}
    return [
        located(by_seq.get(v.cause_seq, end_ms), v) for v in consumer_log_violations(live, typed)
    ]
