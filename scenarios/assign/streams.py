"""The engine of ``groupsim assign`` for Kafka Streams assignors (docs/cli-contracts.md).

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
from typing import Any

from msgspec import UNSET

from members.assignors.streams import (
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
from members.assignors.streams.model import STRATEGIES
from members.assignors.streams.rack_aware import (
    DEFAULT_NON_OVERLAP_COST,
    DEFAULT_TRAFFIC_COST,
    STATELESS_NON_OVERLAP_COST,
    STATELESS_TRAFFIC_COST,
    Solver,
)
from protocol.errors import InputError
from scenarios.input.assign_schema import (
    StreamsAssignConfig,
    StreamsAssignInput,
    StreamsClientInput,
    StreamsTasksInput,
)
from scenarios.input.json_input import decode_json_input

__all__ = ["STREAMS_ASSIGNORS", "StreamsAssignInputError", "run_assign_streams"]

#: The ``assignor`` names this engine runs.
STREAMS_ASSIGNORS = ("high_availability", "default_standby", "client_tag_standby", "rack_aware")
_OPTIMIZE = ("active_tasks", "standby_tasks")


class StreamsAssignInputError(InputError):
    """Bad ``groupsim assign`` input for a Streams assignor; the message starts with the key
    path, e.g. ``clients[2].task_lags.0_1: ...``."""

    def __init__(self, path: str, detail: str) -> None:
        super().__init__(f"{path}: {detail}" if path else detail)
        self.path = path
        self.detail = detail


# --- task ids ------------------------------------------------------------------------------
def _task(text: str, path: str) -> TaskId:
    try:
        return TaskId.parse(text)
    except StreamsAssignmentError as exc:
        raise StreamsAssignInputError(path, str(exc)) from None


def _task_list(items: list[str], path: str) -> list[TaskId]:
    out: list[TaskId] = []
    seen: set[TaskId] = set()
    for i, item in enumerate(items):
        item_path = f"{path}[{i}]"
        task = _task(item, item_path)
        if task in seen:
            raise StreamsAssignInputError(item_path, f"task {task} is listed twice")
        seen.add(task)
        out.append(task)
    return out


# --- config ----------------------------------------------------------------------------------
def _config(raw: StreamsAssignConfig) -> AssignmentConfigs:
    """``AssignmentConfigs`` from the decoded ``config`` (bounds checked by its Struct)."""
    kwargs: dict[str, Any] = {}
    for field in (
        "acceptable_recovery_lag",
        "max_warmup_replicas",
        "num_standby_replicas",
        "probing_rebalance_interval_ms",
    ):
        value = getattr(raw, field)
        if value is not UNSET:
            kwargs[field] = value
    if raw.rack_aware_assignment_strategy is not UNSET:
        strategy = raw.rack_aware_assignment_strategy
        if strategy not in STRATEGIES:
            raise StreamsAssignInputError(
                "config.rack.aware.assignment.strategy",
                f"unknown strategy {strategy!r} (expected one of {', '.join(STRATEGIES)})",
            )
        kwargs["rack_aware_assignment_strategy"] = strategy
    if raw.rack_aware_assignment_tags is not UNSET:
        tags = raw.rack_aware_assignment_tags
        if len(tags) > 5:
            raise StreamsAssignInputError(
                "config.rack.aware.assignment.tags", f"at most 5 tags are allowed, got {len(tags)}"
            )
        kwargs["rack_aware_assignment_tags"] = tuple(dict.fromkeys(tags))
    for field in ("traffic_cost", "non_overlap_cost"):
        if getattr(raw, field) is not None:
            kwargs[field] = getattr(raw, field)
    return AssignmentConfigs(**kwargs)


# --- tasks -----------------------------------------------------------------------------------
class _Tasks:
    def __init__(self, raw: StreamsTasksInput) -> None:
        self.stateful = _task_list(raw.stateful, "tasks.stateful")
        self.stateless = _task_list(raw.stateless, "tasks.stateless")
        stateful_set = set(self.stateful)
        for i, task in enumerate(self.stateless):
            if task in stateful_set:
                raise StreamsAssignInputError(
                    f"tasks.stateless[{i}]", f"task {task} is also listed as stateful"
                )
        self.all = stateful_set | set(self.stateless)
        self.stateful_set = stateful_set
        self.subtopologies: dict[int, list[TaskId]] | None = None
        if raw.subtopologies is not UNSET:
            self.subtopologies = {}
            for key, tasks in raw.subtopologies.items():
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
        self.source_racks = self._racks(
            raw.task_source_partition_racks, "task_source_partition_racks", self.all
        )
        self.changelog_racks = self._racks(
            raw.task_changelog_partition_racks, "task_changelog_partition_racks", stateful_set
        )

    def _known(self, task: TaskId, path: str, within: set[TaskId] | None = None) -> None:
        if task not in (self.all if within is None else within):
            kind = "stateful task" if within is self.stateful_set else "task"
            raise StreamsAssignInputError(path, f"{task} is not a {kind} of tasks")

    def _racks(
        self, raw: dict[str, list[str | list[str]]], key: str, within: set[TaskId]
    ) -> dict[TaskId, list[frozenset[str]]]:
        """One rack set per partition: a list of lists is one per partition, a flat list of
        rack names is the racks of the task's one partition."""
        base = f"tasks.{key}"
        out: dict[TaskId, list[frozenset[str]]] = {}
        for name, racks in raw.items():
            path = f"{base}.{name}"
            task = _task(name, path)
            self._known(task, path, within)
            if racks and all(isinstance(item, list) for item in racks):
                out[task] = [frozenset(item) for item in racks]
                continue
            for i, item in enumerate(racks):
                if isinstance(item, list):
                    raise StreamsAssignInputError(f"{path}[{i}]", "expected a string, got an array")
            out[task] = [frozenset(r for r in racks if isinstance(r, str))]
        return out


# --- clients ---------------------------------------------------------------------------------
def _clients(
    raw_clients: list[StreamsClientInput], tasks: _Tasks, assignor: str, optimize: str | None
) -> dict[ProcessId, ClientState]:
    clients: dict[ProcessId, ClientState] = {}
    active_owner: dict[TaskId, str] = {}
    if not raw_clients:
        raise StreamsAssignInputError("clients", "must hold at least one client")
    for index, raw in enumerate(raw_clients):
        path = f"clients[{index}]"
        label = raw.id
        pid = ProcessId.of(label)
        if pid in clients:
            raise StreamsAssignInputError(
                f"{path}.id", f"{label!r} is the same process as {clients[pid].process_id.label!r}"
            )
        tags = dict(raw.tags)
        try:
            validate_client_tags(tags)
        except StreamsAssignmentError as exc:
            raise StreamsAssignInputError(f"{path}.tags", str(exc)) from None
        prev_active = _task_list(raw.prev_active, f"{path}.prev_active")
        prev_standby = _task_list(raw.prev_standby, f"{path}.prev_standby")
        for i, task in enumerate(prev_standby):
            if task in prev_active:
                raise StreamsAssignInputError(
                    f"{path}.prev_standby[{i}]", f"task {task} is also in prev_active"
                )
        lags: dict[TaskId, int] = {}
        for name, lag in raw.task_lags.items():
            lag_path = f"{path}.task_lags.{name}"
            task = _task(name, lag_path)
            if task not in tasks.stateful_set:
                raise StreamsAssignInputError(lag_path, f"{task} is not a stateful task")
            if lag == -1:
                raise StreamsAssignInputError(
                    lag_path, "a lag is -2 (running active), -3 (unknown) or >= 0"
                )
            lags[task] = lag
        current_active = _task_list(raw.current_active, f"{path}.current_active")
        current_standby = _task_list(raw.current_standby, f"{path}.current_standby")
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
            raw.capacity,
            prev_active=prev_active,
            prev_standby=prev_standby,
            lags=lags,
            tags=tags,
            rack=raw.rack,
            active=current_active,
            standby=current_standby,
        )
    if assignor == "high_availability":
        for index, state in enumerate(clients.values()):
            for task in tasks.stateful:
                if task not in state.lags:
                    raise StreamsAssignInputError(
                        f"clients[{index}].task_lags", f"missing lag for stateful task {task}"
                    )
    if assignor == "rack_aware" and optimize == "active_tasks":
        for group, name in ((tasks.stateful, "stateful"), (tasks.stateless, "stateless")):
            for i, task in enumerate(group):
                if task not in active_owner:
                    raise StreamsAssignInputError(
                        f"tasks.{name}[{i}]",
                        f"task {task} is active on no client (optimizing actives needs one)",
                    )
    return clients


def assign_output(
    clients: dict[ProcessId, ClientState], probing: bool, cost: tuple[int, int] | None
) -> dict[str, Any]:
    """``groupsim assign``'s answer for assigned ``clients`` (shape: :func:`run_assign_streams`)."""
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


def run_assign_streams(doc: dict, solver: Solver = "ortools") -> dict:
    """Run one Kafka Streams assignor on a decoded ``groupsim assign`` document.

    Args:
        doc: the input object (shape in the module docstring, docs/cli-contracts.md).
        solver: the rack-aware optimiser's min-cost-flow solver: ``"ortools"`` (what a
            Streams leader runs) or ``"cycle_cancelling"`` (Kafka's own algorithm, which picks
            the same optimum as Kafka where several exist).

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
    prepared = prepare_assign_streams(doc)
    try:
        probing, cost = assign_prepared(prepared, prepared.clients, solver)
    except StreamsAssignmentError as exc:  # consistent-looking input Kafka would still reject
        raise StreamsAssignInputError("clients", str(exc)) from None
    return assign_output(prepared.clients, probing, cost)


@dataclasses.dataclass
class PreparedStreamsAssign:
    """A checked ``groupsim assign`` Streams document, ready for :func:`assign_prepared`.

    ``clients`` are the parsed client states before assignment; pass a copy
    (:meth:`fresh_clients`) to assign the same input again.
    """

    assignor: str
    optimize: str | None
    configs: AssignmentConfigs
    tasks: _Tasks
    clients: dict[ProcessId, ClientState]

    def fresh_clients(self) -> dict[ProcessId, ClientState]:
        """Independent copies of :attr:`clients` (``ClientState.copy``)."""
        return {p: c.copy() for p, c in self.clients.items()}


def prepare_assign_streams(doc: dict) -> PreparedStreamsAssign:
    """The checking and parsing half of :func:`run_assign_streams` (same errors)."""
    typed = decode_json_input(doc, StreamsAssignInput, StreamsAssignInputError)
    assignor = typed.assignor
    if assignor not in STREAMS_ASSIGNORS:
        raise StreamsAssignInputError(
            "assignor",
            f"unknown Streams assignor {assignor!r} (known: {', '.join(STREAMS_ASSIGNORS)})",
        )
    optimize = None
    if assignor == "rack_aware":
        if typed.optimize is UNSET:
            raise StreamsAssignInputError("optimize", "missing (active_tasks or standby_tasks)")
        optimize = typed.optimize
        if optimize not in _OPTIMIZE:
            raise StreamsAssignInputError(
                "optimize", f"unknown value {optimize!r} (expected active_tasks or standby_tasks)"
            )
    elif typed.optimize is not UNSET:
        raise StreamsAssignInputError("optimize", "only the rack_aware assignor takes it")
    configs = _config(typed.config)
    if typed.tasks is UNSET:
        raise StreamsAssignInputError("tasks", "missing")
    tasks = _Tasks(typed.tasks)
    if typed.clients is UNSET:
        raise StreamsAssignInputError("clients", "missing")
    clients = _clients(typed.clients, tasks, assignor, optimize)
    return PreparedStreamsAssign(assignor, optimize, configs, tasks, clients)


def assign_prepared(
    prepared: PreparedStreamsAssign,
    clients: dict[ProcessId, ClientState],
    solver: Solver = "ortools",
) -> tuple[bool, tuple[int, int] | None]:
    """Run the document's assignor on ``clients`` (changed in place): the Kafka call
    ``groupsim assign`` makes, without building its answer.

    Returns:
        (probing rebalance needed, (cost before, cost after) when rack-aware optimisation ran).

    Raises:
        StreamsAssignmentError: an input Kafka's assignor rejects.
    """
    assignor, optimize, configs, tasks = (
        prepared.assignor,
        prepared.optimize,
        prepared.configs,
        prepared.tasks,
    )
    stateful = sorted(tasks.stateful)
    stateless = sorted(tasks.stateless)
    if assignor == "high_availability":
        rack = RackAwareTaskAssignor(
            clients,
            tasks.source_racks,
            tasks.changelog_racks,
            configs,
            subtopologies=tasks.subtopologies,
            solver=solver,
        )
        result = assign_high_availability(clients, stateful, stateless, configs, rack)
        cost = None
        if result.cost_before is not None and result.cost_after is not None:
            cost = (result.cost_before, result.cost_after)
        return result.probing_rebalance_needed, cost
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
        return False, None
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
        solver=solver,
    )
    if not rack.can_enable([*stateful, *stateless], stateful):
        return False, None
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
    return False, (before, after)
