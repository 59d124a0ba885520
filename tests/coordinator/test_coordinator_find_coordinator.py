"""FindCoordinator is answered by the runtime (it knows whether a coordinator has the group
loaded), never by :class:`~coordinator.group.GroupCoordinator`."""

from __future__ import annotations

import msgspec
import pytest

from coordinator import GroupState
from protocol.group import ErrorCode, FindCoordinatorRequest, FindCoordinatorResponse
from tests.coordinator.harness import GROUP, CoordinatorContext

E = ErrorCode


def test_find_coordinator_is_not_a_coordinator_request() -> None:
    ctx = CoordinatorContext()
    ctx.stable_group(["w1"])
    with pytest.raises(TypeError, match="FindCoordinatorRequest"):
        ctx.coordinator.handle("w1", FindCoordinatorRequest(GROUP), 0)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        ctx.coordinator.handle("w1", FindCoordinatorResponse(E.NONE), 0)  # type: ignore[arg-type]
    assert ctx.state is GroupState.STABLE
    for message in (FindCoordinatorRequest(GROUP), FindCoordinatorResponse(E.NOT_COORDINATOR)):
        wire = msgspec.msgpack.encode(message)
        assert msgspec.msgpack.decode(wire, type=type(message)) == message
    assert b"FindCoordinatorRequest" in msgspec.json.encode(FindCoordinatorRequest(GROUP))
