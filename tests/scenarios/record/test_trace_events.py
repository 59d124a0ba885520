"""``groupsim record``'s event log, built from the group traffic the proxy sees
(scenarios/record/trace.py): what a real broker's answers become for ``groupsim check``."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

from scenarios.check.log_check import check_records
from scenarios.record.frames import RequestHead
from scenarios.record.trace import Recording


@dataclasses.dataclass(frozen=True)
class _Protocol:
    name: str
    metadata: bytes = b""


@dataclasses.dataclass(frozen=True)
class _Join:
    group_id: str
    member_id: str
    group_instance_id: str | None
    protocols: tuple[_Protocol, ...] = (_Protocol("range"),)


@dataclasses.dataclass(frozen=True)
class _Member:
    member_id: str
    group_instance_id: str | None
    metadata: bytes = b""


@dataclasses.dataclass(frozen=True)
class _JoinAnswer:
    error_code: int
    generation_id: int
    protocol_name: str
    leader: str
    member_id: str
    members: tuple[_Member, ...]
    skip_assignment: bool = False


def _join(rec: Recording, conn: int, label: str, req: _Join, answer: _JoinAnswer) -> None:
    head = RequestHead(api_key=11, api_version=9, correlation_id=conn, client_id=label)
    rec.frame(conn, label, head, "request", req, b"")
    rec.frame(conn, label, head, "response", answer, b"", request=req)


def test_a_static_leader_rejoining_a_stable_group_is_a_replacement_not_a_generation(
    tmp_path: Path,
) -> None:
    """A static leader restarted within its session (KIP-345) gets the generation it already
    leads back, with ``skip_assignment`` (KIP-814): a real 4.0.2 broker's answer, which the
    log once wrote as a second ``generation`` 1 that ``generation_regressed`` flagged."""
    rec = Recording(tmp_path, 0, "broker:9092", "127.0.0.1", 0)
    a1, b1, a2 = "instance-a-1", "instance-b-1", "instance-a-2"
    members = (_Member(a1, "instance-a"), _Member(b1, "instance-b"))
    _join(rec, 1, "sa", _Join("g", "", "instance-a"), _JoinAnswer(0, 1, "range", a1, a1, members))
    _join(rec, 2, "sb", _Join("g", "", "instance-b"), _JoinAnswer(0, 1, "range", a1, b1, ()))
    rejoined = (_Member(a2, "instance-a"), _Member(b1, "instance-b"))
    answer = _JoinAnswer(0, 1, "range", a2, a2, rejoined, skip_assignment=True)
    _join(rec, 3, "sa", _Join("g", "", "instance-a"), answer)
    # the next real rebalance is a generation again
    _join(rec, 3, "sa", _Join("g", a2, "instance-a"), _JoinAnswer(0, 2, "range", a2, a2, rejoined))
    rec.close()
    records = [json.loads(line) for line in (tmp_path / "events.jsonl").read_text().splitlines()]
    kinds = [(r["kind"], r.get("generation")) for r in records if r["kind"] != "wire_response"]
    assert [k for k in kinds if k[0] in ("generation", "member_replaced")] == [
        ("generation", 1),
        ("member_replaced", None),
        ("generation", 2),
    ]
    replaced = next(r for r in records if r["kind"] == "member_replaced")
    assert (replaced["member_id"], replaced["old_member_id"]) == (a2, a1)
    assert check_records(records) == []


def test_a_static_follower_rejoining_a_stable_group_is_a_replacement(tmp_path: Path) -> None:
    """A static follower restarted within its session (KIP-345) is answered, like a leader,
    with the generation it is in (``updateStaticMemberThenRebalanceOrCompleteJoin``), but as a
    follower: no member list, the leader's id. The log writes the new id as the
    ``member_replaced`` it is (the old id is fenced); the next rebalance is a generation
    again, and a follower's answer for it that comes before the leader's writes nothing."""
    rec = Recording(tmp_path, 0, "broker:9092", "127.0.0.1", 0)
    a1, b1, b2 = "instance-a-1", "instance-b-1", "instance-b-2"
    members = (_Member(a1, "instance-a"), _Member(b1, "instance-b"))
    _join(rec, 1, "sa", _Join("g", "", "instance-a"), _JoinAnswer(0, 1, "range", a1, a1, members))
    _join(rec, 2, "sb", _Join("g", "", "instance-b"), _JoinAnswer(0, 1, "range", a1, b1, ()))
    # sb restarted (no LeaveGroup): a new connection, no member id, the same instance id
    _join(rec, 3, "sb", _Join("g", "", "instance-b"), _JoinAnswer(0, 1, "range", a1, b2, ()))
    # the next rebalance: the follower's answer reaches the proxy before the leader's
    _join(rec, 3, "sb", _Join("g", b2, "instance-b"), _JoinAnswer(0, 2, "range", a1, b2, ()))
    rejoined = (_Member(a1, "instance-a"), _Member(b2, "instance-b"))
    _join(rec, 1, "sa", _Join("g", a1, "instance-a"), _JoinAnswer(0, 2, "range", a1, a1, rejoined))
    rec.close()
    records = [json.loads(line) for line in (tmp_path / "events.jsonl").read_text().splitlines()]
    kinds = [(r["kind"], r.get("generation")) for r in records]
    assert [k for k in kinds if k[0] in ("generation", "member_replaced")] == [
        ("generation", 1),
        ("member_replaced", None),
        ("generation", 2),
    ]
    replaced = next(r for r in records if r["kind"] == "member_replaced")
    assert (replaced["member"], replaced["member_id"], replaced["old_member_id"]) == (
        "sb",
        b2,
        b1,
    )
    assert check_records(records) == []


def test_a_cut_names_every_recorded_member_of_the_client_as_check_reads_them(
    tmp_path: Path,
) -> None:
    """``Proxy.cut("sc", ms)`` becomes one ``step`` (``action`` ``partition``) and one
    ``fault`` record per recorded member of client ``sc`` (``<client.id>#<connection>``, its
    ``sc-…`` clients too), so ``groupsim check``'s fault windows (``KnownIssueWindows``, keyed
    by member name) cover the members the partition cut off, and no other."""
    import msgspec

    from scenarios.check.known_windows import KnownIssueWindows
    from scenarios.eventlog.kinds import Step

    rec = Recording(tmp_path, 0, "broker:9092", "127.0.0.1", 0)
    labels = {3: ("sc#3", "sc"), 4: ("sc-StreamThread-1-consumer#4", "sc-StreamThread-1-consumer")}
    labels |= {5: ("sd#5", "sd"), 7: ("sc#7", "sc"), 8: ("scx#8", "scx")}
    for conn, (label, client) in labels.items():
        head = RequestHead(api_key=11, api_version=9, correlation_id=conn, client_id=client)
        rec.frame(conn, label, head, "request", _Join("g", "", None), b"")
    rec.at(1_000)
    rec.fault("partition", "sc", 3000)
    rec.close()
    records = [json.loads(line) for line in (tmp_path / "events.jsonl").read_text().splitlines()]
    cut = ["sc#3", "sc-StreamThread-1-consumer#4", "sc#7"]
    steps = [r for r in records if r["kind"] == "step"]
    assert [(r["action"], r["member"], r["duration_ms"], r["t_ms"]) for r in steps] == [
        ("partition", m, 3000, 1000) for m in cut
    ]
    assert [r["member"] for r in records if r["kind"] == "fault"] == cut
    windows = KnownIssueWindows()
    for r in steps:
        windows.on_step(msgspec.convert(r, Step))
    assert all(windows.could_not_hear(m, 2_000) for m in cut)
    assert not windows.could_not_hear("sd#5", 2_000)
    assert not windows.could_not_hear("scx#8", 2_000)


def test_a_cut_before_any_group_request_names_the_client(tmp_path: Path) -> None:
    rec = Recording(tmp_path, 0, "broker:9092", "127.0.0.1", 0)
    rec.fault("partition", "sc", 500)
    rec.close()
    records = [json.loads(line) for line in (tmp_path / "events.jsonl").read_text().splitlines()]
    assert [(r["kind"], r["member"]) for r in records if r["kind"] in ("step", "fault")] == [
        ("step", "sc"),
        ("fault", "sc"),
    ]
