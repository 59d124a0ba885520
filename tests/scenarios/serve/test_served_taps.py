"""``groupsim serve`` logs its wire taps with the group they reached, as its other coordinator
records: one coordinator per group id, so a served group's rules meet its own taps
(``session_expired_after_heartbeat`` pairs a tapped Heartbeat with the group's removals). Raw
wire frames (kio), no real client."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import trio

pytest.importorskip("kio")

from kio.schema.errors import ErrorCode  # noqa: E402

from scenarios.serve import open_broker  # noqa: E402

from .clients import options  # noqa: E402
from .test_served_contracts import _join, _sync  # noqa: E402
from .test_wire import _request_frame, _roundtrip  # noqa: E402


def _heartbeat(member_id: str, generation: int, instance: str) -> bytes:
    return _request_frame(
        12,
        3,
        5,
        "raw",
        group_id="g",
        generation_id=generation,
        member_id=member_id,
        group_instance_id=instance,
    )


async def test_a_served_heartbeat_of_a_rebalance_is_tapped_with_its_group(tmp_path: Path) -> None:
    """A Heartbeat reaching a served group in PreparingRebalance is logged
    (``rebalance_heartbeat``) with the group it reached, as the group's other coordinator
    records are, so ``session_expired_after_heartbeat`` meets it with the group's removals."""
    with trio.fail_after(30):
        async with open_broker(options(), tmp_path) as broker:
            _, first = await _roundtrip(broker.port, 11, 5, _join("", "i1"))
            sync = _sync(first.member_id, first.generation_id, "i1")
            _, synced = await _roundtrip(broker.port, 14, 3, sync)
            assert synced.error_code == ErrorCode.none
            async with trio.open_nursery() as nursery:  # i2's JoinGroup waits on the rebalance
                nursery.start_soon(_roundtrip, broker.port, 11, 5, _join("", "i2"))
                while broker.snapshot("g").state != "PreparingRebalance":
                    await trio.sleep(0.01)
                beat = _heartbeat(first.member_id, first.generation_id, "i1")
                _, answer = await _roundtrip(broker.port, 12, 3, beat)
                nursery.cancel_scope.cancel()
    assert answer.error_code == ErrorCode.rebalance_in_progress
    lines = (tmp_path / "events.jsonl").read_text().splitlines()
    tapped = [r for r in map(json.loads, lines) if r["kind"] == "rebalance_heartbeat"]
    assert [(r["group"], r["member_id"]) for r in tapped] == [("g", first.member_id)]
