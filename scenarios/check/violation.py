"""The one typed shape of a violation every checker returns.

A checker's verdict is a list of :class:`Violation`: the rule it broke (``invariant``), one
line saying how (``detail``), the items involved, ``known_issue`` when a named upstream
behaviour explains it, and ``cause_seq``, the ``seq`` of the record that caused it. Its fields
are those of the event log's ``violation`` record (:class:`scenarios.eventlog.kinds.Violation`,
docs/event-log.md) without the envelope: the engine writes ``violation.fields()`` into the log
after the offending record, and ``groupsim check`` prints the same fields with the record's
``t_ms``. A field a violation does not carry is :data:`msgspec.UNSET` and stays out of its
JSON, so the encoded violation is byte-for-byte what the log holds.

Frozen: a checker that adds to a violation (a known issue, the group of a served log) makes a
new one with :meth:`Violation.replace`.

``groupsim check`` and the log re-checks of :mod:`scenarios.check.log_check` hand back
:class:`LocatedViolation` s: a violation with the ``t_ms`` of the record that caused it (the
envelope's time, kept off :class:`Violation` so its fields stay the record's without the
envelope); they become dicts only where they are written (:meth:`LocatedViolation.report`).
"""

from __future__ import annotations

from typing import Any, Self

import msgspec
from msgspec import UNSET, UnsetType

__all__ = ["LocatedViolation", "Violation", "located"]


class Violation(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """One broken rule. Field order is the ``violation`` record's, so :meth:`fields` encodes
    to the same line the event log holds; which items a violation names depends on
    ``invariant`` (docs/event-log.md, ``scenarios/check/*``). Times are virtual ms."""

    invariant: str
    detail: str
    from_: str | None | UnsetType = msgspec.field(default=UNSET, name="from")
    to: str | None | UnsetType = UNSET
    previous: str | None | UnsetType = UNSET
    task: str | UnsetType = UNSET
    connector: str | UnsetType = UNSET
    job: str | UnsetType = UNSET  # KIP-987 static placement: the job (connector or task)
    tasks: list[str] | UnsetType = UNSET
    connectors: list[str] | UnsetType = UNSET
    task_counts: dict[str, int] | UnsetType = UNSET
    connector_counts: dict[str, int] | UnsetType = UNSET
    role: str | UnsetType = UNSET
    member: str | None | UnsetType = UNSET
    member_id: str | UnsetType = UNSET
    group: str | None | UnsetType = UNSET  # the group the rule broke in (served logs name it)
    owners: list[str] | UnsetType = UNSET
    members: list[str] | UnsetType = UNSET  # static-member-kept: the gone static members
    generation: int | None | UnsetType = UNSET
    assignment_generation: int | None | UnsetType = UNSET
    group_generation: int | None | UnsetType = UNSET
    leader_id: str | None | UnsetType = UNSET
    group_leader_id: str | None | UnsetType = UNSET
    known_issue: str | UnsetType = UNSET
    # scheduled_delay (scenarios/check/scheduled_delay.py)
    delay_ms: int | UnsetType = UNSET
    max_delay_ms: int | UnsetType = UNSET
    scheduled_ms: int | UnsetType = UNSET
    # quiet_period_balance (scenarios/check/quiet_periods.py)
    quiet_from_ms: int | UnsetType = UNSET
    checked_at_ms: int | UnsetType = UNSET
    bound_ms: int | UnsetType = UNSET
    # the Kafka referee's coordinator answers (scenarios/referee/coordinator.py)
    referee: str | UnsetType = UNSET
    api: str | UnsetType = UNSET
    differs: str | UnsetType = UNSET
    cause_seq: int | None | UnsetType = UNSET

    def fields(self) -> dict[str, Any]:
        """The violation as the event log's ``violation`` record fields, in record order
        (unset fields left out)."""
        return msgspec.to_builtins(self)  # type: ignore[no-any-return]

    def replace(self, **changes: Any) -> Self:
        """A copy (of the same class) with ``changes`` (field names as attributes: ``from_``)."""
        return msgspec.structs.replace(self, **changes)

    @property
    def known(self) -> str | None:
        """The named upstream issue that explains it, or None."""
        return self.known_issue or None


class LocatedViolation(Violation, frozen=True, kw_only=True, omit_defaults=True):
    """A :class:`Violation` at ``t_ms``, the virtual time (ms) of the record that caused it
    (the end of the run for an end-of-run check): what ``groupsim check`` reports. Its
    :meth:`fields` are still the ``violation`` record's (``t_ms`` is the envelope's)."""

    t_ms: int

    def fields(self) -> dict[str, Any]:
        """The ``violation`` record fields, as :meth:`Violation.fields` (no ``t_ms``)."""
        fields = msgspec.to_builtins(self)
        del fields["t_ms"]
        return fields  # type: ignore[no-any-return]

    def report(self) -> dict[str, Any]:
        """``{"t_ms": t_ms, **fields()}``: the violation as ``groupsim check`` prints it."""
        return {"t_ms": self.t_ms, **self.fields()}

    def record(self) -> dict[str, Any]:
        """The ``violation`` record the event log holds for it, ``{"t_ms", "kind":
        "violation", **fields()}`` (``seq`` left to the caller, which places it)."""
        return {"t_ms": self.t_ms, "kind": "violation", **self.fields()}


def located(t_ms: int, violation: Violation) -> LocatedViolation:
    """``violation`` at ``t_ms`` (virtual ms), the time of the record that caused it."""
    return LocatedViolation(t_ms=t_ms, **msgspec.structs.asdict(violation))
