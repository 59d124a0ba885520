"""Rack-aware task placement (KIP-925): Kafka ``RackAwareTaskAssignor`` and its graph
constructors ``MinTrafficGraphConstructor`` / ``BalanceSubtopologyGraphConstructor``.

The graphs are Kafka's (same nodes, edges, capacities and costs); the min-cost flow is solved
with OR-Tools instead of Kafka's cycle cancelling, so the *total cost* is Kafka's (both are
exact optima) while, where several assignments reach that cost, groupsim keeps the one closest
to the assignment it started from (fewest tasks moved) — Kafka's pick depends on the order its
Bellman–Ford meets negative cycles. ``solver="cycle_cancelling"`` runs Kafka's algorithm
itself (:meth:`Graph.solve_min_cost_flow_cycle_cancelling`) on the same graphs, for small
inputs and cross-checks.

Cost of task ``t`` on client ``c`` (``RackAwareTaskAssignor.getCost``): for every partition of
``t`` (source partitions for actives, changelog partitions for standbys) whose replicas are all
on racks other than ``c``'s, ``traffic_cost``; plus ``non_overlap_cost`` if ``c`` does not
hold ``t`` in that role now.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Literal

from .graph import Graph, solve_transport
from .model import AssignmentConfigs, ClientState, ProcessId, StreamsAssignmentError, TaskId

# numpy is imported where it is used: a Connect-only run (the flagship ``groupsim run``)
# never pays for it.
if TYPE_CHECKING:
    import numpy as np

__all__ = [
    "RackAwareTaskAssignor",
    "STANDBY_OPTIMIZER_MAX_ITERATION",
    "DEFAULT_TRAFFIC_COST",
    "DEFAULT_NON_OVERLAP_COST",
    "STATELESS_TRAFFIC_COST",
    "STATELESS_NON_OVERLAP_COST",
    "PartitionRacks",
]

log = logging.getLogger("groupsim.streams")

#: HighAvailabilityTaskAssignor's defaults for ``traffic_cost`` / ``non_overlap_cost``.
DEFAULT_TRAFFIC_COST = 10
DEFAULT_NON_OVERLAP_COST = 1
#: ``RackAwareTaskAssignor.STATELESS_TRAFFIC_COST`` / ``STATELESS_NON_OVERLAP_COST``.
STATELESS_TRAFFIC_COST = 1
STATELESS_NON_OVERLAP_COST = 0
#: ``RackAwareTaskAssignor.STANDBY_OPTIMIZER_MAX_ITERATION``.
STANDBY_OPTIMIZER_MAX_ITERATION = 4

#: Per task: one entry per partition, the set of racks of that partition's replicas.
PartitionRacks = Mapping[TaskId, Sequence[frozenset[str]]]
MoveAllowed = Callable[[ClientState, ClientState, TaskId, Mapping[ProcessId, ClientState]], bool]
Solver = Literal["ortools", "cycle_cancelling"]


class RackAwareTaskAssignor:
    """Kafka ``RackAwareTaskAssignor`` over a fixed set of clients and partition racks.

    Args:
        clients: every client (its ``rack`` is ``client.rack``); mutated by the optimizers.
        source_racks: task → replica racks of each source partition (actives' cost).
        changelog_racks: stateful task → replica racks of each changelog partition (standbys).
        configs: ``rack.aware.assignment.strategy`` and ``num.standby.replicas`` are used.
        subtopologies: subtopology → its tasks (Kafka ``tasksForTopicGroup``); by default
            grouped by ``TaskId.subtopology``.
        solver: ``"ortools"`` (default) or ``"cycle_cancelling"`` (Kafka's algorithm) for the
            active graphs.
        pair_solver: the solver of the standby optimiser's two-client graphs; by default
            Kafka's cycle cancelling, because each pair's result is the next pair's input, so
            only Kafka's own pick among equal-cost swaps keeps the final total cost Kafka's
            (OR-Tools' pick differs in about 1 of 200 random cases). Pairs whose standbys admit
            no improving swap — the optimality condition of a two-client graph — are skipped
            without building a graph (Kafka finds no negative cycle there either).

    ``notes`` collects why rack awareness was disabled, if it was (also logged as warnings).
    """

    def __init__(
        self,
        clients: Mapping[ProcessId, ClientState],
        source_racks: PartitionRacks,
        changelog_racks: PartitionRacks,
        configs: AssignmentConfigs,
        *,
        subtopologies: Mapping[int, Sequence[TaskId]] | None = None,
        solver: Solver = "ortools",
        pair_solver: Solver = "cycle_cancelling",
    ) -> None:
        self.clients = clients
        self.source_racks = source_racks
        self.changelog_racks = changelog_racks
        self.configs = configs
        self.subtopologies = subtopologies
        self.solver = solver
        self.pair_solver = pair_solver
        self.notes: list[str] = []
        self._enabled: bool | None = None

    # --- enablement ---------------------------------------------------------------------------
    def can_enable(self, all_tasks: Iterable[TaskId], stateful: Iterable[TaskId]) -> bool:
        """Kafka ``canEnableRackAwareAssignor`` (cached): strategy not ``none``, every client
        has a rack, every source partition (and with standbys every changelog partition) has
        replica racks. A failed check is noted and logged, never raised (Kafka falls back)."""
        if self._enabled is None:
            self._enabled = self._check(all_tasks, stateful)
        return self._enabled

    def _disable(self, why: str) -> bool:
        note = f"rack-aware assignment disabled: {why}"
        self.notes.append(note)
        log.warning(note)
        return False

    def _check(self, all_tasks: Iterable[TaskId], stateful: Iterable[TaskId]) -> bool:
        if self.configs.rack_aware_assignment_strategy == "none":
            return False
        for pid in sorted(self.clients):
            if self.clients[pid].rack is None:
                return self._disable(f"client {pid} has no rack")
        for task in sorted(all_tasks):
            parts = self.source_racks.get(task)
            if not parts or any(not racks for racks in parts):
                return self._disable(f"source partitions of task {task} have no rack information")
        if self.configs.num_standby_replicas > 0:
            for task in sorted(stateful):
                parts = self.changelog_racks.get(task)
                if not parts or any(not racks for racks in parts):
                    return self._disable(
                        f"changelog partitions of task {task} have no rack information"
                    )
        return True

    # --- costs --------------------------------------------------------------------------------
    def _cost_matrix(
        self,
        tasks: Sequence[TaskId],
        clients: Sequence[ClientState],
        standby: bool,
        traffic: int,
        non_overlap: int,
    ) -> tuple[np.ndarray, np.ndarray]:
        """(cost T×C with the non-overlap term, current T×C as 0/1)."""
        import numpy as np

        racks_by_task = self.changelog_racks if standby else self.source_racks
        rack_index: dict[str, int] = {}
        client_rack = np.array(
            [rack_index.setdefault(c.rack or "", len(rack_index)) for c in clients], dtype=np.int64
        )
        rack_names = list(rack_index)
        # built as Python lists and converted once (setting numpy cells one at a time costs
        # more than the whole matrix at the small sizes a rebalance usually has)
        missing = np.array(
            [
                [
                    sum(name not in part for part in racks_by_task.get(task, ()))
                    for name in rack_names
                ]
                for task in tasks
            ],
            dtype=np.int64,
        ).reshape(len(tasks), len(rack_names))
        held_by = [c.standby if standby else c.active for c in clients]
        current = np.array(
            [[1 if task in held else 0 for held in held_by] for task in tasks], dtype=np.int64
        ).reshape(len(tasks), len(clients))
        cost = traffic * missing[:, client_rack] + non_overlap * (1 - current)
        return cost, current

    def assignment_cost(
        self, tasks: Iterable[TaskId], traffic: int, non_overlap: int, standby: bool = False
    ) -> int:
        """Cost of the current placement of ``tasks`` (every holder in that role counts)."""
        task_list = sorted(tasks)
        clients = [self.clients[p] for p in sorted(self.clients)]
        if not task_list or not clients:
            return 0
        cost, current = self._cost_matrix(task_list, clients, standby, traffic, non_overlap)
        return int((cost * current).sum())

    # --- active optimisation ------------------------------------------------------------------
    def optimize_active_tasks(self, tasks: Iterable[TaskId], traffic: int, non_overlap: int) -> int:
        """Kafka ``optimizeActiveTasks``: re-place the actives of ``tasks`` over all clients at
        minimum cost with the configured strategy; returns that minimum cost.

        ``min_traffic`` keeps every client's number of these tasks; ``balance_subtopology``
        keeps every client's total and caps each subtopology per client at
        ``ceil(orig / T × n_g)``.

        Raises:
            StreamsAssignmentError: a task is not held as active by exactly one client.
        """
        task_list = sorted(tasks)
        order = sorted(self.clients)
        clients = [self.clients[p] for p in order]
        if not task_list or not clients:
            return 0
        owner = self._owners(task_list, clients, standby=False)
        balance = self.configs.rack_aware_assignment_strategy == "balance_subtopology"
        return self._optimize(task_list, clients, owner, False, traffic, non_overlap, balance)

    def _owners(
        self, tasks: Sequence[TaskId], clients: Sequence[ClientState], standby: bool
    ) -> list[int]:
        owner = [-1] * len(tasks)
        index = {t: i for i, t in enumerate(tasks)}
        for j, c in enumerate(clients):
            for t in c.standby if standby else c.active:
                i = index.get(t)
                if i is None:
                    continue
                if owner[i] >= 0:
                    raise StreamsAssignmentError(
                        f"task {t} is assigned to more than one client as active"
                    )
                owner[i] = j
        for i, j in enumerate(owner):
            if j < 0:
                raise StreamsAssignmentError(f"task {tasks[i]} is not assigned to any client")
        return owner

    def _optimize(
        self,
        tasks: Sequence[TaskId],
        clients: Sequence[ClientState],
        owner: Sequence[int],
        standby: bool,
        traffic: int,
        non_overlap: int,
        balance: bool,
        solver: Solver | None = None,
        matrices: tuple[np.ndarray, np.ndarray] | None = None,
    ) -> int:
        import numpy as np

        if matrices is None:
            matrices = self._cost_matrix(tasks, clients, standby, traffic, non_overlap)
        cost, current = matrices
        if (solver or self.solver) == "cycle_cancelling":
            new_owner = self._solve_kafka(tasks, clients, owner, cost, balance)
        else:
            new_owner = self._solve_ortools(tasks, clients, owner, cost, current, balance)
        self._move(tasks, clients, owner, new_owner, standby)
        rows = np.arange(len(tasks))
        return int(cost[rows, np.asarray(new_owner, dtype=np.int64)].sum())

    @staticmethod
    def _move(
        tasks: Sequence[TaskId],
        clients: Sequence[ClientState],
        owner: Sequence[int],
        new_owner: Sequence[int],
        standby: bool,
    ) -> None:
        """Move each task whose client changed from ``owner`` to ``new_owner``, in task
        order."""
        for i, task in enumerate(tasks):
            old, new = owner[i], new_owner[i]
            if old != new:
                if standby:
                    clients[old].unassign_standby(task)
                    clients[new].assign_standby(task)
                else:
                    clients[old].unassign_active(task)
                    clients[new].assign_active(task)

    def _groups(self, tasks: Sequence[TaskId]) -> list[list[int]]:
        """Task indexes per subtopology, subtopologies sorted, only ``tasks`` counted."""
        index = {t: i for i, t in enumerate(tasks)}
        groups: dict[int, list[int]] = {}
        if self.subtopologies is not None:
            listed = set()
            for sub in sorted(self.subtopologies):
                for t in sorted(self.subtopologies[sub]):
                    if t in index:
                        groups.setdefault(sub, []).append(index[t])
                        listed.add(t)
            for t in tasks:
                if t not in listed:
                    groups.setdefault(t.subtopology, []).append(index[t])
        else:
            for t in tasks:
                groups.setdefault(t.subtopology, []).append(index[t])
        return [sorted(groups[g], key=lambda i: tasks[i]) for g in sorted(groups)]

    @staticmethod
    def _stage_capacity(orig: int, total: int, group_size: int) -> int:
        # Java: (int) Math.ceil(orig * 1.0 / total * groupSize), same float operations
        return math.ceil(orig * 1.0 / total * group_size)

    def _solve_ortools(
        self,
        tasks: Sequence[TaskId],
        clients: Sequence[ClientState],
        owner: Sequence[int],
        cost: np.ndarray,
        current: np.ndarray,
        balance: bool,
    ) -> list[int]:
        import numpy as np

        n_t, n_c = cost.shape
        orig = np.bincount(np.asarray(owner, dtype=np.int64), minlength=n_c)
        # lexicographic: cost first, then the number of tasks leaving their current client
        arc_cost = cost * (n_t + 1) + (1 - current)
        task_nodes = np.arange(n_t, dtype=np.int64)
        if not balance:
            # nodes: tasks 0..T-1, clients T..T+C-1, source, sink
            source, sink = n_t + n_c, n_t + n_c + 1
            t_tail = np.repeat(task_nodes, n_c)
            t_head = np.tile(n_t + np.arange(n_c, dtype=np.int64), n_t)
            tails = np.concatenate([np.full(n_t, source), t_tail, n_t + np.arange(n_c)])
            heads = np.concatenate([task_nodes, t_head, np.full(n_c, sink)])
            caps = np.concatenate([np.ones(n_t), np.ones(n_t * n_c), orig])
            costs = np.concatenate([np.zeros(n_t), arc_cost.reshape(-1), np.zeros(n_c)])
            flows = solve_transport(
                tails.astype(np.int64),
                heads.astype(np.int64),
                caps.astype(np.int64),
                costs.astype(np.int64),
                [(source, n_t), (sink, -n_t)],
            )
            assign = flows[n_t : n_t + n_t * n_c].reshape(n_t, n_c)
            return [int(j) for j in assign.argmax(axis=1)]
        groups = self._groups(tasks)
        n_g = len(groups)
        group_of = np.zeros(n_t, dtype=np.int64)
        for g, members in enumerate(groups):
            group_of[members] = g
        stage1 = n_t  # stage-1 node of (g, j): n_t + n_c * g + j
        stage2 = n_t + n_c * n_g
        sink = stage2 + n_c
        source = sink + 1
        t_tail = np.repeat(task_nodes, n_c)
        t_head = (stage1 + n_c * np.repeat(group_of, n_c)) + np.tile(np.arange(n_c), n_t)
        s_tail, s_head, s_cap = [], [], []
        for g, members in enumerate(groups):
            for j in range(n_c):
                s_tail.append(stage1 + n_c * g + j)
                s_head.append(stage2 + j)
                s_cap.append(self._stage_capacity(int(orig[j]), n_t, len(members)))
        tails = np.concatenate([np.full(n_t, source), t_tail, s_tail, stage2 + np.arange(n_c)])
        heads = np.concatenate([task_nodes, t_head, s_head, np.full(n_c, sink)])
        caps = np.concatenate([np.ones(n_t), np.ones(n_t * n_c), s_cap, orig])
        costs = np.concatenate(
            [np.zeros(n_t), arc_cost.reshape(-1), np.zeros(len(s_tail)), np.zeros(n_c)]
        )
        flows = solve_transport(
            tails.astype(np.int64),
            heads.astype(np.int64),
            caps.astype(np.int64),
            costs.astype(np.int64),
            [(source, n_t), (sink, -n_t)],
        )
        assign = flows[n_t : n_t + n_t * n_c].reshape(n_t, n_c)
        return [int(j) for j in assign.argmax(axis=1)]

    def _solve_kafka(
        self,
        tasks: Sequence[TaskId],
        clients: Sequence[ClientState],
        owner: Sequence[int],
        cost: np.ndarray | Sequence[Sequence[int]],
        balance: bool,
    ) -> list[int]:
        # T×C costs as Python ints: a matrix of _cost_matrix, or a pair's _pair_costs
        rows = cost if isinstance(cost, Sequence) else cost.tolist()
        n_t, n_c = len(tasks), len(clients)
        orig = [0] * n_c
        for j in owner:
            orig[j] += 1
        graph = Graph()
        source = -1
        if not balance:
            sink = n_t + n_c
            for i in range(n_t):
                graph.add_edge(source, i, 1, 0, 1)
                for j in range(n_c):
                    graph.add_edge(i, n_t + j, 1, rows[i][j], 1 if owner[i] == j else 0)
            for j in range(n_c):
                graph.add_edge(n_t + j, sink, orig[j], 0, orig[j])
            graph.solve_min_cost_flow_cycle_cancelling(source, sink)
            return [next(j for j in range(n_c) if graph.flow(i, n_t + j) > 0) for i in range(n_t)]
        groups = self._groups(tasks)
        n_g = len(groups)
        # Kafka numbers task nodes group by group
        node_of = [0] * n_t
        group_of = [0] * n_t
        k = 0
        for g, members in enumerate(groups):
            for i in members:
                node_of[i] = k
                group_of[i] = g
                k += 1
        stage2 = n_t + n_c * n_g
        sink = stage2 + n_c
        for i in range(n_t):
            graph.add_edge(source, node_of[i], 1, 0)
            for j in range(n_c):
                graph.add_edge(node_of[i], n_t + n_c * group_of[i] + j, 1, rows[i][j])
        for g, members in enumerate(groups):
            for j in range(n_c):
                cap = self._stage_capacity(orig[j], n_t, len(members))
                graph.add_edge(n_t + n_c * g + j, stage2 + j, cap, 0)
        for j in range(n_c):
            graph.add_edge(stage2 + j, sink, orig[j], 0)
        if graph.calculate_max_flow(source, sink) != n_t:
            raise StreamsAssignmentError("no feasible balanced assignment (max flow < tasks)")
        graph.solve_min_cost_flow_cycle_cancelling(source, sink)
        return [
            next(j for j in range(n_c) if graph.flow(node_of[i], n_t + n_c * group_of[i] + j) > 0)
            for i in range(n_t)
        ]

    # --- standby optimisation -----------------------------------------------------------------
    def optimize_standby_tasks(
        self, traffic: int, non_overlap: int, move_allowed: MoveAllowed | None = None
    ) -> int:
        """Kafka ``optimizeStandbyTasks``: up to 4 rounds over client pairs (i < j, sorted) on
        different racks, swapping standbys between the two at minimum cost (each keeps its
        count); ``move_allowed(source, destination, task, clients)`` filters movable standbys
        (the standby assignor's 4-arg ``isAllowedTaskMovement``). Returns the traffic cost of
        all standbys afterwards."""
        order = sorted(self.clients)
        clients = [self.clients[p] for p in order]
        for _ in range(STANDBY_OPTIMIZER_MAX_ITERATION):
            moved = False
            for i in range(len(clients)):
                ci = clients[i]
                for j in range(i + 1, len(clients)):
                    cj = clients[j]
                    if ci.rack == cj.rack:
                        continue
                    mi = self._movable(ci, cj, move_allowed)
                    if not mi:
                        continue
                    mj = self._movable(cj, ci, move_allowed)
                    if not mj:
                        continue
                    tasks = sorted(set(mi) | set(mj))
                    pair = [ci, cj]
                    owner = [0 if t in ci.standby else 1 for t in tasks]
                    # most pairs have no improving swap: tested on the costs as Python ints
                    # before the numpy matrices the optimiser needs are built
                    costs = self._pair_costs(tasks, pair, traffic, non_overlap)
                    if not self._swap_improves(costs, owner):
                        continue
                    before = [c.standby.copy() for c in pair]
                    if self.pair_solver == "cycle_cancelling":
                        # Kafka's graph over the pair's costs as they are (the standby rows
                        # of _cost_matrix), without the numpy matrices OR-Tools needs
                        new_owner = self._solve_kafka(tasks, pair, owner, costs, False)
                        self._move(tasks, pair, owner, new_owner, True)
                    else:
                        matrices = self._cost_matrix(tasks, pair, True, traffic, non_overlap)
                        self._optimize(
                            tasks,
                            pair,
                            owner,
                            True,
                            traffic,
                            non_overlap,
                            False,
                            self.pair_solver,
                            matrices,
                        )
                    if ci.standby != before[0] or cj.standby != before[1]:
                        moved = True
            if not moved:
                break
        stateful = sorted({t for c in clients for t in c.standby})
        return self.assignment_cost(stateful, traffic, 0, standby=True)

    def _pair_costs(
        self, tasks: Sequence[TaskId], pair: Sequence[ClientState], traffic: int, non_overlap: int
    ) -> list[tuple[int, int]]:
        """The standby rows of :meth:`_cost_matrix` for two clients, as Python ints: per task,
        (cost on client 0, cost on client 1) — the same sums (traffic × the task's changelog
        partitions without the client's rack, plus ``non_overlap`` where it does not hold it)."""
        racks = [c.rack or "" for c in pair]
        out = []
        for task in tasks:
            parts = self.changelog_racks.get(task, ())
            row = [
                traffic * sum(rack not in part for part in parts)
                + non_overlap * (0 if task in c.standby else 1)
                for rack, c in zip(racks, pair, strict=True)
            ]
            out.append((row[0], row[1]))
        return out

    @staticmethod
    def _swap_improves(costs: Sequence[tuple[int, int]], owner: Sequence[int]) -> bool:
        """Whether exchanging one task of client 0 with one of client 1 lowers the cost: in a
        two-client graph with fixed counts every residual cycle is such a swap, so no improving
        swap means no negative cycle. ``costs``: per task, its cost on client 0 and 1."""
        on0 = [c[0] - c[1] for c, o in zip(costs, owner, strict=True) if o == 0]  # saved by
        on1 = [c[1] - c[0] for c, o in zip(costs, owner, strict=True) if o == 1]  # moving over
        return bool(on0 and on1 and max(on0) + max(on1) > 0)

    def _movable(
        self, source: ClientState, dest: ClientState, move_allowed: MoveAllowed | None
    ) -> list[TaskId]:
        return [
            t
            for t in sorted(source.standby)
            if not dest.has_assigned_task(t)
            and (move_allowed is None or move_allowed(source, dest, t, self.clients))
        ]
