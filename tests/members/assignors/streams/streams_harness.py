"""Test helpers: Kafka's assignment checks (``AssignmentTestUtils``) and the
``TaskAssignorConvergenceTest`` harness, over groupsim's Streams assignors."""

from __future__ import annotations

import random
from collections.abc import Iterable, Mapping

from members.assignors.streams import (
    AssignmentConfigs,
    ClientState,
    ProcessId,
    RackAwareTaskAssignor,
    TaskId,
    assign_high_availability,
)

END_OFFSET_SUM = 150_000


def pid(n: int) -> ProcessId:
    return ProcessId.of(f"PID_{n}")


def holders(clients: Mapping[ProcessId, ClientState], task: TaskId) -> int:
    return sum(1 for c in clients.values() if c.has_assigned_task(task))


def validity_problems(
    clients: Mapping[ProcessId, ClientState],
    stateful: Iterable[TaskId],
    stateless: Iterable[TaskId],
    num_standby: int,
    max_warmups: int,
) -> list[str]:
    """``AssignmentTestUtils.hasValidAssignment`` style checks; empty when valid."""
    problems = []
    stateful = list(stateful)
    stateless = list(stateless)
    for task in [*stateful, *stateless]:
        n = sum(1 for c in clients.values() if task in c.active)
        if n != 1:
            problems.append(f"{task}: {n} actives")
    wanted = min(len(clients), 1 + num_standby)
    extra = 0
    for task in stateful:
        n = holders(clients, task)
        if n == wanted + 1:
            extra += 1
        elif n != wanted:
            problems.append(f"{task}: {n} holders, wanted {wanted}")
    if extra > max_warmups:
        problems.append(f"{extra} tasks with an extra holder, at most {max_warmups}")
    for task in stateless:
        if any(task in c.standby for c in clients.values()):
            problems.append(f"{task}: standby of a stateless task")
    for c in clients.values():
        if c.active & c.standby:
            problems.append(f"{c.process_id}: active and standby of {c.active & c.standby}")
    return problems


def balance_problems(
    clients: Mapping[ProcessId, ClientState],
    stateful: Iterable[TaskId],
    skew: int,
) -> list[str]:
    """Active load, stateful load and per-subtopology skew (``AssignmentTestUtils``)."""
    problems = []
    stateful_set = set(stateful)
    loads = [c.active_task_load for c in clients.values()]
    if max(loads) - min(loads) > 1.0:
        problems.append(f"active load spread {max(loads) - min(loads)}")
    sloads = [len((c.active | c.standby) & stateful_set) / c.capacity for c in clients.values()]
    if max(sloads) - min(sloads) > 1.0:
        problems.append(f"stateful load spread {max(sloads) - min(sloads)}")
    subs = {t.subtopology for c in clients.values() for t in c.active}
    for sub in subs:
        counts = [sum(1 for t in c.active if t.subtopology == sub) for c in clients.values()]
        if max(counts) - min(counts) > skew:
            problems.append(f"subtopology {sub} skew {max(counts) - min(counts)}")
    return problems


class Harness:
    """``TaskAssignorConvergenceTest.Harness``: capacity-1 clients ``UUID(0, i)``; the
    stateless tasks, then the stateful ones, split into subtopologies of up to ``partitions``
    partitions; after every round a client reports lag 0 for the stateful tasks it held and
    150000 for the others; random client racks and partition replica racks (seeded)."""

    def __init__(
        self,
        stateless_tasks: int,
        stateful_tasks: int,
        clients: int,
        partitions: int,
        seed: int = 0,
        racks: int = 3,
    ) -> None:
        self.rng = random.Random(seed)
        self.racks = [f"rack{i}" for i in range(racks)]
        self.stateless: list[TaskId] = []
        self.stateful: list[TaskId] = []
        sub = 0
        for count, into in ((stateless_tasks, self.stateless), (stateful_tasks, self.stateful)):
            while count > 0:
                n = min(partitions, count)
                into.extend(TaskId(sub, p) for p in range(n))
                count -= n
                sub += 1
        self.source_racks = {t: [self._replicas()] for t in [*self.stateless, *self.stateful]}
        self.changelog_racks = {t: [self._replicas()] for t in self.stateful}
        self.next_id = 0
        self.clients: dict[ProcessId, ClientState] = {}
        self.dropped: dict[ProcessId, ClientState] = {}
        self.held: dict[ProcessId, set[TaskId]] = {}
        for _ in range(clients):
            self.add_client()

    def _replicas(self) -> frozenset[str]:
        return frozenset(self.rng.sample(self.racks, self.rng.randint(1, len(self.racks))))

    def add_client(self) -> ProcessId:
        p = ProcessId.of(f"PID_{self.next_id}")
        self.next_id += 1
        self.clients[p] = ClientState(p, 1, rack=self.rng.choice(self.racks))
        self.held[p] = set()
        return p

    def drop(self, p: ProcessId) -> None:
        self.dropped[p] = self.clients.pop(p)

    def resurrect(self, p: ProcessId) -> None:
        self.clients[p] = self.dropped.pop(p)

    def _prepare(self) -> dict[ProcessId, ClientState]:
        fresh = {}
        for p, old in self.clients.items():
            held = self.held.get(p, set())
            lags = {t: 0 if t in held else END_OFFSET_SUM for t in self.stateful}
            fresh[p] = ClientState(
                p,
                1,
                prev_active=old.active,
                prev_standby=old.standby,
                lags=lags,
                rack=old.rack,
            )
        return fresh

    def rebalance(self, configs: AssignmentConfigs) -> bool:
        clients = self._prepare()
        rack = RackAwareTaskAssignor(clients, self.source_racks, self.changelog_racks, configs)
        result = assign_high_availability(clients, self.stateful, self.stateless, configs, rack)
        self.clients = clients
        for p, c in clients.items():
            self.held[p] = (c.active | c.standby) & set(self.stateful)
        return result.probing_rebalance_needed

    def converge(self, configs: AssignmentConfigs, limit: int) -> int:
        """Rebalance until no probing rebalance is needed; returns the rounds used.

        Raises AssertionError after ``limit`` rounds (Kafka's ``testForConvergence``)."""
        for rounds in range(1, limit + 1):
            if not self.rebalance(configs):
                return rounds
        raise AssertionError(f"did not converge within {limit} rounds")
