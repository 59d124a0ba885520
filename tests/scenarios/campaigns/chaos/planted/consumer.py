"""Planted bugs of the plain consumer kind (``members/consumer.py`` and its assignors, the
KIP-429 path), as wraps for :class:`planted.PlantedBug` patches."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from members.consumer import SUPPORTED_PROTOCOLS, RebalanceProtocol


def keep_revoked(original: Callable[..., Any]) -> Callable[..., Any]:
    # a cooperative revocation that never reaches onPartitionsRevoked: the member goes on
    # consuming what the assignment took away (its JoinGroup reports only the assignment as
    # owned: see report_assignment_only)
    def _revoke(self: Any, partitions: list[Any], reason: str) -> None:
        if reason != "no longer assigned":
            original(self, partitions, reason)

    return _revoke


def report_assignment_only(original: Callable[..., Any]) -> Callable[..., Any]:
    # ...while the subscription's owned partitions are the last assignment, not what it owns
    def _subscription(self: Any, assignor: str) -> Any:
        owned = self.owned
        self.owned = list(self._last_assigned)
        try:
            return original(self, assignor)
        finally:
            self.owned = owned

    return _subscription


def skip_adjust(original: Callable[..., Any]) -> Callable[..., Any]:
    # CooperativeStickyAssignor without adjustAssignment: a partition that changes owner goes
    # straight to its new owner in the same rebalance, before the old one revoked it
    def cooperative_adjust(members: Any, result: Any) -> Any:
        return result.assignment

    return cooperative_adjust


def protocol_of_any(original: Callable[..., Any]) -> Callable[..., Any]:
    # ConsumerCoordinator's constructor taking the highest protocol *any* assignor supports
    # instead of one all of them support: [range, cooperative-sticky] is then COOPERATIVE, and
    # when the vote picks range (an eager assignor) the member keeps its partitions through
    # the rebalance while range hands them to others
    def rebalance_protocol(strategies: Sequence[str]) -> RebalanceProtocol:
        original(strategies)  # the same errors for unknown names
        return max(p for name in strategies for p in SUPPORTED_PROTOCOLS[name])

    return rebalance_protocol


def ignore_fencing(original: Callable[..., Any]) -> Callable[..., Any]:
    # an application that catches FencedInstanceIdException and goes on instead of closing
    # the consumer: a zombie whose group.instance.id another process took over keeps its
    # partitions (no onPartitionsLost) and its process runs on (KIP-345 makes it fatal)
    def on_fenced(self: Any, now_ms: int) -> None:
        return None

    return on_fenced
