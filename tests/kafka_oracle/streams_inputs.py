"""Hypothesis strategies for ``groupsim assign`` Streams documents (docs/cli-contracts.md).

One document is fed unchanged to groupsim (:func:`scenarios.assign.streams.run_assign_streams`)
and to Kafka's classes (the oracle's ``streams.assign``), so everything drawn here is plain
JSON. The shapes lean on what moves Kafka's decisions:

* clients of mixed capacity (1-4 threads), ids both ``PID_n`` (= ``UUID(0, n)``) and random
  UUIDs (their signed-long order and ``UUID.hashCode`` buckets differ from ``PID_n``'s);
* lags per stateful task: ``-2`` (Kafka's ``Task.LATEST_OFFSET``, ran it as active), ``-3``
  (``SubscriptionInfo.UNKNOWN_OFFSET_SUM``, nothing known), caught-up values around
  ``acceptable.recovery.lag`` and far-behind ones up to ``Long.MAX_VALUE``;
* client tags over two keys (some clients lack one), racks over three names (the partition
  replicas may sit on a fourth that no client has), 0-2 standbys;
* several subtopologies, each stateful or stateless, 1-5 partitions, each task reading 1-2
  source partitions (and as many changelog partitions).
"""

from __future__ import annotations

import uuid
from typing import Any

from hypothesis import strategies as st

JAVA_LONG_MAX = 2**63 - 1
RACKS = ("r0", "r1", "r2")
PARTITION_RACKS = ("r0", "r1", "r2", "r3")
TAG_KEYS = ("zone", "cluster")
TAG_VALUES = ("a", "b", "c")


@st.composite
def client_ids(draw: st.DrawFn, n: int) -> list[str]:
    """``n`` distinct process ids: ``PID_k`` labels and UUID strings mixed."""
    ids: list[str] = []
    keys: set[int] = set()
    while len(ids) < n:
        if draw(st.booleans()):
            k = draw(st.integers(1, 40))
            label, key = f"PID_{k}", k
        else:
            value = draw(st.integers(0, 2**128 - 1))
            label, key = str(uuid.UUID(int=value)), value
        if key not in keys:
            keys.add(key)
            ids.append(label)
    return ids


@st.composite
def topologies(draw: st.DrawFn) -> dict[str, Any]:
    """``tasks`` without racks: subtopologies of 1-5 partitions, each stateful or not."""
    n_sub = draw(st.integers(1, 4))
    stateful: list[str] = []
    stateless: list[str] = []
    subtopologies: dict[str, list[str]] = {}
    for sub in range(n_sub):
        names = [f"{sub}_{p}" for p in range(draw(st.integers(1, 5)))]
        subtopologies[str(sub)] = names
        (stateful if draw(st.booleans()) else stateless).extend(names)
    return {"stateful": stateful, "stateless": stateless, "subtopologies": subtopologies}


def _partition_racks(task_count_partitions: int) -> st.SearchStrategy[Any]:
    one = st.lists(st.sampled_from(PARTITION_RACKS), min_size=1, max_size=2, unique=True)
    if task_count_partitions == 1:
        return st.one_of(one, st.lists(one, min_size=1, max_size=1))
    return st.lists(one, min_size=task_count_partitions, max_size=task_count_partitions)


@st.composite
def with_racks(draw: st.DrawFn, tasks: dict[str, Any], complete: bool) -> dict[str, Any]:
    """``tasks`` plus partition racks: every task's (``complete``) or most tasks'."""
    out = dict(tasks)
    source: dict[str, Any] = {}
    changelog: dict[str, Any] = {}
    for name in tasks["stateful"] + tasks["stateless"]:
        if complete or draw(st.integers(0, 9)) > 0:
            source[name] = draw(_partition_racks(draw(st.integers(1, 2))))
    for name in tasks["stateful"]:
        if complete or draw(st.integers(0, 9)) > 0:
            changelog[name] = draw(_partition_racks(draw(st.integers(1, 2))))
    out["task_source_partition_racks"] = source
    out["task_changelog_partition_racks"] = changelog
    return out


def lags(acceptable: int) -> st.SearchStrategy[int]:
    return st.one_of(
        st.sampled_from([-2, -3, 0, acceptable, acceptable + 1, JAVA_LONG_MAX]),
        st.integers(0, 2 * acceptable + 10),
        st.integers(0, JAVA_LONG_MAX),
    )


@st.composite
def configs(draw: st.DrawFn, *, standbys_min: int = 0, tags: bool = False) -> dict[str, Any]:
    config: dict[str, Any] = {
        "acceptable.recovery.lag": draw(st.sampled_from([0, 10, 100, 10_000])),
        "max.warmup.replicas": draw(st.integers(1, 3)),
        "num.standby.replicas": draw(st.integers(standbys_min, 2)),
        "rack.aware.assignment.strategy": draw(
            st.sampled_from(["none", "min_traffic", "balance_subtopology"])
        ),
    }
    if tags or draw(st.integers(0, 3)) == 0:
        config["rack.aware.assignment.tags"] = draw(
            st.lists(st.sampled_from(TAG_KEYS), min_size=1 if tags else 0, max_size=2, unique=True)
        )
    for key in ("rack.aware.assignment.traffic_cost", "rack.aware.assignment.non_overlap_cost"):
        if draw(st.booleans()):
            config[key] = draw(st.integers(0, 20))
    return config


@st.composite
def _client(
    draw: st.DrawFn, label: str, tasks: dict[str, Any], acceptable: int, rack: bool
) -> dict[str, Any]:
    client: dict[str, Any] = {"id": label, "capacity": draw(st.integers(1, 4))}
    if rack:
        client["rack"] = draw(st.sampled_from(RACKS))
    tags = {k: draw(st.sampled_from(TAG_VALUES)) for k in TAG_KEYS if draw(st.integers(0, 5)) > 0}
    if tags:
        client["tags"] = tags
    task_lags = {t: draw(lags(acceptable)) for t in tasks["stateful"]}
    client["task_lags"] = task_lags
    # history as a member reports it: -2 ran as active, other known offsets are standby state
    client["prev_active"] = [t for t, lag in task_lags.items() if lag == -2]
    client["prev_standby"] = [t for t, lag in task_lags.items() if lag >= 0 and lag % 3 == 0]
    return client


@st.composite
def high_availability_inputs(draw: st.DrawFn) -> dict[str, Any]:
    """A ``high_availability`` document: assignment from scratch, lags for every client."""
    config = draw(configs())
    tasks = draw(topologies())
    rack_aware = config["rack.aware.assignment.strategy"] != "none"
    if rack_aware:
        tasks = draw(with_racks(tasks, complete=draw(st.integers(0, 4)) > 0))
    n = draw(st.integers(1, 6))
    everyone_racked = not rack_aware or draw(st.integers(0, 9)) > 0
    clients = [
        draw(_client(label, tasks, config["acceptable.recovery.lag"], everyone_racked or i > 0))
        for i, label in enumerate(draw(client_ids(n)))
    ]
    return {"assignor": "high_availability", "config": config, "clients": clients, "tasks": tasks}


@st.composite
def _placed_clients(
    draw: st.DrawFn, tasks: dict[str, Any], config: dict[str, Any], standbys: bool, rack: bool
) -> list[dict[str, Any]]:
    """Clients holding every task as active on one of them, and (``standbys``) up to
    ``num.standby.replicas`` standbys of each stateful task elsewhere."""
    n = draw(st.integers(1, 6))
    labels = draw(client_ids(n))
    clients = [
        draw(_client(label, tasks, config["acceptable.recovery.lag"], rack)) for label in labels
    ]
    for c in clients:
        c["current_active"] = []
        c["current_standby"] = []
    for name in tasks["stateful"] + tasks["stateless"]:
        owner = draw(st.integers(0, n - 1))
        clients[owner]["current_active"].append(name)
        if standbys and name in tasks["stateful"]:
            others = [i for i in range(n) if i != owner]
            k = min(len(others), config["num.standby.replicas"])
            if not others:
                continue
            for i in draw(st.lists(st.sampled_from(others), max_size=k, unique=True)):
                clients[i]["current_standby"].append(name)
    return clients


@st.composite
def standby_inputs(draw: st.DrawFn, assignor: str) -> dict[str, Any]:
    """A ``default_standby`` / ``client_tag_standby`` document (standbys over actives)."""
    config = draw(configs(standbys_min=1, tags=assignor == "client_tag_standby"))
    tasks = draw(topologies())
    clients = draw(_placed_clients(tasks, config, standbys=False, rack=draw(st.booleans())))
    return {"assignor": assignor, "config": config, "clients": clients, "tasks": tasks}


@st.composite
def rack_aware_inputs(draw: st.DrawFn, optimize: str) -> dict[str, Any]:
    """A ``rack_aware`` document with rack awareness enabled (every rack known)."""
    standby = optimize == "standby_tasks"
    config = draw(configs(standbys_min=1 if standby else 0))
    config["rack.aware.assignment.strategy"] = draw(
        st.sampled_from(["min_traffic", "balance_subtopology"])
    )
    tasks = draw(topologies())
    if standby and not tasks["stateful"]:
        tasks = {**tasks, "stateful": tasks["stateless"], "stateless": []}
    tasks = draw(with_racks(tasks, complete=True))
    # Kafka optimises actives before any standby exists (HighAvailabilityTaskAssignor); with
    # standbys placed, an optimum may put an active beside its own standby, which Kafka's
    # ClientState refuses: a quarter of the active inputs carry standbys to cover that.
    standbys = standby or draw(st.integers(0, 3)) == 0
    clients = draw(_placed_clients(tasks, config, standbys=standbys, rack=True))
    return {
        "assignor": "rack_aware",
        "optimize": optimize,
        "config": config,
        "clients": clients,
        "tasks": tasks,
    }
