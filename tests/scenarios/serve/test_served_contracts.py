"""``groupsim check`` on a ``groupsim serve`` log runs the contract checkers that apply to a
served session (scenarios/check/contracts.py): a KIP-345 static rejoin of a Stable group is
clean with groupsim's coordinator, and reported as ``static_rejoin_rebalanced`` when a fault
planted in the coordinator makes every static rejoin rebalance; a same-metadata rejoin in
CompletingRebalance is written as the wire tap's ``completing_join`` record, clean, and
reported as ``completing_rejoin_rebalanced`` under the planted fault that parks it."""

from __future__ import annotations

import datetime
import itertools
import json
from pathlib import Path

import pytest
import trio

pytest.importorskip("kio")

from kio.schema.errors import ErrorCode  # noqa: E402

from coordinator import join as coordinator_join  # noqa: E402
from coordinator.state import GroupState  # noqa: E402
from scenarios.check.log_check import check_log  # noqa: E402
from scenarios.serve import open_broker, wire  # noqa: E402
from scenarios.serve.broker import Broker  # noqa: E402
from tests.scenarios.campaigns.chaos.planted.kip_rules import KIP_RULE_BUGS  # noqa: E402
from tests.scenarios.check.logs import violation_names  # noqa: E402

from .clients import options  # noqa: E402
from .test_wire import _rejoin_until_replaced, _request_frame, _roundtrip  # noqa: E402


def _join(member_id: str, instance: str | None) -> bytes:
    module = wire.module(11, 5, False)
    return _request_frame(
        11,
        5,
        3,
        "raw",
        group_id="g",
        session_timeout=datetime.timedelta(seconds=10),
        rebalance_timeout=datetime.timedelta(seconds=10),
        member_id=member_id,
        group_instance_id=instance,
        protocol_type="consumer",
        protocols=(module.JoinGroupRequestProtocol(name="range", metadata=b"\x00"),),
    )


def _sync(member_id: str, generation: int, instance: str) -> bytes:
    module = wire.module(14, 3, False)
    return _request_frame(
        14,
        3,
        4,
        "raw",
        group_id="g",
        generation_id=generation,
        member_id=member_id,
        group_instance_id=instance,
        assignments=(module.SyncGroupRequestAssignment(member_id=member_id, assignment=b""),),
    )


async def _static_rejoin_session(out: Path) -> None:
    """A static member joins, syncs (the group is Stable) and rejoins with no member id, as a
    restarted process with the same ``group.instance.id`` does."""
    with trio.fail_after(30):
        async with open_broker(options(), out) as broker:
            _, first = await _roundtrip(broker.port, 11, 5, _join("", "i1"))
            assert first.error_code == ErrorCode.none
            _, synced = await _roundtrip(
                broker.port, 14, 3, _sync(first.member_id, first.generation_id, "i1")
            )
            assert synced.error_code == ErrorCode.none
            assert broker.snapshot("g").state == "Stable"
            await _rejoin_until_replaced(broker, "g", _join("", "i1"), first.member_id)


def _always_rebalance(original):  # type: ignore[no-untyped-def]
    def update(self, *args, **kwargs):  # type: ignore[no-untyped-def]
        saved = self.protocol_name
        if self.state is GroupState.STABLE:
            self.protocol_name = None  # "the elected protocol changed": always rebalance
        try:
            return original(self, *args, **kwargs)
        finally:
            if self.protocol_name is None:
                self.protocol_name = saved

    return update


async def test_a_served_static_rejoin_is_checked_clean(tmp_path: Path) -> None:
    await _static_rejoin_session(tmp_path)
    found = check_log(tmp_path / "events.jsonl")
    assert [v for v in found if v.invariant == "static_rejoin_rebalanced"] == []
    kinds = [line for line in (tmp_path / "events.jsonl").read_text().splitlines()]
    assert any('"member_replaced"' in line for line in kinds)


@pytest.mark.parametrize("slow_clock", [False, True], ids=["clock", "clock-ticking-mid-step"])
async def test_check_reports_a_served_static_rejoin_that_rebalances(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, slow_clock: bool
) -> None:
    name = "update_static_member_then_rebalance_or_complete_join"
    monkeypatch.setattr(coordinator_join, name, _always_rebalance(getattr(coordinator_join, name)))
    if slow_clock:
        # A loaded machine: the wall clock moves on while one coordinator step is carried
        # out. The step's records (member_replaced, then Stable -> PreparingRebalance) must
        # still share one t_ms, which is how the checker knows they are one step.
        ticks = itertools.count()
        now_ms = Broker.now_ms
        monkeypatch.setattr(Broker, "now_ms", lambda self: now_ms(self) + next(ticks))
    await _static_rejoin_session(tmp_path)
    found = check_log(tmp_path / "events.jsonl")
    assert "static_rejoin_rebalanced" in {v.invariant for v in found}


async def _completing_rejoin_session(out: Path) -> tuple[int, int]:
    """A static member joins (the group goes to CompletingRebalance: it leads and has not
    synced) and sends the same JoinGroup again, as a member whose JoinGroup answer was lost
    does. Returns the generations of the two answers."""
    with trio.fail_after(30):
        async with open_broker(options(), out) as broker:
            _, first = await _roundtrip(broker.port, 11, 5, _join("", "i1"))
            assert first.error_code == ErrorCode.none
            assert broker.snapshot("g").state == "CompletingRebalance"
            _, again = await _roundtrip(broker.port, 11, 5, _join(first.member_id, "i1"))
            assert again.error_code == ErrorCode.none
            return first.generation_id, again.generation_id


def _completing_joins(out: Path) -> list[dict[str, object]]:
    lines = (out / "events.jsonl").read_text().splitlines()
    return [r for r in map(json.loads, lines) if r["kind"] == "completing_join"]


async def test_a_served_same_metadata_rejoin_in_completing_rebalance_is_tapped_and_clean(
    tmp_path: Path,
) -> None:
    generations = await _completing_rejoin_session(tmp_path)
    assert generations == (1, 1)  # classicGroupJoinExistingMember: the current generation
    [tapped] = _completing_joins(tmp_path)
    assert tapped["same_metadata"] is True
    assert (tapped["error"], tapped["generation"], tapped["group_generation"]) == ("NONE", 1, 1)
    assert str(tapped["member"]).startswith("raw#")
    names = violation_names(check_log(tmp_path / "events.jsonl"))
    assert not [n for n in names if n.startswith("completing_rejoin")]


async def test_check_reports_a_served_completing_rejoin_that_rebalances(tmp_path: Path) -> None:
    [bug] = [b for b in KIP_RULE_BUGS if b.name == "coordinator-completing-rejoin-rebalances"]
    with bug.applied():
        generations = await _completing_rejoin_session(tmp_path)
    assert generations == (1, 2)  # the planted fault: a new join phase
    [tapped] = _completing_joins(tmp_path)
    assert tapped["same_metadata"] is True and tapped["group_generation"] == 1
    assert tapped["generation"] == 2  # its own join phase, complete at once: the only member
    names = violation_names(check_log(tmp_path / "events.jsonl"))
    assert "completing_rejoin_rebalanced" in names
