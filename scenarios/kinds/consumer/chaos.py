"""Plain consumers under chaos: a generated spec written as a ``kind = "consumer"`` scenario
file (its ``settle_ms`` the consumer liveness bound,
:func:`scenarios.check.consumer_liveness.consumer_bound_for`) and the shrinker's dropping of
a consumer. The generator itself is
:func:`scenarios.campaigns.chaos.generate_consumer.generate_consumer`."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from scenarios.campaigns.chaos.generate import ChaosSpec
from scenarios.campaigns.chaos.render import budget, step_end
from scenarios.check.consumer_liveness import consumer_bound_for
from scenarios.check.invariants import KNOWN_ISSUES
from scenarios.input import toml_writer
from scenarios.input.consumer import loads_consumer_scenario

__all__ = ["render_consumer", "drop_last_consumer"]


def render_consumer(spec: ChaosSpec) -> str:
    """A consumer chaos spec as a ``kind = "consumer"`` scenario file (docs/consumer.md; the
    consumer kind's :meth:`scenarios.kinds.GroupKind.chaos_render`)."""
    assert spec.consumer is not None
    fault_end = max((step_end(s) for s in spec.steps), default=0)
    doc: dict[str, Any] = {
        "kind": "consumer",
        "name": spec.name,
        "description": spec.description,
        "seed": spec.seed,
        "settle_ms": 0,
        **budget(spec),
        "network": {"latency_ms": 1, "jitter_ms": spec.jitter_ms},
        "topics": dict(spec.consumer["topics"]),
        "config": dict(spec.consumer["config"]),
        "consumers": [dict(c) for c in spec.consumer["consumers"]],
    }
    if spec.steps:
        doc["timeline"] = [dict(step) for step in spec.steps]
    doc["expect"] = {"expected_violations": list(KNOWN_ISSUES)}
    loaded = loads_consumer_scenario(toml_writer.dumps(doc), f"{spec.name}.toml")
    # the run ends settle_ms after its last step's effect is over
    doc["settle_ms"] = consumer_bound_for(loaded)
    comments = [
        spec.description or spec.name,
        f"Reproduce: groupsim run {spec.name}.toml   (seed {spec.seed} is the file's own)",
        "settle_ms is the consumer liveness bound (scenarios.check.consumer_liveness."
        f"consumer_bound_for) after the last step ends at {fault_end} ms.",
    ]
    if spec.kinds:
        comments.append(f"Steps, in timeline order: {', '.join(spec.kinds)}.")
    return toml_writer.dumps(doc, comments=comments)


def drop_last_consumer(spec: ChaosSpec) -> ChaosSpec | None:
    """A consumer spec without its last consumer, if no step names it (the consumer kind's
    :meth:`scenarios.kinds.GroupKind.chaos_drop_member`)."""
    assert spec.consumer is not None
    consumers = spec.consumer["consumers"]
    if len(consumers) <= 1:
        return None
    last = consumers[-1]["name"]
    if any(s.get("member") == last for s in spec.steps):
        return None
    body = {**spec.consumer, "consumers": consumers[:-1]}
    return replace(spec, members=spec.members - 1, consumer=body)
