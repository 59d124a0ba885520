"""Timeline steps ready for the engine: the file's own step Structs, resolved.

The loaders keep the tagged step union of the scenario schema (:mod:`scenarios.input.schema`,
:mod:`scenarios.input.streams`) all the way to the engine, which ``match``-es on the step
type. What a step needs beyond what the file says travels beside it in :class:`Planned`: where
it came from, and for a member start (``join``, ``restart``) the member's merged, parsed
config. A ``rolling_restart`` arrives as one ``restart`` Struct per member.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = ["Planned", "RECORD_KEYS", "LoadedView"]

#: The step Struct fields copied into a ``step`` log record, in record order (after
#: ``action``, ``member`` and ``config``; ``origin`` comes last).
RECORD_KEYS = (
    "down_ms",
    "clean",
    "connector",
    "tasks",
    "name",
    "leave_group",
    "wipe_state",
    "latest_supported_version",
    "duration_ms",
    "direction",
    "probability",
    "extra_ms",
    "stall_ms",
    "request",
    "delay_ms",
)


@dataclass(frozen=True, slots=True)
class Planned:
    """One timeline step, ready to apply at ``at_ms`` (virtual ms).

    Attributes:
        at_ms: when it applies.
        step: the step Struct of the scenario schema (its type says what it does).
        origin: its key path in the file (``timeline[2]``, or ``timeline[2].members[1]`` for
            one member of a rolling restart).
        config: for a member start, the member's config after this step (Connect:
            :class:`members.config.WorkerConfig`; Streams:
            :class:`members.streams_client.StreamsClientConfig`); otherwise ``None``.
        raw_config: the Kafka-named table ``config`` was parsed from (Connect), or ``None``.

    Other attributes (``action``, ``member``, ``connector``, ``down_ms``, ...) read through to
    the step Struct, ``None`` where it has no such field.
    """

    at_ms: int
    step: Any
    origin: str
    config: Any = None
    raw_config: dict[str, Any] | None = None

    @property
    def action(self) -> str:
        """The step's ``action`` tag (``join``, ``partition``, ...)."""
        return str(type(self.step).__struct_config__.tag)

    @property
    def member(self) -> str | None:
        """The member the step is about (Connect ``member``, Streams ``client``), if any."""
        return getattr(self.step, "member", None) or getattr(self.step, "client", None)

    @property
    def overrides(self) -> dict[str, Any] | None:
        """The step's own ``config`` table (``join``/``restart``), else ``None``."""
        value = getattr(self.step, "config", None)
        return dict(value) if isinstance(value, dict) else None

    def __getattr__(self, name: str) -> Any:
        return getattr(self.step, name, None)

    @property
    def end_ms(self) -> int:
        """When the step's effect is over: ``at_ms`` + ``down_ms``/``duration_ms``/``stall_ms``
        (+ ``delay_ms``: a ``delay_request``'s last held request arrives that much later)."""
        step = self.step
        return (
            self.at_ms
            + (getattr(step, "down_ms", None) or 0)
            + (getattr(step, "duration_ms", None) or 0)
            + (getattr(step, "stall_ms", None) or 0)
            + (getattr(step, "delay_ms", None) or 0)
        )

    def record_fields(self) -> dict[str, Any]:
        """The fields of this step's ``step`` log record: ``action``, ``member``, ``config`` (the
        step's own table), the step's other fields in :data:`RECORD_KEYS` order where set
        (``leave_group`` only when true), then ``origin``."""
        out: dict[str, Any] = {"action": self.action}
        member = self.member
        if member is not None:
            out["member"] = member
        overrides = self.overrides
        if overrides is not None:
            out["config"] = overrides
        step = self.step
        for key in RECORD_KEYS:
            value = getattr(step, key, None)
            if value is not None and not (key == "leave_group" and value is False):
                out[key] = value
        out["origin"] = self.origin
        return out


class LoadedView:
    """What a loaded scenario of either kind shows of its file: :attr:`name`, the default
    :attr:`seed` (``--seed`` overrides it) and the ``[expect]`` table."""

    scenario: Any

    @property
    def name(self) -> str:
        return str(self.scenario.name)

    @property
    def seed(self) -> int:
        """The default seed (``--seed`` overrides it)."""
        return int(self.scenario.seed)

    @property
    def expect(self) -> Any:
        return self.scenario.expect
