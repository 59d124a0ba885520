"""Kafka Connect under chaos: a generated spec written as a scenario file (its ``settle_ms``
the liveness bound, :func:`scenarios.campaigns.chaos.bound.bound_for`, after the last fault)
and the shrinker's renaming and dropping of workers. The generator is
:func:`scenarios.campaigns.chaos.generate.generate_connect`."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from scenarios.campaigns.chaos.bound import bound_for
from scenarios.campaigns.chaos.generate import ChaosSpec
from scenarios.campaigns.chaos.generate import generate_connect as generate
from scenarios.campaigns.chaos.render import budget, step_end
from scenarios.check.invariants import KNOWN_ISSUES
from scenarios.input import toml_writer
from scenarios.input.loader import loads_scenario

__all__ = ["generate", "render", "drop_member", "compact"]


def render(spec: ChaosSpec) -> str:
    """A Connect chaos spec as a scenario file (the Connect kind's
    :meth:`scenarios.kinds.GroupKind.chaos_render`)."""
    text = _render(spec, settle_ms=0)
    settle = bound_for(loads_scenario(text, f"{spec.name}.toml"))
    return _render(spec, settle_ms=settle)


def _render(spec: ChaosSpec, settle_ms: int) -> str:
    fault_end = max((step_end(s) for s in spec.steps), default=0)
    cluster: dict[str, Any] = {"size": spec.members, "config": dict(spec.cluster_config)}
    if spec.worker_configs:
        cluster["workers"] = [
            {"name": name, **({"config": own} if (own := spec.worker_configs.get(name)) else {})}
            for name in spec.worker_names
        ]
    doc: dict[str, Any] = {
        "name": spec.name,
        "description": spec.description,
        "seed": spec.seed,
        "settle_ms": settle_ms,
        **budget(spec),
        "network": {"latency_ms": 1, "jitter_ms": spec.jitter_ms},
        "cluster": cluster,
    }
    if spec.coordinator:
        doc["coordinator"] = dict(spec.coordinator)
    if spec.connectors:
        doc["workload"] = {
            "connectors": [{"name": name, "tasks": tasks} for name, tasks in spec.connectors]
        }
    if spec.steps:
        doc["timeline"] = [dict(step) for step in spec.steps]
    doc["expect"] = {"expected_violations": list(KNOWN_ISSUES)}
    comments = [
        spec.description or spec.name,
        f"Reproduce: groupsim run {spec.name}.toml   (seed {spec.seed} is the file's own)",
        "settle_ms is the liveness bound (scenarios.campaigns.chaos.liveness_bound_ms) after the"
        f" last fault ends at {fault_end} ms.",
    ]
    if spec.kinds:
        comments.append(f"Faults, in timeline order: {', '.join(spec.kinds)}.")
    return toml_writer.dumps(doc, comments=comments)


def compact(spec: ChaosSpec) -> ChaosSpec | None:
    """Rename the workers the steps name to w1, w2, … (first use order), the others after
    (Connect's :meth:`scenarios.kinds.GroupKind.chaos_compact`)."""
    used: list[str] = []
    for step in spec.steps:
        member = step.get("member")
        if member is not None and member not in used:
            used.append(member)
    order = used + [m for m in spec.worker_names if m not in used]
    mapping = {old: f"w{i}" for i, old in enumerate(order, 1)}
    if all(k == v for k, v in mapping.items()):
        return None
    steps = [
        {**s, "member": mapping[s["member"]]} if "member" in s else dict(s) for s in spec.steps
    ]
    configs = {mapping[w]: c for w, c in spec.worker_configs.items()}
    return replace(spec, steps=steps, worker_configs=configs)


def drop_member(spec: ChaosSpec) -> ChaosSpec | None:
    """A Connect spec without its last worker, if no step names it."""
    if spec.members <= 1:
        return None
    last = f"w{spec.members}"
    if any(s.get("member") == last for s in spec.steps):
        return None
    configs = {w: c for w, c in spec.worker_configs.items() if w != last}
    return replace(spec, members=spec.members - 1, worker_configs=configs)
