"""A chaos scenario written as a scenario file (TOML, through
:mod:`scenarios.input.toml_writer`): its ``settle_ms`` is the liveness bound after the last
fault ends, and known upstream issues are expected (named, not failed)."""

from __future__ import annotations

import json
from typing import Any

from scenarios.campaigns.chaos.bound import bound_for
from scenarios.campaigns.chaos.generate import ChaosSpec
from scenarios.check.invariants import KNOWN_ISSUES
from scenarios.input.loader import loads_scenario

__all__ = ["spec_to_toml", "step_end"]


def _toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, list):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    if isinstance(value, dict):
        return (
            "{ " + ", ".join(f"{_toml_key(k)} = {_toml_value(v)}" for k, v in value.items()) + " }"
        )
    raise TypeError(f"not a TOML value: {value!r}")


def _toml_key(key: str) -> str:
    return key if key.replace("_", "").replace("-", "").isalnum() else json.dumps(key)


def step_end(step: dict[str, Any]) -> int:
    return int(step["at_ms"]) + sum(
        int(step.get(k, 0)) for k in ("down_ms", "duration_ms", "stall_ms")
    )


def spec_to_toml(spec: ChaosSpec) -> str:
    """The scenario file of ``spec``: ``settle_ms`` is its liveness bound, so the run lasts the
    bound after the last fault ends; known upstream issues are expected (named, not failed)."""
    text = _render(spec, settle_ms=0)
    settle = bound_for(loads_scenario(text, f"{spec.name}.toml"))
    return _render(spec, settle_ms=settle)


def _render(spec: ChaosSpec, settle_ms: int) -> str:
    out = [
        f"# {spec.description or spec.name}",
        f"# Reproduce: groupsim run {spec.name}.toml   (seed {spec.seed} is the file's own)",
        "# settle_ms is the liveness bound (scenarios.campaigns.chaos.liveness_bound_ms) after the"
        f" last fault ends at {max((step_end(s) for s in spec.steps), default=0)} ms.",
        f"name = {_toml_value(spec.name)}",
        f"description = {_toml_value(spec.description)}",
        f"seed = {spec.seed}",
        f"settle_ms = {settle_ms}",
        "",
        "[network]",
        "latency_ms = 1",
        f"jitter_ms = {spec.jitter_ms}",
        "",
        "[cluster]",
    ]
    if spec.worker_configs:
        out.append(f"size = {spec.members}")
        out.append("")
        out.append("[cluster.config]")
        out += [f"{_toml_key(k)} = {_toml_value(v)}" for k, v in spec.cluster_config.items()]
        for name in spec.worker_names:
            out += ["", "[[cluster.workers]]", f"name = {_toml_value(name)}"]
            own = spec.worker_configs.get(name)
            if own:
                out.append(f"config = {_toml_value(own)}")
    else:
        out.append(f"size = {spec.members}")
        out.append("")
        out.append("[cluster.config]")
        out += [f"{_toml_key(k)} = {_toml_value(v)}" for k, v in spec.cluster_config.items()]
    for name, tasks in spec.connectors:
        out += ["", "[[workload.connectors]]", f"name = {_toml_value(name)}", f"tasks = {tasks}"]
    for kind, step in zip(spec.kinds, spec.steps, strict=True):
        out += ["", f"[[timeline]]  # fault: {kind}"]
        out += [f"{_toml_key(k)} = {_toml_value(v)}" for k, v in step.items()]
    out += ["", "[expect]", f"expected_violations = {_toml_value(list(KNOWN_ISSUES))}", ""]
    return "\n".join(out)
