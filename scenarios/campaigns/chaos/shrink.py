"""The chaos shrinker: delta debugging (ddmin) over a failing scenario's fault steps, keeping
its failure signature, then cheap number simplifications; the minimal scenario is written
atomically as ``chaos-<seed>-<index>.toml``."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from scenarios.campaigns.chaos.classify import failure_signature
from scenarios.campaigns.chaos.generate import ChaosSpec
from scenarios.campaigns.chaos.render import spec_to_toml
from scenarios.campaigns.chaos.run import run_spec
from scenarios.eventlog.atomic import atomic_write_text
from scenarios.input.loader import ScenarioError

__all__ = [
    "ddmin",
    "ShrinkResult",
    "shrink",
    "write_reproducer",
    "write_reproducer_text",
    "reproducer_path",
]


def ddmin(items: Sequence[int], fails: Callable[[list[int]], bool]) -> list[int]:
    """Zeller's ddmin: a 1-minimal sublist of ``items`` (order kept) on which ``fails`` holds.

    ``fails(items)`` must hold. Subsets are tried first, then complements, with granularity
    doubling up to single items; a candidate that cannot be tested (``fails`` returns False,
    e.g. the scenario no longer loads) counts as passing.
    """
    current = list(items)
    n = 2
    while len(current) >= 2:
        size = math.ceil(len(current) / n)
        chunks = [current[i : i + size] for i in range(0, len(current), size)]
        reduced = False
        for chunk in chunks:
            if fails(chunk):
                current, n, reduced = chunk, 2, True
                break
        if not reduced:
            for i in range(len(chunks)):
                complement = [x for j, c in enumerate(chunks) if j != i for x in c]
                if fails(complement):
                    current, n, reduced = complement, max(n - 1, 2), True
                    break
        if not reduced:
            if n >= len(current):
                break
            n = min(len(current), 2 * n)
    if len(current) == 1 and fails([]):
        return []
    return current


@dataclass
class ShrinkResult:
    """A shrunk failing scenario: the spec, its TOML, the signature kept, simulations run."""

    spec: ChaosSpec
    text: str
    invariant: str
    detail: str
    tests: int
    original_steps: int


def shrink(
    spec: ChaosSpec,
    invariant: str | None = None,
    *,
    budget: int = 400,
    reproduces: Callable[[ChaosSpec], tuple[str, str] | None] | None = None,
) -> ShrinkResult:
    """Shrink a failing chaos scenario to a minimal one with the same failure signature.

    Args:
        spec: a scenario whose run has a violation that is not a known upstream issue.
        invariant: the invariant to keep (default: the first such violation's).
        budget: at most this many simulations.
        reproduces: the failure oracle (default: simulate the scenario and return its
            :func:`failure_signature`); tests pass a synthetic one. ``None`` means it passes.

    ddmin over the fault steps, then, while the budget lasts, number simplifications that
    keep the signature: stop steps without a pause, partitions/losses/latencies/stalls and
    failover pauses halved (down to 1 ms, or 0 for pauses), loss probabilities set to 1,
    connectors no step names dropped, task counts lowered, the member count lowered while no
    step names the last member.
    """
    oracle = reproduces or _simulated_signature
    tests = 0

    def signature(candidate: ChaosSpec) -> tuple[str, str] | None:
        nonlocal tests
        tests += 1
        try:
            return oracle(candidate)
        except ScenarioError:
            return None

    first = signature(spec)
    if first is None:
        raise ValueError(f"{spec.name}: the scenario does not fail")
    want = invariant or first[0]
    kept: dict[str, Any] = {"detail": first[1] if first[0] == want else ""}

    def fails(candidate: ChaosSpec) -> bool:
        if tests >= budget:
            return False
        found = signature(candidate)
        if found is not None and found[0] == want:
            kept["detail"] = found[1]
            return True
        return False

    original = len(spec.steps)
    keep = ddmin(range(len(spec.steps)), lambda idx: fails(spec.with_steps(idx)))
    best = spec.with_steps(keep)

    # cheap number simplifications, each kept only if the signature stays
    for candidate_of in _simplifications(best):
        if tests >= budget:
            break
        candidate = candidate_of(best)
        if candidate is not None and fails(candidate):
            best = candidate
    best = replace(
        best,
        description=(
            f"groupsim chaos: campaign seed {spec.campaign_seed}, run {spec.index}, shrunk "
            f"from {original} to {len(best.steps)} faults ({want}): {best.members} "
            f"{best.protocol} workers"
        ),
    )
    text = spec_to_toml(best)
    return ShrinkResult(best, text, want, str(kept["detail"]), tests, original)


def _simulated_signature(spec: ChaosSpec) -> tuple[str, str] | None:
    _, result = run_spec(spec)
    return failure_signature(result)


_Simplify = Callable[[ChaosSpec], ChaosSpec | None]


def _simplifications(spec: ChaosSpec) -> Iterable[_Simplify]:
    """Candidate edits, generated lazily against the current best spec."""
    for i in range(len(spec.steps)):
        for key, floor in (("down_ms", 0), ("duration_ms", 1), ("stall_ms", 1)):
            if key in spec.steps[i]:
                for _ in range(3):
                    yield _halve(i, key, floor)
        if "probability" in spec.steps[i]:
            yield _set(i, "probability", 1.0)
        if "extra_ms" in spec.steps[i]:
            yield _halve(i, "extra_ms", 1)
        if "delay_ms" in spec.steps[i]:
            yield _halve(i, "delay_ms", 1)
    yield _shift_earlier
    yield _compact_members
    for name, _ in list(spec.connectors):
        yield _drop_connector(name)
    for name, _ in list(spec.connectors):
        yield _lower_tasks(name)
    for _ in range(spec.members):
        yield _drop_last_member


def _halve(i: int, key: str, floor: int) -> _Simplify:
    def edit(spec: ChaosSpec) -> ChaosSpec | None:
        if i >= len(spec.steps) or key not in spec.steps[i]:
            return None
        value = int(spec.steps[i][key])
        new = max(floor, value // 2 if value > 1 else floor)
        if new == value:
            return None
        return _with_step(spec, i, key, new)

    return edit


def _set(i: int, key: str, value: Any) -> _Simplify:
    def edit(spec: ChaosSpec) -> ChaosSpec | None:
        if i >= len(spec.steps) or spec.steps[i].get(key) == value:
            return None
        return _with_step(spec, i, key, value)

    return edit


def _with_step(spec: ChaosSpec, i: int, key: str, value: Any) -> ChaosSpec:
    steps = [dict(s) for s in spec.steps]
    steps[i][key] = value
    return replace(spec, steps=steps)


def _drop_connector(name: str) -> _Simplify:
    def edit(spec: ChaosSpec) -> ChaosSpec | None:
        if len(spec.connectors) <= 1 or name not in dict(spec.connectors):
            return None
        if any(s.get("connector") == name for s in spec.steps):
            return None
        configs = {
            w: {
                k: [x for x in v if x != name and not str(x).startswith(f"{name}-")]
                if isinstance(v, list)
                else v
                for k, v in c.items()
            }
            for w, c in spec.worker_configs.items()
        }
        return replace(
            spec,
            connectors=[(c, t) for c, t in spec.connectors if c != name],
            worker_configs=configs,
        )

    return edit


def _lower_tasks(name: str) -> _Simplify:
    def edit(spec: ChaosSpec) -> ChaosSpec | None:
        tasks = dict(spec.connectors).get(name)
        if not tasks:
            return None
        return replace(
            spec, connectors=[(c, t // 2 if c == name else t) for c, t in spec.connectors]
        )

    return edit


def _shift_earlier(spec: ChaosSpec) -> ChaosSpec | None:
    """Move the whole timeline earlier so that it starts at 30 s (the group has formed)."""
    if not spec.steps or spec.steps[0]["at_ms"] <= 30_000:
        return None
    delta = spec.steps[0]["at_ms"] - 30_000
    steps = [{**s, "at_ms": s["at_ms"] - delta} for s in spec.steps]
    return replace(spec, steps=steps)


def _compact_members(spec: ChaosSpec) -> ChaosSpec | None:
    """Rename the members the steps name to w1, w2, … (first use order), the others after
    (Connect: a Streams spec's clients keep their names)."""
    if spec.streams is not None or spec.consumer is not None:
        return None
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


def _drop_last_member(spec: ChaosSpec) -> ChaosSpec | None:
    if spec.streams is not None:
        return _drop_last_client(spec)
    if spec.consumer is not None:
        return _drop_last_consumer(spec)
    if spec.members <= 1:
        return None
    last = f"w{spec.members}"
    if any(s.get("member") == last for s in spec.steps):
        return None
    configs = {w: c for w, c in spec.worker_configs.items() if w != last}
    return replace(spec, members=spec.members - 1, worker_configs=configs)


def reproducer_path(out_dir: Path, campaign_seed: int, index: int) -> Path:
    """Where run ``index`` of campaign ``campaign_seed`` is written:
    ``out_dir/chaos-<campaign seed>-<index>.toml``."""
    return out_dir / f"chaos-{campaign_seed}-{index}.toml"


def write_reproducer_text(out_dir: Path, campaign_seed: int, index: int, text: str) -> Path:
    """Write a reproducer's TOML ``text`` to :func:`reproducer_path` atomically (a temporary
    name in the same directory, then a rename); ``out_dir`` is created when missing."""
    out_dir.mkdir(parents=True, exist_ok=True)
    path = reproducer_path(out_dir, campaign_seed, index)
    atomic_write_text(path, text)
    return path


def write_reproducer(out_dir: Path, spec: ChaosSpec, text: str | None = None) -> Path:
    """Write ``spec``'s TOML as ``out_dir/chaos-<campaign seed>-<index>.toml`` atomically (a
    temporary name in the same directory, then a rename)."""
    body = text if text is not None else spec_to_toml(spec)
    return write_reproducer_text(out_dir, spec.campaign_seed, spec.index, body)


def _drop_last_client(spec: ChaosSpec) -> ChaosSpec | None:
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


def _drop_last_consumer(spec: ChaosSpec) -> ChaosSpec | None:
    """A consumer spec without its last consumer, if no step names it."""
    assert spec.consumer is not None
    consumers = spec.consumer["consumers"]
    if len(consumers) <= 1:
        return None
    last = consumers[-1]["name"]
    if any(s.get("member") == last for s in spec.steps):
        return None
    body = {**spec.consumer, "consumers": consumers[:-1]}
    return replace(spec, members=spec.members - 1, consumer=body)
