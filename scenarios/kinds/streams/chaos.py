"""Kafka Streams under chaos: a generated spec written as a ``kind = "streams"`` scenario file
(its ``settle_ms`` the Streams liveness bound after the last step) and the shrinker's
dropping of a client. The generator itself is
:mod:`scenarios.campaigns.chaos.generate_streams`."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from scenarios.campaigns.chaos.generate import ChaosSpec
from scenarios.campaigns.chaos.render import budget, step_end
from scenarios.check.invariants import KNOWN_ISSUES
from scenarios.check.streams_bounds import streams_bound_for
from scenarios.input import toml_writer
from scenarios.input.streams import loads_streams_scenario

__all__ = ["render_streams", "drop_last_client"]


def render_streams(spec: ChaosSpec) -> str:
    """A Streams chaos spec as a ``kind = "streams"`` scenario file (docs/streams.md)."""
    assert spec.streams is not None
    fault_end = max((step_end(s) for s in spec.steps), default=0)
    doc: dict[str, Any] = {
        "kind": "streams",
        "name": spec.name,
        "description": spec.description,
        "seed": spec.seed,
        "settle_ms": 0,
        **budget(spec),
        "network": {"latency_ms": 1, "jitter_ms": spec.jitter_ms},
        "config": dict(spec.streams["config"]),
        "subtopologies": [dict(s) for s in spec.streams["subtopologies"]],
        "clients": [dict(c) for c in spec.streams["clients"]],
    }
    if spec.steps:
        doc["timeline"] = [dict(step) for step in spec.steps]
    doc["expect"] = {"expected_violations": list(KNOWN_ISSUES)}
    loaded = loads_streams_scenario(toml_writer.dumps(doc), f"{spec.name}.toml")
    doc["settle_ms"] = streams_bound_for(loaded, fault_end)
    comments = [
        spec.description or spec.name,
        f"Reproduce: groupsim run {spec.name}.toml   (seed {spec.seed} is the file's own)",
        "settle_ms is the Streams liveness bound (scenarios.campaigns.chaos.bound."
        f"streams_bound_for) after the last step ends at {fault_end} ms.",
    ]
    if spec.kinds:
        comments.append(f"Steps, in timeline order: {', '.join(spec.kinds)}.")
    return toml_writer.dumps(doc, comments=comments)


def drop_last_client(spec: ChaosSpec) -> ChaosSpec | None:
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
