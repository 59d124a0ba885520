"""A chaos scenario written as a scenario file (TOML, through
:mod:`scenarios.input.toml_writer`) by its member kind
(:meth:`scenarios.kinds.GroupKind.chaos_render`, in ``scenarios/kinds/<name>/chaos.py``): its
``settle_ms`` is the kind's liveness bound after the last fault ends, and known upstream
issues are expected (named, not failed). Here: the dispatch and the helpers every kind's
writer shares."""

from __future__ import annotations

from typing import Any

from scenarios import kinds
from scenarios.campaigns.chaos.generate import ChaosSpec, step_end
from scenarios.check.invariants import KNOWN_ISSUES
from scenarios.input import toml_writer

__all__ = ["spec_to_toml", "step_end", "budget", "scenario_doc", "with_bound"]


def budget(spec: ChaosSpec) -> dict[str, Any]:
    """The run's record budget as the scenario's ``max_records`` (none when unset)."""
    return {} if spec.max_records is None else {"max_records": spec.max_records}


def scenario_doc(spec: ChaosSpec, kind: str, body: dict[str, Any]) -> dict[str, Any]:
    """The scenario table of a generated ``spec`` of ``kind``: its name, seed, budget and
    network, the kind's own ``body`` tables, its timeline and the known upstream issues as
    expected violations; ``settle_ms`` is 0 until :func:`with_bound` sets it."""
    doc: dict[str, Any] = {
        "kind": kind,
        "name": spec.name,
        "description": spec.description,
        "seed": spec.seed,
        "settle_ms": 0,
        **budget(spec),
        "network": {"latency_ms": 1, "jitter_ms": spec.jitter_ms},
        **body,
    }
    if spec.coordinator:
        doc["coordinator"] = dict(spec.coordinator)
    if spec.steps:
        doc["timeline"] = [dict(step) for step in spec.steps]
    doc["expect"] = {"expected_violations": list(KNOWN_ISSUES)}
    return doc


def with_bound(spec: ChaosSpec, doc: dict[str, Any], settle_ms: int, bound: str) -> str:
    """``doc`` written as TOML with ``settle_ms`` (virtual ms: the kind's liveness bound,
    named by ``bound``) and the reproducer's header comments."""
    doc["settle_ms"] = settle_ms
    fault_end = max((step_end(s) for s in spec.steps), default=0)
    comments = [
        spec.description or spec.name,
        f"Reproduce: groupsim run {spec.name}.toml   (seed {spec.seed} is the file's own)",
        f"settle_ms is {bound} after the last step ends at {fault_end} ms.",
    ]
    if spec.kinds:
        comments.append(f"Steps, in timeline order: {', '.join(spec.kinds)}.")
    return toml_writer.dumps(doc, comments=comments)


def spec_to_toml(spec: ChaosSpec) -> str:
    """The scenario file of ``spec``, written by its kind
    (:meth:`scenarios.kinds.GroupKind.chaos_render`): ``settle_ms`` is its liveness bound, so
    the run lasts the bound after the last fault ends; known upstream issues are expected
    (named, not failed)."""
    return kinds.get(spec.group_kind).chaos_render(spec)
