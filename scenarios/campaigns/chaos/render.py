"""A chaos scenario written as a scenario file (TOML, through
:mod:`scenarios.input.toml_writer`) by its member kind
(:meth:`scenarios.kinds.GroupKind.chaos_render`, in ``scenarios/kinds/<name>/chaos.py``): its
``settle_ms`` is the kind's liveness bound after the last fault ends, and known upstream
issues are expected (named, not failed). Here: the dispatch and the helpers every kind's
writer shares."""

from __future__ import annotations

from typing import Any

from scenarios import kinds
from scenarios.campaigns.chaos.generate import ChaosSpec

__all__ = ["spec_to_toml", "step_end", "budget"]


def step_end(step: dict[str, Any]) -> int:
    return int(step["at_ms"]) + sum(
        int(step.get(k, 0)) for k in ("down_ms", "duration_ms", "stall_ms", "delay_ms")
    )


def budget(spec: ChaosSpec) -> dict[str, Any]:
    """The run's record budget as the scenario's ``max_records`` (none when unset)."""
    return {} if spec.max_records is None else {"max_records": spec.max_records}


def spec_to_toml(spec: ChaosSpec) -> str:
    """The scenario file of ``spec``, written by its kind
    (:meth:`scenarios.kinds.GroupKind.chaos_render`): ``settle_ms`` is its liveness bound, so
    the run lasts the bound after the last fault ends; known upstream issues are expected
    (named, not failed)."""
    return kinds.get(spec.group_kind).chaos_render(spec)
