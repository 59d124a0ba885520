"""The member ids a simulated coordinator hands out (``ClassicGroup#generateMemberId``)."""

from __future__ import annotations

import random
import uuid
from collections.abc import Mapping, Sequence

__all__ = ["MemberIds"]


class MemberIds:
    """``client_id -> "<client_id>-<uuid>"``, the UUID drawn from the run's seeded generator,
    as Kafka's coordinator draws a random one; or, while ``given`` has ids left for that
    client id, the next of those instead (a recorded run's, in the order its broker handed
    them out: the coordinator's ``HashMap`` of members, so which member succeeds a departed
    leader, follows them). The UUID is drawn either way, so the run's other random choices
    stay the same.

    Args:
        rng: the run's generator.
        given: per client id (``group.instance.id`` for a static member), ids in order.
    """

    def __init__(self, rng: random.Random, given: Mapping[str, Sequence[str]] | None = None):
        self._rng = rng
        self._given = {client: list(ids) for client, ids in (given or {}).items()}

    def __call__(self, client_id: str) -> str:
        drawn = f"{client_id}-{uuid.UUID(int=self._rng.getrandbits(128), version=4)}"
        given = self._given.get(client_id)
        return given.pop(0) if given else drawn
