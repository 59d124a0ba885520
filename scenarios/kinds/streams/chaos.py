"""Kafka Streams under chaos: a generated spec written as a ``kind = "streams"`` scenario file
(its ``settle_ms`` the Streams liveness bound after the last step) and the shrinker's
dropping of a client. The generator itself is
:mod:`scenarios.campaigns.chaos.generate_streams`."""

from __future__ import annotations

from dataclasses import replace

from scenarios.campaigns.chaos.generate import ChaosSpec
from scenarios.campaigns.chaos.generate_streams import generate_streams as generate
from scenarios.campaigns.chaos.render import scenario_doc, step_end, with_bound
from scenarios.check.streams_bounds import streams_bound_for
from scenarios.input import toml_writer
from scenarios.input.streams import loads_streams_scenario

__all__ = ["generate", "render", "drop_member"]


def render(spec: ChaosSpec) -> str:
    """A Streams chaos spec as a ``kind = "streams"`` scenario file (docs/streams.md)."""
    assert spec.streams is not None
    body = {
        "config": dict(spec.streams["config"]),
        "subtopologies": [dict(s) for s in spec.streams["subtopologies"]],
        "clients": [dict(c) for c in spec.streams["clients"]],
    }
    doc = scenario_doc(spec, "streams", body)
    loaded = loads_streams_scenario(toml_writer.dumps(doc), f"{spec.name}.toml")
    fault_end = max((step_end(s) for s in spec.steps), default=0)
    return with_bound(
        spec,
        doc,
        streams_bound_for(loaded, fault_end),
        "the Streams liveness bound (scenarios.campaigns.chaos.bound.streams_bound_for)",
    )


def drop_member(spec: ChaosSpec) -> ChaosSpec | None:
    """A Streams spec without its last client, if no step names it."""
    assert spec.streams is not None
    clients = spec.streams["clients"]
    if len(clients) <= 1:
        return None
    last = clients[-1]["name"]
    if any(last in (s.get("member"), s.get("client")) for s in spec.steps):
        return None
    streams = {**spec.streams, "clients": clients[:-1]}
    return replace(spec, members=spec.members - 1, streams=streams)
