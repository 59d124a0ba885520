"""``groupsim check`` judges a served SyncGroup of a replaced static member id by
``sync_not_fenced`` (scenarios/check/fencing_contracts.py): a process's SyncGroup sent with
the member id another process took over (KIP-345) is answered FENCED_INSTANCE_ID by
groupsim's coordinator (clean), UNKNOWN_MEMBER_ID under the planted
``coordinator-sync-ignores-fencing`` (reported). Raw wire frames (kio), no real client."""

from __future__ import annotations

from pathlib import Path

import pytest
import trio

pytest.importorskip("kio")

from kio.schema.errors import ErrorCode  # noqa: E402

from scenarios.check.log_check import check_log  # noqa: E402
from scenarios.serve import open_broker  # noqa: E402
from tests.scenarios.campaigns.chaos.planted import by_name  # noqa: E402
from tests.scenarios.check.logs import violation_names  # noqa: E402

from .clients import options  # noqa: E402
from .test_served_contracts import _join, _sync  # noqa: E402
from .test_wire import _rejoin_until_replaced, _roundtrip  # noqa: E402


async def _zombie_sync_session(out: Path) -> ErrorCode:
    """Static ``i1`` joins and syncs; a second process joins as ``i1`` (the coordinator
    replaces the member id); the first sends SyncGroup with its old id. Its answer's error."""
    with trio.fail_after(30):
        async with open_broker(options(), out) as broker:
            _, first = await _roundtrip(broker.port, 11, 5, _join("", "i1"))
            old = first.member_id
            _, synced = await _roundtrip(broker.port, 14, 3, _sync(old, first.generation_id, "i1"))
            assert synced.error_code == ErrorCode.none
            await _rejoin_until_replaced(broker, "g", _join("", "i1"), old)
            _, zombie = await _roundtrip(broker.port, 14, 3, _sync(old, first.generation_id, "i1"))
            return zombie.error_code


async def test_a_served_sync_group_of_a_replaced_member_id_is_fenced_and_clean(
    tmp_path: Path,
) -> None:
    assert await _zombie_sync_session(tmp_path) == ErrorCode.fenced_instance_id
    assert "sync_not_fenced" not in violation_names(check_log(tmp_path / "events.jsonl"))


async def test_check_reports_a_served_sync_group_that_ignores_fencing(tmp_path: Path) -> None:
    with by_name("coordinator-sync-ignores-fencing").applied():
        error = await _zombie_sync_session(tmp_path)
    assert error == ErrorCode.unknown_member_id
    assert "sync_not_fenced" in violation_names(check_log(tmp_path / "events.jsonl"))
