"""``groupsim serve`` writes the wire tap's ``bounded_join`` record, as the engine does, when the
broker's ``[coordinator]`` settings are not Kafka's defaults (``scenarios/sim/wire_tap.py``), so
``groupsim check`` judges a served session by the coordinator-config rules of
``scenarios/check/coordinator_config_contracts.py`` (KIP-389's ``group.max.size``, the session
bounds of ``GroupCoordinatorService#joinGroup``): clean with groupsim's coordinator, and
``max_size_exceeded`` under the planted ``coordinator-max-size-never-enforced``. Raw wire
frames (kio), no real client."""

from __future__ import annotations

import datetime
import json
from pathlib import Path

import pytest
import trio

pytest.importorskip("kio")

from kio.schema.errors import ErrorCode  # noqa: E402

from coordinator.config import CoordinatorConfig  # noqa: E402
from scenarios.check.log_check import check_log  # noqa: E402
from scenarios.serve import open_broker, wire  # noqa: E402
from scenarios.serve.broker import Broker  # noqa: E402
from tests.scenarios.campaigns.chaos.planted.coordinator_config import (  # noqa: E402
    COORDINATOR_CONFIG_BUGS,
)
from tests.scenarios.check.logs import violation_names  # noqa: E402

from .clients import FAST, options  # noqa: E402
from .test_wire import _request_frame, _roundtrip  # noqa: E402

#: group.max.size 1 (KIP-389), session bounds [500 ms, 60 s], a 200 ms initial delay.
BOUNDED = CoordinatorConfig(
    initial_rebalance_delay_ms=FAST.initial_rebalance_delay_ms,
    min_session_timeout_ms=FAST.min_session_timeout_ms,
    max_session_timeout_ms=FAST.max_session_timeout_ms,
    max_size=1,
)
_CONFIG_RULES = {
    "session_timeout_accepted",
    "session_timeout_refused",
    "max_size_exceeded",
    "max_size_refused_with_room",
    "generation_over_max_size",
    "initial_delay_not_extended",
}


def _join(instance: str, session_ms: int = 10_000) -> bytes:
    module = wire.module(11, 5, False)
    return _request_frame(
        11,
        5,
        3,
        instance,
        group_id="g",
        session_timeout=datetime.timedelta(milliseconds=session_ms),
        rebalance_timeout=datetime.timedelta(seconds=10),
        member_id="",
        group_instance_id=instance,
        protocol_type="consumer",
        protocols=(module.JoinGroupRequestProtocol(name="range", metadata=b"\x00"),),
    )


def _bounded(broker: Broker) -> list[dict[str, object]]:
    return [r for r in broker.log.records if r["kind"] == "bounded_join"]


async def _send_until_tapped(broker: Broker, frame: bytes) -> None:
    """Send a JoinGroup and return once its ``bounded_join`` is logged: the answer may be
    parked for a join phase."""
    before = len(_bounded(broker))
    async with trio.open_nursery() as nursery:
        nursery.start_soon(_roundtrip, broker.port, 11, 5, frame)
        while len(_bounded(broker)) == before:
            await trio.sleep(0.01)
        nursery.cancel_scope.cancel()


async def _max_size_session(out: Path, *, refused: bool) -> None:
    """Static member ``i1`` joins a group of ``group.max.size`` 1 (the group waits for its
    SyncGroup), ``i2`` asks to join it too (refused GROUP_MAX_SIZE_REACHED when ``refused``;
    else the planted fault lets it in and its answer is parked), and ``i3`` asks with a
    100 ms ``session.timeout.ms``, below ``group.min.session.timeout.ms``."""
    with trio.fail_after(30):
        async with open_broker(options(coordinator=BOUNDED), out) as broker:
            _, first = await _roundtrip(broker.port, 11, 5, _join("i1"))
            assert first.error_code == ErrorCode.none
            if refused:
                _, second = await _roundtrip(broker.port, 11, 5, _join("i2"))
                assert second.error_code == ErrorCode.group_max_size_reached
            else:
                await _send_until_tapped(broker, _join("i2"))
            _, third = await _roundtrip(broker.port, 11, 5, _join("i3", session_ms=100))
            assert third.error_code == ErrorCode.invalid_session_timeout


def _records(out: Path, kind: str) -> list[dict[str, object]]:
    lines = (out / "events.jsonl").read_text().splitlines()
    return [r for r in map(json.loads, lines) if r["kind"] == kind]


async def test_a_served_session_with_non_default_coordinator_settings_writes_bounded_join(
    tmp_path: Path,
) -> None:
    await _max_size_session(tmp_path, refused=True)
    tapped = _records(tmp_path, "bounded_join")
    assert [(r["error"], r["state"], r["size"]) for r in tapped] == [
        (None, "Empty", 0),  # let in: parked for the initial delay
        ("GROUP_MAX_SIZE_REACHED", "CompletingRebalance", 1),
        ("INVALID_SESSION_TIMEOUT", "CompletingRebalance", 1),
    ]
    first = tapped[0]
    assert (first["max_size"], first["min_session_timeout_ms"]) == (1, 500)
    assert (first["max_session_timeout_ms"], first["session_timeout_ms"]) == (60_000, 10_000)
    assert str(first["member"]).startswith("i1#")
    # tagged with its group as every coordinator record of a served log (one coordinator per
    # group id): so the group's generations are judged against it (generation_over_max_size)
    assert {r["group"] for r in tapped} == {r["group"] for r in _records(tmp_path, "generation")}
    names = set(violation_names(check_log(tmp_path / "events.jsonl")))
    assert not names & _CONFIG_RULES


async def test_check_reports_a_served_group_taking_a_member_over_group_max_size(
    tmp_path: Path,
) -> None:
    [bug] = [b for b in COORDINATOR_CONFIG_BUGS if b.name == "coordinator-max-size-never-enforced"]
    with bug.applied():
        await _max_size_session(tmp_path, refused=False)
    tapped = _records(tmp_path, "bounded_join")
    assert [(r["error"], r["size"]) for r in tapped][:2] == [(None, 0), (None, 1)]  # i2 let in
    names = violation_names(check_log(tmp_path / "events.jsonl"))
    assert "max_size_exceeded" in names


async def test_default_coordinator_settings_write_no_bounded_join(tmp_path: Path) -> None:
    defaults = CoordinatorConfig(initial_rebalance_delay_ms=200)  # only the delay differs
    with trio.fail_after(30):
        async with open_broker(options(coordinator=defaults), tmp_path) as broker:
            _, first = await _roundtrip(broker.port, 11, 5, _join("i1", session_ms=10_000))
            assert first.error_code == ErrorCode.none
    assert _records(tmp_path, "bounded_join") == []
