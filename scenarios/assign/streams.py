"""The engine of ``groupsim assign`` for Kafka Streams assignors (DESIGN.md §8).

Input (JSON object; keys outside these are rejected)::

    {"assignor": "high_availability" | "default_standby" | "client_tag_standby" | "rack_aware",
     "optimize": "active_tasks" | "standby_tasks",     # rack_aware only (required there)
     "config": {"acceptable.recovery.lag": 10000, "max.warmup.replicas": 2,
                "num.standby.replicas": 0, "probing.rebalance.interval.ms": 600000,
                "rack.aware.assignment.strategy": "none", "rack.aware.assignment.tags": [],
                "rack.aware.assignment.traffic_cost": null,
                "rack.aware.assignment.non_overlap_cost": null},       # all optional
     "clients": [{"id": "PID_1", "capacity": 1, "rack": "rack0", "tags": {"zone": "z1"},
                  "prev_active": ["0_0"], "prev_standby": [], "task_lags": {"0_0": 0},
                  "current_active": [], "current_standby": []}],      # only "id" required
     "tasks": {"stateful": ["0_0"], "stateless": ["1_0"],
               "subtopologies": {"0": ["0_0"], "1": ["1_0"]},
               "task_source_partition_racks": {"0_0": ["rack0", "rack1"]},
               "task_changelog_partition_racks": {"0_0": ["rack1"]}}}

What each assignor runs (Kafka class in brackets):

* ``high_availability`` [HighAvailabilityTaskAssignor] — the whole KIP-441 assignor from an
  empty assignment (``current_*`` must be empty); every client needs a lag for every stateful
  task (``-2`` ran as active, ``-3`` unknown, else ``>= 0``).
* ``default_standby`` [DefaultStandbyTaskAssignor], ``client_tag_standby``
  [ClientTagAwareStandbyTaskAssignor, tags = ``rack.aware.assignment.tags``] — standby
  placement on top of ``current_active`` (``current_standby`` must be empty); nothing happens
  with ``num.standby.replicas`` 0, as HighAvailabilityTaskAssignor never calls them then.
* ``rack_aware`` [RackAwareTaskAssignor] — ``optimize: active_tasks`` re-places the current
  actives, stateful with the configured (default 10/1) traffic/non-overlap costs and then
  stateless with 1/0, as the HighAvailabilityTaskAssignor does; ``standby_tasks`` runs the
  pairwise standby optimiser (move predicate of the standby assignor the config selects).
  When rack awareness cannot be enabled (strategy ``none``, a client without ``rack``, a task
  without partition racks) Kafka skips it silently: so does groupsim, logging a warning on
  the ``groupsim.streams`` logger, and the output has no ``cost``.

Validation follows Kafka's config validators (``max.warmup.replicas`` >= 1,
``probing.rebalance.interval.ms`` >= 60000, ``acceptable.recovery.lag`` >= 0, at most 5
``rack.aware.assignment.tags``, client tags: at most 5, key <= 20, value <= 30 characters) and
adds groupsim's own: ``num.standby.replicas`` and the two costs >= 0 (Kafka has no validator),
lags -3, -2 or >= 0, no task both stateful and stateless, no lag/standby for a task that is
not stateful, one active per task. ``prev_active``/``prev_standby`` are informational (HATA
decides from lags) and may name tasks no longer in the topology, as Kafka's may. Kafka's rule
that every configured tag key exists on the instance itself is not checked (older clients
send no tags; the assignors cope). Task ids are ``<subtopology>_<partition>`` without a named
topology.

A task's partition racks are either one list of rack names (the task reads one partition
whose replicas are on those racks) or a list of such lists (one per partition).

Output::

    {"clients": {"PID_1": {"active": ["0_0"], "standby": []}},     # Kafka's sorted orders
     "probing_rebalance_needed": false,
     "cost": {"before": 40, "after": 4}}      # only when rack-aware optimisation ran

``cost`` sums over the optimiser calls that ran (stateful actives, standbys, stateless
actives): the cost of the placement each call started from and the minimum it reached.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from typing import Any

from members.assignors.streams import (
    JAVA_LONG_MAX,
    AssignmentConfigs,
    ClientState,
    ClientTagAwareStandbyTaskAssignor,
    DefaultStandbyTaskAssignor,
    ProcessId,
    RackAwareTaskAssignor,
    StreamsAssignmentError,
    TaskId,
    assign_high_availability,
    create_standby_assignor,
    validate_client_tags,
)
from members.assignors.streams.model import JAVA_INT_MAX, STRATEGIES
from members.assignors.streams.rack_aware import (
    DEFAULT_NON_OVERLAP_COST,
    DEFAULT_TRAFFIC_COST,
    STATELESS_NON_OVERLAP_COST,
    STATELESS_TRAFFIC_COST,
)
from scenarios.input.json_input import check_keys, require_object, type_name

__all__ = ["STREAMS_ASSIGNORS", "StreamsAssignInputError", "run_assign_streams"]

#: The ``assignor`` names this engine runs.
STREAMS_ASSIGNORS = ("high_availability", "default_standby", "client_tag_standby", "rack_aware")
_OPTIMIZE = ("active_tasks", "standby_tasks")
_TOP_KEYS = {"assignor", "optimize", "config", "clients", "tasks"}
_CLIENT_KEYS = {
    "id",
    "capacity",
    "rack",
    "tags",
    "prev_active",
    "prev_standby",
    "task_lags",
    "current_active",
    "current_standby",
}
_TASK_KEYS = {
    "stateful",
    "stateless",
    "subtopologies",
    "task_source_partition_racks",
    "task_changelog_partition_racks",
}
_CONFIG_KEYS = {
    "acceptable.recovery.lag",
    "max.warmup.replicas",
    "num.standby.replicas",
    "probing.rebalance.interval.ms",
    "rack.aware.assignment.strategy",
    "rack.aware.assignment.tags",
    "rack.aware.assignment.traffic_cost",
    "rack.aware.assignment.non_overlap_cost",
}


class StreamsAssignInputError(ValueError):
    """Bad ``groupsim assign`` input for a Streams assignor; the message starts with the key
    path, e.g. ``clients[2].task_lags.0_1: ...``."""

    def __init__(self, path: str, detail: str) -> None:
        super().__init__(f"{path}: {detail}" if path else detail)
        self.path = path
        self.detail = detail


# --- small typed readers -------------------------------------------------------------------
def _obj(value: object, path: str) -> dict[str, Any]:
    return require_object(value, path, StreamsAssignInputError)


def _check_keys(obj: dict[str, Any], allowed: set[str], path: str) -> None:
    check_keys(obj, allowed, path, StreamsAssignInputError)


def _int(value: object, path: str, low: int, high: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise StreamsAssignInputError(path, f"expected an integer, got {type_name(value)}")
    if value < low:
        raise StreamsAssignInputError(path, f"must be >= {low}, got {value}")
    if value > high:
        raise StreamsAssignInputError(path, f"must be <= {high}, got {value}")
    return value


def _str(value: object, path: str) -> str:
    if not isinstance(value, str):
        raise StreamsAssignInputError(path, f"expected a string, got {type_name(value)}")
    if not value:
        raise StreamsAssignInputError(path, "must not be empty")
    return value


def _items(value: object, path: str) -> Iterator[tuple[str, Any]]:
    if not isinstance(value, list):
        raise StreamsAssignInputError(path, f"expected an array, got {type_name(value)}")
    for i, item in enumerate(value):
        yield f"{path}[{i}]", item


def _task(text: object, path: str) -> TaskId:
    try:
        return TaskId.parse(_str(text, path))
    except StreamsAssignmentError as exc:
        raise StreamsAssignInputError(path, str(exc)) from None


def _task_list(value: object, path: str) -> list[TaskId]:
    out: list[TaskId] = []
    seen: set[TaskId] = set()
    for item_path, item in _items(value, path):
        task = _task(item, item_path)
        if task in seen:
            raise StreamsAssignInputError(item_path, f"task {task} is listed twice")
        seen.add(task)
        out.append(task)
    return out


# --- config ----------------------------------------------------------------------------------
def _config(doc: dict[str, Any]) -> AssignmentConfigs:
    raw = _obj(doc.get("config", {}), "config")
    _check_keys(raw, _CONFIG_KEYS, "config")

    def path(key: str) -> str:
        return f"config.{key}"

    kwargs: dict[str, Any] = {}
    if "acceptable.recovery.lag" in raw:
        key = "acceptable.recovery.lag"
        kwargs["acceptable_recovery_lag"] = _int(raw[key], path(key), 0, JAVA_LONG_MAX)
    if "max.warmup.replicas" in raw:
        key = "max.warmup.replicas"
        kwargs["max_warmup_replicas"] = _int(raw[key], path(key), 1, JAVA_INT_MAX)
    if "num.standby.replicas" in raw:
        key = "num.standby.replicas"
        kwargs["num_standby_replicas"] = _int(raw[key], path(key), 0, JAVA_INT_MAX)
    if "probing.rebalance.interval.ms" in raw:
        key = "probing.rebalance.interval.ms"
        kwargs["probing_rebalance_interval_ms"] = _int(raw[key], path(key), 60_000, JAVA_LONG_MAX)
    if "rack.aware.assignment.strategy" in raw:
        key = "rack.aware.assignment.strategy"
        strategy = _str(raw[key], path(key))
        if strategy not in STRATEGIES:
            raise StreamsAssignInputError(
                path(key),
                f"unknown strategy {strategy!r} (expected one of {', '.join(STRATEGIES)})",
            )
        kwargs["rack_aware_assignment_strategy"] = strategy
    if "rack.aware.assignment.tags" in raw:
        key = "rack.aware.assignment.tags"
        tags = [_str(t, p) for p, t in _items(raw[key], path(key))]
        if len(tags) > 5:
            raise StreamsAssignInputError(path(key), f"at most 5 tags are allowed, got {len(tags)}")
        kwargs["rack_aware_assignment_tags"] = tuple(dict.fromkeys(tags))
    for key, field in (
        ("rack.aware.assignment.traffic_cost", "traffic_cost"),
        ("rack.aware.assignment.non_overlap_cost", "non_overlap_cost"),
    ):
        if raw.get(key) is not None:
            kwargs[field] = _int(raw[key], path(key), 0, JAVA_INT_MAX)
    return AssignmentConfigs(**kwargs)


# --- tasks -----------------------------------------------------------------------------------
class _Tasks:
    def __init__(self, doc: dict[str, Any]) -> None:
        if "tasks" not in doc:
            raise StreamsAssignInputError("tasks", "missing")
        raw = _obj(doc["tasks"], "tasks")
        _check_keys(raw, _TASK_KEYS, "tasks")
        self.stateful = _task_list(raw.get("stateful", []), "tasks.stateful")
        self.stateless = _task_list(raw.get("stateless", []), "tasks.stateless")
        stateful_set = set(self.stateful)
        for i, task in enumerate(self.stateless):
            if task in stateful_set:
                raise StreamsAssignInputError(
                    f"tasks.stateless[{i}]", f"task {task} is also listed as stateful"
                )
        self.all = stateful_set | set(self.stateless)
        self.stateful_set = stateful_set
        self.subtopologies: dict[int, list[TaskId]] | None = None
        if "subtopologies" in raw:
            subs = _obj(raw["subtopologies"], "tasks.subtopologies")
            self.subtopologies = {}
            for key, tasks in subs.items():
                path = f"tasks.subtopologies.{key}"
                try:
                    sub = int(key)
                except ValueError:
                    sub = -1
                if sub < 0 or str(sub) != key:
                    raise StreamsAssignInputError(path, "a subtopology id is a decimal integer")
                listed = _task_list(tasks, path)
                for i, task in enumerate(listed):
                    self._known(task, f"{path}[{i}]")
                    if task.subtopology != sub:
                        raise StreamsAssignInputError(
                            f"{path}[{i}]", f"task {task} belongs to subtopology {task.subtopology}"
                        )
                self.subtopologies[sub] = listed
        self.source_racks = self._racks(raw, "task_source_partition_racks", self.all)
        self.changelog_racks = self._racks(raw, "task_changelog_partition_racks", stateful_set)

    def _known(self, task: TaskId, path: str, within: set[TaskId] | None = None) -> None:
        if task not in (self.all if within is None else within):
            kind = "stateful task" if within is self.stateful_set else "task"
            raise StreamsAssignInputError(path, f"{task} is not a {kind} of tasks")

    def _racks(
        self, raw: dict[str, Any], key: str, within: set[TaskId]
    ) -> dict[TaskId, list[frozenset[str]]]:
        if key not in raw:
            return {}
        base = f"tasks.{key}"
        out: dict[TaskId, list[frozenset[str]]] = {}
        for name, racks in _obj(raw[key], base).items():
            path = f"{base}.{name}"
            task = _task(name, path)
            self._known(task, path, within)
            items = list(_items(racks, path))
            if items and all(isinstance(item, list) for _, item in items):
                out[task] = [
                    frozenset(_str(r, p2) for p2, r in _items(item, p)) for p, item in items
                ]
            else:
                out[task] = [frozenset(_str(r, p) for p, r in items)]
        return out


# --- clients ---------------------------------------------------------------------------------
def _clients(doc: dict[str, Any], tasks: _Tasks, assignor: str) -> dict[ProcessId, ClientState]:
    if "clients" not in doc:
        raise StreamsAssignInputError("clients", "missing")
    clients: dict[ProcessId, ClientState] = {}
    active_owner: dict[TaskId, str] = {}
    items = list(_items(doc["clients"], "clients"))
    if not items:
        raise StreamsAssignInputError("clients", "must hold at least one client")
    for path, raw_client in items:
        raw = _obj(raw_client, path)
        _check_keys(raw, _CLIENT_KEYS, path)
        if "id" not in raw:
            raise StreamsAssignInputError(f"{path}.id", "missing")
        label = _str(raw["id"], f"{path}.id")
        pid = ProcessId.of(label)
        if pid in clients:
            raise StreamsAssignInputError(
                f"{path}.id", f"{label!r} is the same process as {clients[pid].process_id.label!r}"
            )
        capacity = _int(raw.get("capacity", 1), f"{path}.capacity", 1, JAVA_INT_MAX)
        rack = None if raw.get("rack") is None else _str(raw["rack"], f"{path}.rack")
        tags: dict[str, str] = {}
        for key, value in _obj(raw.get("tags", {}), f"{path}.tags").items():
            tags[key] = _str(value, f"{path}.tags.{key}")
        try:
            validate_client_tags(tags)
        except StreamsAssignmentError as exc:
            raise StreamsAssignInputError(f"{path}.tags", str(exc)) from None
        prev_active = _task_list(raw.get("prev_active", []), f"{path}.prev_active")
        prev_standby = _task_list(raw.get("prev_standby", []), f"{path}.prev_standby")
        for i, task in enumerate(prev_standby):
            if task in prev_active:
                raise StreamsAssignInputError(
                    f"{path}.prev_standby[{i}]", f"task {task} is also in prev_active"
                )
        lags: dict[TaskId, int] = {}
        for name, lag in _obj(raw.get("task_lags", {}), f"{path}.task_lags").items():
            lag_path = f"{path}.task_lags.{name}"
            task = _task(name, lag_path)
            if task not in tasks.stateful_set:
                raise StreamsAssignInputError(lag_path, f"{task} is not a stateful task")
            lag = _int(lag, lag_path, -3, JAVA_LONG_MAX)
            if lag == -1:
                raise StreamsAssignInputError(
                    lag_path, "a lag is -2 (running active), -3 (unknown) or >= 0"
                )
            lags[task] = lag
        current_active = _task_list(raw.get("current_active", []), f"{path}.current_active")
        current_standby = _task_list(raw.get("current_standby", []), f"{path}.current_standby")
        for key, listed in (
            ("current_active", current_active),
            ("current_standby", current_standby),
        ):
            if listed and assignor == "high_availability":
                raise StreamsAssignInputError(
                    f"{path}.{key}", "high_availability assigns from scratch: must be empty"
                )
        if current_standby and assignor in ("default_standby", "client_tag_standby"):
            raise StreamsAssignInputError(
                f"{path}.current_standby",
                "the standby assignors start from actives only: must be empty",
            )
        for i, task in enumerate(current_active):
            item = f"{path}.current_active[{i}]"
            tasks._known(task, item)
            if task in active_owner:
                raise StreamsAssignInputError(
                    item, f"task {task} is already active on {active_owner[task]}"
                )
            active_owner[task] = label
        for i, task in enumerate(current_standby):
            item = f"{path}.current_standby[{i}]"
            tasks._known(task, item)
            if task not in tasks.stateful_set:
                raise StreamsAssignInputError(item, f"task {task} is stateless: no standby")
            if task in current_active:
                raise StreamsAssignInputError(item, f"task {task} is also active on this client")
        clients[pid] = ClientState(
            pid,
            capacity,
            prev_active=prev_active,
            prev_standby=prev_standby,
            lags=lags,
            tags=tags,
            rack=rack,
            active=current_active,
            standby=current_standby,
        )
    if assignor == "high_availability":
        for (path, _), state in zip(items, clients.values(), strict=True):
            for task in tasks.stateful:
                if task not in state.lags:
                    raise StreamsAssignInputError(
                        f"{path}.task_lags", f"missing lag for stateful task {task}"
                    )
    if assignor == "rack_aware" and doc.get("optimize") == "active_tasks":
        for group, name in ((tasks.stateful, "stateful"), (tasks.stateless, "stateless")):
            for i, task in enumerate(group):
                if task not in active_owner:
                    raise StreamsAssignInputError(
                        f"tasks.{name}[{i}]",
                        f"task {task} is active on no client (optimizing actives needs one)",
                    )
    return clients


def _output(
    clients: dict[ProcessId, ClientState], probing: bool, cost: tuple[int, int] | None
) -> dict[str, Any]:
    out: dict[str, Any] = {
        "clients": {
            pid.label: {
                "active": [str(t) for t in clients[pid].sorted_active()],
                "standby": [str(t) for t in clients[pid].sorted_standby()],
            }
            for pid in sorted(clients)
        },
        "probing_rebalance_needed": probing,
    }
    if cost is not None:
        out["cost"] = {"before": cost[0], "after": cost[1]}
    return out


def run_assign_streams(doc: dict) -> dict:
    """Run one Kafka Streams assignor on a decoded ``groupsim assign`` document.

    Args:
        doc: the input object (shape in the module docstring, DESIGN.md §8).

    Returns:
        ``{"clients": {id: {"active": [...], "standby": [...]}}, "probing_rebalance_needed":
        bool}`` plus ``"cost": {"before": int, "after": int}`` when rack-aware optimisation
        ran; task lists in Kafka's TaskId order, clients in Java UUID / String order.

    Raises:
        StreamsAssignInputError: unknown assignor/keys, wrong types, configs outside Kafka's
            validators, unknown strategies, tags over Kafka's limits, malformed or duplicate
            task/client ids, inconsistent task sets (a task both stateful and stateless, lags
            or standbys of unknown/stateless tasks, an active on two clients, a missing lag);
            the message starts with the key path.
    """
    doc = _obj(doc, "")
    _check_keys(doc, _TOP_KEYS, "")
    if "assignor" not in doc:
        raise StreamsAssignInputError("assignor", "missing")
    assignor = _str(doc["assignor"], "assignor")
    if assignor not in STREAMS_ASSIGNORS:
        raise StreamsAssignInputError(
            "assignor",
            f"unknown Streams assignor {assignor!r} (known: {', '.join(STREAMS_ASSIGNORS)})",
        )
    optimize = None
    if assignor == "rack_aware":
        if "optimize" not in doc:
            raise StreamsAssignInputError("optimize", "missing (active_tasks or standby_tasks)")
        optimize = _str(doc["optimize"], "optimize")
        if optimize not in _OPTIMIZE:
            raise StreamsAssignInputError(
                "optimize", f"unknown value {optimize!r} (expected active_tasks or standby_tasks)"
            )
    elif "optimize" in doc:
        raise StreamsAssignInputError("optimize", "only the rack_aware assignor takes it")
    configs = _config(doc)
    tasks = _Tasks(doc)
    clients = _clients(doc, tasks, assignor)
    try:
        return _run(assignor, optimize, configs, tasks, clients)
    except StreamsAssignmentError as exc:  # consistent-looking input Kafka would still reject
        raise StreamsAssignInputError("clients", str(exc)) from None


def _run(
    assignor: str,
    optimize: str | None,
    configs: AssignmentConfigs,
    tasks: _Tasks,
    clients: dict[ProcessId, ClientState],
) -> dict[str, Any]:
    stateful = sorted(tasks.stateful)
    stateless = sorted(tasks.stateless)
    if assignor == "high_availability":
        rack = RackAwareTaskAssignor(
            clients,
            tasks.source_racks,
            tasks.changelog_racks,
            configs,
            subtopologies=tasks.subtopologies,
        )
        result = assign_high_availability(clients, stateful, stateless, configs, rack)
        cost = None
        if result.cost_before is not None and result.cost_after is not None:
            cost = (result.cost_before, result.cost_after)
        return _output(clients, result.probing_rebalance_needed, cost)
    if assignor in ("default_standby", "client_tag_standby"):
        if configs.num_standby_replicas > 0:
            standby = (
                DefaultStandbyTaskAssignor(configs.num_standby_replicas)
                if assignor == "default_standby"
                else ClientTagAwareStandbyTaskAssignor(
                    configs.num_standby_replicas, configs.rack_aware_assignment_tags
                )
            )
            standby.assign(clients, stateful)
        return _output(clients, False, None)
    # rack_aware
    check_configs = configs
    if optimize == "standby_tasks" and configs.num_standby_replicas == 0:
        check_configs = dataclasses.replace(configs, num_standby_replicas=1)
    rack = RackAwareTaskAssignor(
        clients,
        tasks.source_racks,
        tasks.changelog_racks,
        check_configs,
        subtopologies=tasks.subtopologies,
    )
    if not rack.can_enable([*stateful, *stateless], stateful):
        return _output(clients, False, None)
    traffic = configs.traffic_cost if configs.traffic_cost is not None else DEFAULT_TRAFFIC_COST
    non_overlap = (
        configs.non_overlap_cost
        if configs.non_overlap_cost is not None
        else DEFAULT_NON_OVERLAP_COST
    )
    before = after = 0
    if optimize == "active_tasks":
        for group, t_cost, n_cost in (
            (stateful, traffic, non_overlap),
            (stateless, STATELESS_TRAFFIC_COST, STATELESS_NON_OVERLAP_COST),
        ):
            if group:
                before += rack.assignment_cost(group, t_cost, n_cost)
                after += rack.optimize_active_tasks(group, t_cost, n_cost)
    else:
        before = rack.assignment_cost(stateful, traffic, 0, standby=True)
        predicate = create_standby_assignor(configs).is_allowed_task_movement_for_task
        after = rack.optimize_standby_tasks(traffic, non_overlap, predicate)
    return _output(clients, False, (before, after))
