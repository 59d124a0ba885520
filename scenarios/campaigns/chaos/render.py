"""A chaos scenario written as a scenario file (TOML, through
:mod:`scenarios.input.toml_writer`): its ``settle_ms`` is the liveness bound after the last
fault ends, and known upstream issues are expected (named, not failed)."""

from __future__ import annotations

from typing import Any

from scenarios.campaigns.chaos.bound import bound_for, streams_bound_for
from scenarios.campaigns.chaos.generate import ChaosSpec
from scenarios.check.consumer_liveness import consumer_bound_for
from scenarios.check.invariants import KNOWN_ISSUES
from scenarios.input import toml_writer
from scenarios.input.consumer import loads_consumer_scenario
from scenarios.input.loader import loads_scenario
from scenarios.input.streams import loads_streams_scenario

__all__ = ["spec_to_toml", "step_end"]


def step_end(step: dict[str, Any]) -> int:
    return int(step["at_ms"]) + sum(
        int(step.get(k, 0)) for k in ("down_ms", "duration_ms", "stall_ms", "delay_ms")
    )


def _budget(spec: ChaosSpec) -> dict[str, Any]:
    """The run's record budget as the scenario's ``max_records`` (none when unset)."""
    return {} if spec.max_records is None else {"max_records": spec.max_records}


def spec_to_toml(spec: ChaosSpec) -> str:
    """The scenario file of ``spec``: ``settle_ms`` is its liveness bound, so the run lasts the
    bound after the last fault ends; known upstream issues are expected (named, not failed)."""
    if spec.streams is not None:
        return _render_streams(spec)
    if spec.consumer is not None:
        return _render_consumer(spec)
    text = _render(spec, settle_ms=0)
    settle = bound_for(loads_scenario(text, f"{spec.name}.toml"))
    return _render(spec, settle_ms=settle)


def _render_streams(spec: ChaosSpec) -> str:
    """A Streams chaos spec as a ``kind = "streams"`` scenario file (docs/streams.md)."""
    assert spec.streams is not None
    fault_end = max((step_end(s) for s in spec.steps), default=0)
    doc: dict[str, Any] = {
        "kind": "streams",
        "name": spec.name,
        "description": spec.description,
        "seed": spec.seed,
        "settle_ms": 0,
        **_budget(spec),
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


def _render_consumer(spec: ChaosSpec) -> str:
    """A consumer chaos spec as a ``kind = "consumer"`` scenario file (docs/consumer.md);
    ``settle_ms`` is :func:`scenarios.check.consumer_liveness.consumer_bound_for`."""
    assert spec.consumer is not None
    fault_end = max((step_end(s) for s in spec.steps), default=0)
    doc: dict[str, Any] = {
        "kind": "consumer",
        "name": spec.name,
        "description": spec.description,
        "seed": spec.seed,
        "settle_ms": 0,
        **_budget(spec),
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
        **_budget(spec),
        "network": {"latency_ms": 1, "jitter_ms": spec.jitter_ms},
        "cluster": cluster,
    }
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
