"""Plain consumers under chaos: a generated spec written as a ``kind = "consumer"`` scenario
file (its ``settle_ms`` the consumer liveness bound,
:func:`scenarios.check.consumer_liveness.consumer_bound_for`) and the shrinker's dropping of
a consumer. The generator itself is
:func:`scenarios.campaigns.chaos.generate_consumer.generate_consumer`."""

from __future__ import annotations

from dataclasses import replace

from scenarios.campaigns.chaos.generate import ChaosSpec
from scenarios.campaigns.chaos.generate_consumer import generate_consumer as generate
from scenarios.campaigns.chaos.render import scenario_doc, with_bound
from scenarios.check.consumer_liveness import consumer_bound_for
from scenarios.input import toml_writer
from scenarios.input.consumer import loads_consumer_scenario

__all__ = ["generate", "render", "drop_member"]


def render(spec: ChaosSpec) -> str:
    """A consumer chaos spec as a ``kind = "consumer"`` scenario file (docs/consumer.md; the
    consumer kind's :meth:`scenarios.kinds.GroupKind.chaos_render`)."""
    assert spec.consumer is not None
    body = {
        "topics": dict(spec.consumer["topics"]),
        "config": dict(spec.consumer["config"]),
        "consumers": [dict(c) for c in spec.consumer["consumers"]],
    }
    if spec.consumer.get("partition_racks"):
        body["partition_racks"] = {
            t: [list(r) for r in racks] for t, racks in spec.consumer["partition_racks"].items()
        }
    doc = scenario_doc(spec, "consumer", body)
    loaded = loads_consumer_scenario(toml_writer.dumps(doc), f"{spec.name}.toml")
    # the run ends settle_ms after its last step's effect is over
    return with_bound(
        spec,
        doc,
        consumer_bound_for(loaded),
        "the consumer liveness bound (scenarios.check.consumer_liveness.consumer_bound_for)",
    )


def drop_member(spec: ChaosSpec) -> ChaosSpec | None:
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
