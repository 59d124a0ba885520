"""Flow graphs of the rack-aware optimizer (Kafka ``Graph``), solved with OR-Tools.

:class:`Graph` keeps Kafka's structure and checks: a sorted adjacency of integer nodes, edges
``(capacity, cost, flow)``, no antiparallel edges, flows within capacities. It has two solvers
for the same min-cost flow problem (keep the current flow value, minimise Σ cost × flow):

* :meth:`Graph.solve_min_cost_flow` — OR-Tools' ``SimpleMinCostFlow`` (cost scaling). Among
  several optimal flows it returns the one that keeps the most of the current flow
  (lexicographic tie-break: cost, then units on edges that carried no flow before).
* :meth:`Graph.solve_min_cost_flow_cycle_cancelling` — Kafka's own algorithm step for step
  (residual graph, a dummy node reaching every node, Bellman–Ford in sorted edge order,
  cancel the first negative cycle found, repeat). Polynomially slower; kept as the reference
  the OR-Tools results are tested against, and to reproduce Kafka's pick among equal optima.

Both reach the same (minimum) total cost: cycle cancelling stops only when no negative cycle
is left, which is the optimality condition.

:func:`solve_transport` is the array form used by the optimizer on large graphs.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING

from .model import StreamsAssignmentError

# numpy and OR-Tools are imported where they are used: a Connect-only run (the flagship
# ``groupsim run``) never pays for them.
if TYPE_CHECKING:
    import numpy as np

__all__ = ["Graph", "solve_transport"]


def solve_transport(
    tails: np.ndarray,
    heads: np.ndarray,
    capacities: np.ndarray,
    costs: np.ndarray,
    supplies: Sequence[tuple[int, int]],
) -> np.ndarray:
    """Min-cost flow with OR-Tools on arrays (nodes ``0..n-1``); returns the flow per arc.

    Args:
        tails, heads, capacities, costs: one entry per arc (int64; costs may be negative).
        supplies: (node, supply) pairs; demands negative; they must balance.

    Raises:
        StreamsAssignmentError: no feasible flow (Kafka: IllegalStateException).
    """
    import numpy as np
    from ortools.graph.python import min_cost_flow

    smcf = min_cost_flow.SimpleMinCostFlow()
    arcs = smcf.add_arcs_with_capacity_and_unit_cost(
        tails.astype(np.int32),
        heads.astype(np.int32),
        capacities.astype(np.int64),
        costs.astype(np.int64),
    )
    for node, supply in supplies:
        smcf.set_node_supply(node, supply)
    status = smcf.solve()
    if status != smcf.OPTIMAL:
        raise StreamsAssignmentError(f"min-cost flow failed (OR-Tools status {status})")
    return np.asarray(smcf.flows(arcs), dtype=np.int64)


class Graph:
    """A directed flow graph (Kafka ``Graph<Integer>``); see the module doc."""

    def __init__(self) -> None:
        self._adj: dict[int, dict[int, list[int]]] = {}  # u -> v -> [capacity, cost, flow]

    # --- building ---------------------------------------------------------------------------
    def add_edge(self, u: int, v: int, capacity: int, cost: int, flow: int = 0) -> None:
        """Add (or replace) edge ``u → v``.

        Raises:
            StreamsAssignmentError: ``v → u`` exists, negative capacity, or flow > capacity.
        """
        if capacity < 0:
            raise StreamsAssignmentError(f"edge {u}->{v}: capacity must be >= 0")
        if flow > capacity:
            raise StreamsAssignmentError(f"edge {u}->{v}: flow {flow} exceeds capacity {capacity}")
        if u in self._adj.get(v, {}):
            raise StreamsAssignmentError(f"edge {u}->{v}: the graph has {v}->{u} already")
        self._adj.setdefault(u, {})[v] = [capacity, cost, flow]
        self._adj.setdefault(v, {})

    def nodes(self) -> list[int]:
        return sorted(self._adj)

    def edges(self) -> Iterator[tuple[int, int, int, int, int]]:
        """``(u, v, capacity, cost, flow)`` in sorted (u, v) order."""
        for u in sorted(self._adj):
            for v in sorted(self._adj[u]):
                cap, cost, flow = self._adj[u][v]
                yield u, v, cap, cost, flow

    def flow(self, u: int, v: int) -> int:
        return self._adj[u][v][2]

    def out_edges(self, u: int) -> dict[int, tuple[int, int, int]]:
        """``v → (capacity, cost, flow)`` of the edges leaving ``u``, sorted by ``v``."""
        return {v: tuple(self._adj[u][v]) for v in sorted(self._adj.get(u, {}))}  # type: ignore[misc]

    def total_cost(self) -> int:
        """Σ cost × flow over all edges."""
        return sum(e[1] * e[2] for adj in self._adj.values() for e in adj.values())

    def _validate(self, source: int, sink: int) -> int:
        inflow: dict[int, int] = dict.fromkeys(self._adj, 0)
        outflow: dict[int, int] = dict.fromkeys(self._adj, 0)
        for u, adj in self._adj.items():
            for v, (_, _, f) in adj.items():
                if v == source:
                    raise StreamsAssignmentError(f"edge {u}->{v} goes into the source")
                if u == sink:
                    raise StreamsAssignmentError(f"edge {u}->{v} leaves the sink")
                outflow[u] += f
                inflow[v] += f
        for n in self._adj:
            if n not in (source, sink) and inflow[n] != outflow[n]:
                raise StreamsAssignmentError(f"node {n}: inflow {inflow[n]} != outflow")
        if outflow.get(source, 0) != inflow.get(sink, 0):
            raise StreamsAssignmentError("source outflow differs from sink inflow")
        return outflow.get(source, 0)

    # --- solvers ----------------------------------------------------------------------------
    def solve_min_cost_flow(self, source: int, sink: int) -> None:
        """Replace the current flow by a min-cost flow of the same value (OR-Tools).

        Among equal-cost optima, the one moving the fewest units off the current flow's edges.

        Raises:
            StreamsAssignmentError: the current flow is not a valid flow (as Kafka validates).
        """
        value = self._validate(source, sink)
        import numpy as np

        edges = list(self.edges())
        if not edges:
            return
        index = {n: i for i, n in enumerate(self.nodes())}
        tails = np.array([index[e[0]] for e in edges], dtype=np.int64)
        heads = np.array([index[e[1]] for e in edges], dtype=np.int64)
        caps = np.array([e[2] for e in edges], dtype=np.int64)
        costs = np.array([e[3] for e in edges], dtype=np.int64)
        unused = np.array([0 if e[4] > 0 else 1 for e in edges], dtype=np.int64)
        scale = int(caps.sum()) + 1
        flows = solve_transport(
            tails,
            heads,
            caps,
            costs * scale + unused,
            [(index[source], value), (index[sink], -value)],
        )
        for (u, v, *_), f in zip(edges, flows.tolist(), strict=True):
            self._adj[u][v][2] = f

    def solve_min_cost_flow_cycle_cancelling(self, source: int, sink: int) -> None:
        """Kafka's ``Graph.solveMinCostFlow``: cancel negative cycles until none is left."""
        self._validate(source, sink)
        # residual edges: u -> v -> [residual, cost, forward]
        res: dict[int | None, dict[int, list[int]]] = {n: {} for n in self._adj}
        for u, adj in self._adj.items():
            for v, (cap, cost, flow) in adj.items():
                res[u][v] = [cap - flow, cost, 1]
                res[v][u] = [flow, -cost, 0]
        nodes: list[int | None] = [None, *sorted(self._adj)]
        res[None] = {n: [1, 0, 1] for n in self._adj}  # the dummy node reaches every node
        # the edges in sorted (u, v) order, the dummy first: by the nodes' places in ``nodes``
        place = {n: i for i, n in enumerate(nodes)}
        scan = sorted((place[u], place[v], edge) for u in res for v, edge in res[u].items())
        while True:
            start = self._negative_cycle_node(nodes, scan)
            if start is None:
                break
            self._cancel(start, res)
        for u, adj in self._adj.items():
            for v, edge in adj.items():
                edge[2] = res[v][u][0]

    _parents: dict[int | None, int | None]

    def _negative_cycle_node(
        self,
        nodes: list[int | None],
        scan: list[tuple[int, int, list[int]]],
    ) -> int | None:
        """Bellman-Ford from the dummy node (``nodes[0]``) over ``scan``'s edges (places in
        ``nodes``, in scan order): a node on or after a negative cycle, relaxed in the last
        round, with the parents that lead to it (``_parents``); ``None`` when no cycle is
        left. Distances and parents by place in ``nodes`` (lists, not dicts)."""
        rounds = len(nodes)
        dist: list[int | None] = [None] * rounds
        dist[0] = 0
        parent = [-1] * rounds
        # residuals change only between calls (in _cancel): the edges with residual capacity,
        # in scan order, with their costs, are the same in every round of this one
        live = [(u, v, e[1]) for u, v, e in scan if e[0] > 0]
        for i in range(rounds):
            relaxed = False
            for u, v, cost in live:
                du = dist[u]
                if du is None:
                    continue
                nd = du + cost
                dv = dist[v]
                if dv is None or nd < dv:
                    dist[v] = nd
                    parent[v] = u
                    relaxed = True
                    if i == rounds - 1:
                        self._parents = {nodes[x]: nodes[p] for x, p in enumerate(parent) if p >= 0}
                        return nodes[v]
            if not relaxed:
                return None
        return None

    def _cancel(self, start: int, res: dict[int | None, dict[int, list[int]]]) -> None:
        parents = self._parents
        seen: set[int | None] = set()
        node: int | None = start
        while node not in seen:
            seen.add(node)
            node = parents[node]
        cycle_node = node
        cycle: list[tuple[int, int]] = []  # (u, v) edges, walking parents backwards
        v = cycle_node
        while True:
            u = parents[v]
            assert u is not None and v is not None
            cycle.append((u, v))
            v = u
            if v == cycle_node:
                break
        delta = min(res[u][v][0] for u, v in cycle)
        for u, v in cycle:
            res[u][v][0] -= delta
            res[v][u][0] += delta

    def calculate_max_flow(self, source: int, sink: int) -> int:
        """Kafka ``calculateMaxFlow``: BFS augmenting paths (sorted adjacency, FIFO) from the
        current flow, which must be zero; sets the flows and returns the flow value."""
        res: dict[int, dict[int, int]] = {n: {} for n in self._adj}
        for u, adj in self._adj.items():
            for v, (cap, _, _) in adj.items():
                res[u][v] = cap
                res[v].setdefault(u, 0)
        sorted_adj = {u: sorted(res[u]) for u in res}
        total = 0
        while True:
            parent: dict[int, int] = {source: source}
            queue = deque([source])
            while queue and sink not in parent:
                u = queue.popleft()
                for v in sorted_adj[u]:
                    if v not in parent and res[u][v] > 0:
                        parent[v] = u
                        queue.append(v)
            if sink not in parent:
                break
            delta = None
            v = sink
            while v != source:
                u = parent[v]
                delta = res[u][v] if delta is None else min(delta, res[u][v])
                v = u
            assert delta is not None
            v = sink
            while v != source:
                u = parent[v]
                res[u][v] -= delta
                res[v][u] += delta
                v = u
            total += delta
        for u, adj in self._adj.items():
            for v, edge in adj.items():
                edge[2] = edge[0] - res[u][v]
        return total
