"""``groupsim check`` on a ``groupsim serve`` log judges the coordinator's KIP-394 pending
members (scenarios/check/coordinator_contracts.py): a JoinGroup answered MEMBER_ID_REQUIRED
whose client never rejoins is forgotten within its session timeout by groupsim's
coordinator, and reported as ``pending_member_kept`` when a fault planted in the coordinator
keeps it."""

from __future__ import annotations

import datetime
from pathlib import Path
from typing import Any

import pytest
import trio

pytest.importorskip("kio")

from kio.schema.errors import ErrorCode  # noqa: E402

from coordinator import session as coordinator_session  # noqa: E402
from scenarios.check.coordinator_contracts import SERVE_TIMER_SLACK_MS  # noqa: E402
from scenarios.check.log_check import check_log  # noqa: E402
from scenarios.serve import open_broker, wire  # noqa: E402

from .clients import options  # noqa: E402
from .test_wire import _request_frame, _roundtrip  # noqa: E402

SESSION_MS = 500  # the FAST coordinator's minimum


def _join_without_id() -> bytes:
    module = wire.module(11, 5, False)
    return _request_frame(
        11,
        5,
        3,
        "raw",
        group_id="g",
        session_timeout=datetime.timedelta(milliseconds=SESSION_MS),
        rebalance_timeout=datetime.timedelta(seconds=10),
        member_id="",
        group_instance_id=None,
        protocol_type="consumer",
        protocols=(module.JoinGroupRequestProtocol(name="range", metadata=b"\x00"),),
    )


async def _abandoned_pending_member(out: Path) -> None:
    """A client joins without a member id (v5: KIP-394), hears MEMBER_ID_REQUIRED and never
    comes back; the broker runs on past the session timeout plus the checker's slack."""
    with trio.fail_after(30):
        async with open_broker(options(), out) as broker:
            _, first = await _roundtrip(broker.port, 11, 5, _join_without_id())
            assert first.error_code == ErrorCode.member_id_required
            await trio.sleep((SESSION_MS + SERVE_TIMER_SLACK_MS + 500) / 1000)


def _kept(original: Any) -> Any:
    def _expire_heartbeat(self: Any, mid: str, now_ms: int, effects: Any) -> None:
        if mid in self.pending:
            return None  # the pending member is never forgotten
        return original(self, mid, now_ms, effects)

    return _expire_heartbeat


async def test_a_served_pending_member_is_forgotten(tmp_path: Path) -> None:
    await _abandoned_pending_member(tmp_path)
    found = check_log(tmp_path / "events.jsonl")
    assert [v for v in found if v.invariant == "pending_member_kept"] == []
    text = (tmp_path / "events.jsonl").read_text()
    assert '"member_pending_removed"' in text


async def test_check_reports_a_served_pending_member_kept(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(
        coordinator_session, "expire_heartbeat", _kept(coordinator_session.expire_heartbeat)
    )
    await _abandoned_pending_member(tmp_path)
    found = check_log(tmp_path / "events.jsonl")
    assert "pending_member_kept" in {v.invariant for v in found}
