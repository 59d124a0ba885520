"""The hooks through which a member kind tells Kafka's group client what differs: its
JoinGroup metadata, its leader's assignor, what it does with an assignment and when it stops
(:class:`MemberHooks`, the base of :class:`members.group_client.GroupClient`). Each is named
after the Kafka method it stands for (``AbstractCoordinator`` and the member kinds'
``WorkerCoordinator``, ``ConsumerCoordinator``):

* :meth:`MemberHooks.metadata` — the protocols and metadata of a JoinGroup
  (``AbstractCoordinator.metadata()``);
* :meth:`MemberHooks.on_join_prepare` — before a JoinGroup (``onJoinPrepare``); returns False
  when the member must first finish blocking work and will call
  :meth:`members.group_client.GroupClient.send_join` itself;
* :meth:`MemberHooks.perform_assignment` — the leader's assignor (``onLeaderElected`` /
  ``performAssignment``);
* :meth:`MemberHooks.decode_assignment` and :meth:`MemberHooks.on_join_complete` — the
  SyncGroup answer (``onJoinComplete``);
* :meth:`MemberHooks.on_partitions_lost` — fenced: the generation is gone
  (``ConsumerCoordinator.onPartitionsLost``; Connect keeps running, KAFKA-9184's window);
* :meth:`MemberHooks.on_crash` and :meth:`MemberHooks.on_fatal` — the process or its polling
  thread stops.
"""

from __future__ import annotations

from typing import ClassVar

from protocol.group import JoinGroupResponse
from protocol.primitives import DecodeError

__all__ = ["MemberHooks"]


class MemberHooks:
    """The overridable half of a group member (module docstring): defaults where Kafka's
    ``AbstractCoordinator`` has one, ``NotImplementedError`` where each kind must answer.
    Times are virtual ms."""

    #: Exceptions of :meth:`perform_assignment` that end the member (the assignor throws out
    #: of ``poll()`` in Kafka and the polling thread dies).
    ASSIGNOR_ERRORS: ClassVar[tuple[type[Exception], ...]] = (DecodeError,)
    #: Timers that are part of the member's own work and are not logged when they fire.
    SILENT_TIMER_PREFIXES: ClassVar[tuple[str, ...]] = ()

    def metadata(self, now_ms: int) -> tuple[tuple[str, bytes], ...]:
        """``AbstractCoordinator.metadata()``: the JoinGroup's (protocol name, metadata) list,
        in preference order."""
        raise NotImplementedError

    def on_join_prepare(self, now_ms: int) -> bool:
        """``onJoinPrepare``: run before a JoinGroup. Return False to send it later (the member
        calls :meth:`send_join` once its blocking work is done)."""
        return True

    def perform_assignment(
        self, response: JoinGroupResponse, now_ms: int
    ) -> tuple[tuple[str, bytes], ...]:
        """The leader's assignor over ``response.members``: (member id, assignment) pairs.

        Raises:
            one of :attr:`ASSIGNOR_ERRORS`: a member's metadata cannot be read.
        """
        raise NotImplementedError

    def decode_assignment(self, data: bytes) -> object:
        """Decode this member's SyncGroup assignment.

        Raises:
            DecodeError: malformed bytes (the member's polling thread dies).
        """
        raise NotImplementedError

    def on_join_complete(self, assignment: object, protocol_name: str, now_ms: int) -> None:
        """``onJoinComplete``: act on a decoded assignment; call :meth:`complete_join` at the
        point where the member is STABLE."""
        raise NotImplementedError

    def on_partitions_lost(self, reason: str, now_ms: int) -> None:
        """The member was fenced (unknown member id, illegal generation): what it owned is
        lost. Default: nothing (Connect workers keep running their work)."""

    def on_coordinator_unknown(self, now_ms: int) -> None:
        """Called once when the coordinator becomes unknown, before it is looked up again."""

    def on_coordinator_found(self, now_ms: int) -> None:
        """Called once when the coordinator is found again."""

    def on_timer(self, key: str, now_ms: int) -> None:
        """A due timer of the member's own (logged as ``timer_fired`` before this call)."""

    def on_silent_timer(self, key: str, now_ms: int) -> None:
        """A due timer whose key starts with one of :attr:`SILENT_TIMER_PREFIXES`."""

    def on_message(self, message: object, now_ms: int) -> None:
        """A delivered message that is not a group response."""

    def on_crash(self, now_ms: int) -> None:
        """The process dies: stop everything it runs at once (log what stops)."""

    def on_fatal(self, now_ms: int) -> None:
        """The polling thread died (a fatal error): stop everything it runs."""

    def poll_blocked(self) -> bool:
        """True while the member's polling thread is busy and cannot send a JoinGroup."""
        return False

    def extra_timer_keys(self) -> tuple[str, ...]:
        """The member's own timer keys, cancelled when it stops."""
        return ()
