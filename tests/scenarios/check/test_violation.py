"""scenarios.check.violation: the one typed violation every checker returns is the event log's
``violation`` record without its envelope, frozen, and encodes to the line the log holds."""

from __future__ import annotations

import msgspec
import pytest

from scenarios.check.violation import Violation, located
from scenarios.eventlog import kinds as k
from scenarios.eventlog.records import decode_kinds


def test_its_fields_are_the_violation_records_in_record_order() -> None:
    envelope = ("t_ms", "seq")
    record_fields = [f for f in k.Violation.__struct_encode_fields__ if f not in envelope]
    assert list(Violation.__struct_encode_fields__) == record_fields


def test_it_is_frozen_and_replace_makes_a_copy() -> None:
    found = Violation(invariant="double_ownership", detail="d", task="c-0", cause_seq=4)
    with pytest.raises(AttributeError):
        found.known_issue = "KAFKA-9184"  # type: ignore[misc]
    known = found.replace(known_issue="KAFKA-9184")
    assert found.known is None and known.known == "KAFKA-9184"
    assert known.cause_seq == 4


def test_fields_leave_unset_out_keep_none_and_follow_record_order() -> None:
    found = Violation(
        invariant="illegal_transition",
        detail="d",
        cause_seq=7,
        previous=None,
        to="Stable",
        from_="Empty",
        generation=2,
    )
    fields = found.fields()
    assert list(fields) == [
        *("invariant", "detail", "from", "to", "previous", "generation", "cause_seq")
    ]
    assert fields["previous"] is None
    line = msgspec.json.encode({"t_ms": 5, "seq": 8, "kind": "violation", **fields})
    (decoded,) = decode_kinds([msgspec.json.decode(line)], ("violation",))
    assert isinstance(decoded, k.Violation) and decoded.from_ == "Empty"
    at = located(5, found)
    assert at.t_ms == 5 and at.invariant == "illegal_transition" and at.fields() == fields
    assert list(at.report()) == ["t_ms", *fields] and at.report() == {"t_ms": 5, **fields}


def test_a_located_violation_is_a_violation_whose_t_ms_stays_out_of_its_fields() -> None:
    found = located(9, Violation(invariant="liveness", detail="d", tasks=["c-0"]))
    assert isinstance(found, Violation)
    grouped = found.replace(group="b")  # check_records names the group of a served log
    assert type(grouped) is type(found) and grouped.t_ms == 9
    assert "t_ms" not in grouped.fields()
    assert list(grouped.report()) == ["t_ms", "invariant", "detail", "tasks", "group"]


def test_an_unknown_field_is_a_type_error() -> None:
    with pytest.raises(TypeError):
        Violation(invariant="x", detail="d", no_such_field=1)  # type: ignore[call-arg]
