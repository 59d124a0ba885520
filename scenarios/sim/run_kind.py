"""What the engine and the runner call on one run of one kind of group (:class:`RunKind`).

A kind's :meth:`scenarios.kinds.GroupKind.run_kind` builds it; :class:`scenarios.sim.engine.Engine`
drives it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

from members.group_client import GroupClient
from protocol.effects import Effect
from scenarios.check.summary_types import Summary
from scenarios.check.violation import Violation
from scenarios.input.steps import Planned

if TYPE_CHECKING:
    from scenarios.sim.engine import Engine

__all__ = ["RunKind"]


class RunKind(Protocol):
    """One run of one kind of group: what the engine and the runner call (the kind's
    :meth:`scenarios.kinds.GroupKind.run_kind` builds it).

    ``loaded`` is the loaded scenario: ``scenario`` (its name, ``network``,
    ``log_heartbeats``), ``steps`` (:class:`scenarios.input.steps.Planned`), ``end_ms`` and
    ``coordinator_config``.
    """

    group_id: str
    loaded: Any

    def run_start_fields(self) -> dict[str, Any]:
        """The kind's fields of the ``run_start`` record (after ``log_version``, ``scenario``,
        ``seed``)."""

    def plan(self, engine: Engine) -> list[tuple[int, str, Any]]:
        """Prepare the run (initial config, state directories); return the initial member
        starts as ``(at_ms, name, config)``."""

    def new_member(self, engine: Engine, name: str, address: str, config: Any) -> GroupClient:
        """A new incarnation of member ``name`` at ``address`` (``config`` from the start)."""

    def start_config(self, engine: Engine, planned: Planned) -> Any:
        """The config a ``join`` step starts its member with."""

    def restart_config(self, engine: Engine, planned: Planned) -> Any:
        """The config a ``restart`` step restarts its member with (and any state change the
        restart makes, such as wiping a Streams state directory)."""

    def shutdown(self, member: GroupClient, planned: Planned, now_ms: int) -> list[Effect]:
        """A clean stop of ``member`` for a ``leave`` or clean ``restart`` step."""

    def deliver(self, engine: Engine, dest: str, source: str, message: Any) -> bool:
        """Deliver to an address that is not a member's (Connect's config topic, a worker's
        REST address); False when ``dest`` is not the kind's."""

    def apply_step(self, engine: Engine, planned: Planned) -> None:
        """A timeline step only this kind has (Connect's connector changes)."""

    def summarize(self, records: list[dict[str, Any]]) -> Summary:
        """The run's summary from its log: the kind's Struct
        (:mod:`scenarios.check.summary_types`; ``summary.json`` holds its builtins)."""

    def end_violations(
        self, records: list[dict[str, Any]], summary: Callable[[], Any]
    ) -> list[Violation]:
        """The end-of-run check's violations (logged before ``run_end``); ``summary()`` is
        :meth:`summarize`'s Struct of ``records``, computed on its first call (a kind whose
        checks do not read it does not pay for it)."""

    def expect_failures(self, summary: Any) -> list[str]:
        """One line per unmet ``[expect]`` of the scenario."""
