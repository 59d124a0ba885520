"""Kafka Connect's incremental cooperative assignor (protocols ``compatible`` / ``sessioned``).

Kafka: ``IncrementalCooperativeAssignor`` (KIP-415). The leader keeps state
between the rounds it leads (previous assignment and revocation, delays, candidate workers,
generation), so one instance must live as long as the leader worker.

Orderings copied from Kafka because they are observable in the bytes:

* workers are walked in Java ``HashMap`` order of member ids (a map grown by ``put``);
* sets derived by difference (deleted, lost, created) are sorted (``TreeSet``), connectors by
  Java String order, tasks by (connector, number);
* items revoked because they were deleted or duplicated come out in Java ``HashSet`` order of
  a set presized from the worker's own collection (``new HashSet<>(held).retainAll(...)``);
* load-balancing revocations take the first items of a worker's own list;
* new items are appended by "water filling" over the worker list sorted by (count, id).

The parts of Kafka's class live in modules of their own: the round's data
(:mod:`.incremental_load`), its set algebra (:mod:`.incremental_sets`), load-balancing
revocations and the water filling (:mod:`.incremental_balance`), the successive-revocation
backoff (:mod:`.incremental_delay`) and the SyncGroup side (:mod:`.incremental_round`); this
module holds the assignor with its leader state, its steps and the lost-assignment handling
(the scheduled delay).

Tasks are handled as ``(connector, number)`` tuples; :class:`~protocol.connect.ConnectorTaskId`
is a NamedTuple, so both kinds compare and hash alike.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence

from members.config import WORKER_DEFAULTS
from protocol.connect import ConnectProtocol
from protocol.java_hash_order import hash_order
from protocol.java_hashing import string_hash

from ._wire import (
    MemberState,
    read_member_state,
    reread_member_state,
    sorted_connectors,
    sorted_tasks,
)
from .base import (
    AssignmentRound,
    ConfigSnapshot,
    check_members,
    config_mismatch_round,
    leader_config_offset,
    pauses_gc,
    snapshot_tables,
)
from .incremental_balance import load_balancing_revocations, water_fill, worker_sort_key
from .incremental_delay import exponential_backoff
from .incremental_load import ClusterAssignment, Task, WorkerLoad
from .incremental_round import encode_incremental_round
from .incremental_sets import add_dealt, distinct, held_twice, revoke_deleted_and_duplicated

__all__ = [
    "IncrementalCooperativeAssignor",
    "encode_incremental_round",
    "WorkerLoad",
    "ClusterAssignment",
    "exponential_backoff",
]


class IncrementalCooperativeAssignor:
    """Kafka's ``IncrementalCooperativeAssignor`` with its leader-local state.

    Args:
        max_delay_ms: ``scheduled.rebalance.max.delay.ms`` (≥ 0, virtual ms): how long lost
            work waits for its worker to come back, and the cap of the successive-revocation
            backoff. 0 disables both.

    Readable state (the assignor's fields in Kafka): ``previous_assignment`` (connectors, tasks),
    ``previous_revocation``, ``revoked_in_previous``, ``candidate_workers`` (insertion order),
    ``scheduled_rebalance_ms`` (absolute virtual ms, 0 = none), ``delay_ms``,
    ``previous_generation_id`` (−1 initially), ``previous_members``,
    ``num_successive_revoking_rebalances``.

    Raises:
        ValueError: a negative ``max_delay_ms``.
    """

    name = "incremental_cooperative"

    def __init__(
        self, max_delay_ms: int = WORKER_DEFAULTS.scheduled_rebalance_max_delay_ms
    ) -> None:
        if max_delay_ms < 0:
            raise ValueError(f"max_delay_ms must be >= 0, got {max_delay_ms}")
        self.max_delay_ms = max_delay_ms
        self._prev_c: set[str] = set()
        self._prev_t: set[Task] = set()
        self._rev_c: set[str] = set()
        self._rev_t: set[Task] = set()
        self.revoked_in_previous = False
        self._candidates: dict[str, None] = {}
        self.scheduled_rebalance_ms = 0
        self.delay_ms = 0
        self.previous_generation_id = -1
        self.previous_members: list[str] = []
        self.num_successive_revoking_rebalances = 0
        self._metadata_cache: dict[str, tuple[bytes, MemberState]] = {}
        # The last round's inputs to handleLostAssignments when something was lost: (lost
        # connectors, lost tasks, every previous member present, candidateWorkersForReassignment
        # before the round, in insertion order); None when nothing was.
        self.last_lost: tuple[list[str], list[Task], bool, list[str]] | None = None

    # ----------------------------------------------------------------------------- state

    @property
    def candidate_workers(self) -> list[str]:
        """``candidateWorkersForReassignment`` in insertion order."""
        return list(self._candidates)

    @property
    def previous_assignment(self) -> tuple[list[str], list[Task]]:
        """``previousAssignment`` as sorted (connectors, tasks)."""
        return sorted_connectors(self._prev_c), sorted_tasks(self._prev_t)

    @property
    def previous_revocation(self) -> tuple[list[str], list[Task]]:
        """``previousRevocation`` as sorted (connectors, tasks)."""
        return sorted_connectors(self._rev_c), sorted_tasks(self._rev_t)

    def backoff_ms(self, attempts: int) -> int:
        """The successive-revocation backoff for ``attempts`` (:func:`exponential_backoff`)."""
        return exponential_backoff(self.max_delay_ms, attempts)

    def _reset_delay(self) -> None:
        self._candidates.clear()
        self.scheduled_rebalance_ms = 0
        self.delay_ms = 0

    def _configured(self, snapshot: ConfigSnapshot) -> tuple[set[str], set[Task]]:
        """The configured (connectors, tasks) of ``snapshot``: shared sets, never mutated."""
        tables = snapshot_tables(snapshot)
        return tables.connector_set, tables.task_set

    def _sorted_configured_names(self, snapshot: ConfigSnapshot, subset: set[str]) -> list[str]:
        """``subset`` (⊆ configured connectors) in Java String order."""
        if len(subset) * 8 < len(snapshot.connectors):
            return sorted_connectors(subset)
        names = snapshot_tables(snapshot).sorted_names
        if len(subset) == len(names):
            return list(names)
        return [c for c in names if c in subset]

    def _sorted_configured_subset(self, snapshot: ConfigSnapshot, subset: set[Task]) -> list[Task]:
        """``subset`` (⊆ configured tasks) in ConnectorTaskId order."""
        if not subset:
            return []
        tables = snapshot_tables(snapshot)
        if len(subset) * 8 < len(tables.task_set):
            return sorted_tasks(subset)
        if len(subset) == len(tables.sorted_tasks):
            return list(tables.sorted_tasks)
        return [t for t in tables.sorted_tasks if t in subset]

    # ------------------------------------------------------------------- performAssignment

    @pauses_gc
    def perform_assignment(
        self,
        *,
        leader_id: str,
        protocol: ConnectProtocol,
        members: Sequence[tuple[str, bytes]],
        snapshot: ConfigSnapshot,
        refresh_snapshot: Callable[[], ConfigSnapshot],
        last_completed_generation: int,
        generation: int,
        now_ms: int,
    ) -> AssignmentRound:
        """Kafka ``IncrementalCooperativeAssignor.performAssignment``.

        Decodes each member's metadata (v1 reader; its embedded allocation is what it holds),
        takes ``maxOffset``, runs the leader config check, then :meth:`perform_task_assignment`
        and encodes each member's incremental assignment with header ``protocol.version``
        (1 compatible, 2 sessioned, 3 static), the leader's url, the checked offset and
        ``delay_ms`` (the same for everyone). On CONFIG_MISMATCH every member gets error 1 at
        ``maxOffset`` with nothing assigned or revoked, and the assignor state is not touched.

        Raises:
            ValueError: no members, the leader not among them, or an eager protocol.
            protocol.connect_codec errors: malformed metadata.
        """
        if protocol.is_eager:
            raise ValueError("the incremental cooperative assignor does not run under 'default'")
        states = self._read_members(members)
        check_members(leader_id, states)
        version = protocol.version
        max_offset = max(s.config_offset for s in states.values())
        leader_url = states[leader_id].url
        order = list(states)
        checked = leader_config_offset(max_offset, snapshot, refresh_snapshot)
        if checked is None:
            return config_mismatch_round(version, leader_id, leader_url, max_offset, order)
        offset, used = checked
        result = self.perform_task_assignment(
            used,
            last_completed_generation,
            generation,
            {m: (s.connectors, s.tasks) for m, s in states.items()},
            now_ms,
        )
        return encode_incremental_round(
            version,
            leader_id,
            leader_url,
            offset,
            order,
            result.newly_assigned_connectors,
            result.newly_assigned_tasks,
            result.newly_revoked_connectors,
            result.newly_revoked_tasks,
            self.delay_ms,
            used,
        )

    def _read_members(self, members: Sequence[tuple[str, bytes]]) -> dict[str, MemberState]:
        """Decode each member's metadata, reusing last round's result for identical bytes
        (a member whose assignment did not change sends the same metadata again) or for bytes
        that differ only after the held items (:func:`reread_member_state`: the delay a
        member echoes after a scheduled rebalance). No members:
        an empty dict, and the cache is kept."""
        if not members:
            return {}
        cache = self._metadata_cache
        states: dict[str, MemberState] = {}
        fresh: dict[str, tuple[bytes, MemberState]] = {}
        for m, md in members:
            hit = cache.get(m)
            if hit is not None and hit[0] == md:
                state = hit[1]
            else:
                md = bytes(md)
                if hit is None:
                    state = read_member_state(md)
                else:
                    # last round's reading still holds if only the echoed tail changed
                    state = reread_member_state(md, hit[0], hit[1])
            states[m] = state
            fresh[m] = (md, state)
        self._metadata_cache = fresh
        return states

    # --------------------------------------------------------------- performTaskAssignment

    @pauses_gc
    def perform_task_assignment(
        self,
        snapshot: ConfigSnapshot,
        last_completed_generation: int,
        generation: int,
        member_assignments: Mapping[str, tuple[Sequence[str], Sequence[Task]]],
        now_ms: int = 0,
        configured: tuple[set[str], set[Task]] | None = None,
    ) -> ClusterAssignment:
        """Kafka ``performTaskAssignment(configSnapshot, lastCompletedGen, currentGen,
        memberAssignments)``: its steps in Kafka's order, updating the leader state.

        Args:
            snapshot: the config to assign (connectors and task counts).
            last_completed_generation: the coordinator's last completed generation; a mismatch
                with the previous round's generation clears ``previous_assignment``.
            generation: the generation being assigned (becomes ``previous_generation_id``).
            member_assignments: member id → (connectors, tasks) it currently holds, in the
                order members were put into Kafka's map (JoinGroup order); each member's lists
                in its own order (duplicates collapse).
            now_ms: virtual time, for the scheduled-rebalance countdown.
            configured: the (connectors, tasks) this assignor is in charge of, a subset of
                ``snapshot``'s; default all of them. The static assignor (KIP-987 steps 7–8)
                passes its wildcard jobs: every other item counts as not configured here.

        Returns:
            The :class:`ClusterAssignment` (incremental assignments and revocations).
        """
        # 1. generation guard
        if self.previous_generation_id != last_completed_generation:
            self._prev_c = set()
            self._prev_t = set()
        # 2. configured / active
        conf_c, conf_t = self._configured(snapshot)
        if configured is not None:
            conf_c, conf_t = configured
        members = list(member_assignments)
        # memberConfigs (put in JoinGroup order), then transformValues' HashMap (put in
        # memberConfigs' order): two HashMaps, whose orders differ once a bin is crowded
        if len(members) > 1:
            members = hash_order(hash_order(members, string_hash), string_hash)
        order = members
        held_c: dict[str, Sequence[str]] = {}
        held_t: dict[str, Sequence[Task]] = {}
        for w in order:
            held_c[w], held_t[w] = member_assignments[w]
        active_c: set[str] = set().union(*held_c.values())
        active_t: set[Task] = set().union(*held_t.values())
        # duplicates within one member collapse (insertion-ordered sets); across members
        # they are "duplicated"
        dup_c: set[str] = set()
        dup_t: set[Task] = set()
        if sum(len(v) for v in held_c.values()) != len(active_c):
            held_c = {w: distinct(v) for w, v in held_c.items()}
            dup_c = held_twice(held_c.values())
        if sum(len(v) for v in held_t.values()) != len(active_t):
            held_t = {w: distinct(v) for w, v in held_t.items()}
            dup_t = held_twice(held_t.values())
        # 3. undelivered revocation check
        if self._rev_c or self._rev_t:
            if not self._rev_c.isdisjoint(active_c) or not self._rev_t.isdisjoint(active_t):
                self._prev_c = set(active_c)
                self._prev_t = set(active_t)
            self._rev_c = set()
            self._rev_t = set()
        prev_c, prev_t = self._prev_c, self._prev_t
        # 4. derived sets
        deleted_c = prev_c - conf_c
        deleted_t = prev_t - conf_t
        lost_c = self._sorted_configured_names(snapshot, prev_c - active_c - deleted_c)
        created_c = self._sorted_configured_names(snapshot, conf_c - prev_c - active_c)
        if prev_t is active_t or prev_t == active_t:
            lost_t: list[Task] = []
            if not deleted_t and len(conf_t) == len(prev_t):
                created_t: list[Task] = []  # prev ⊆ conf and same size: prev == conf
            elif not prev_t:
                created_t = self._sorted_configured_subset(snapshot, conf_t)  # no copy
            else:
                created_t = self._sorted_configured_subset(snapshot, conf_t - prev_t)
        else:
            lost_t = self._sorted_configured_subset(snapshot, prev_t - active_t - deleted_t)
            created_t = self._sorted_configured_subset(snapshot, conf_t - prev_t - active_t)

        # 5./6. revocations of deleted and duplicated items; next = held − deleted − duplicated
        revoke_c, revoke_t, loads = revoke_deleted_and_duplicated(
            order, held_c, held_t, deleted_c, deleted_t, dup_c, dup_t
        )

        # 7. lost assignments
        self.last_lost = (
            (lost_c, lost_t, set(members).issuperset(self.previous_members), list(self._candidates))
            if lost_c or lost_t
            else None
        )
        reassign_c, reassign_t = self.handle_lost_assignments(lost_c, lost_t, loads, now_ms)

        # 8. load-balancing revocations
        if self.delay_ms == 0:
            lb = load_balancing_revocations(len(conf_c), len(conf_t), loads)
            apply = False
            if self.revoked_in_previous and lb:
                self.num_successive_revoking_rebalances += 1
                self.delay_ms = self.backoff_ms(self.num_successive_revoking_rebalances)
                if self.delay_ms != 0:
                    self.scheduled_rebalance_ms = now_ms + self.delay_ms
                else:
                    apply = True
            elif lb:
                apply = True
                self.revoked_in_previous = True
            elif self.revoked_in_previous:
                self.revoked_in_previous = False
                self.num_successive_revoking_rebalances = 0
            if apply:
                by_worker = {load.worker: load for load in loads}
                for w, (lc, lt) in lb.items():
                    revoke_c[w].extend(lc)
                    revoke_t[w].extend(lt)
                    by_worker[w].revoke_first(len(lc), len(lt))
        else:
            self.revoked_in_previous = False

        # 9. assign created + lost-to-reassign
        to_assign_c = created_c
        if reassign_c:
            to_assign_c = list(dict.fromkeys([*created_c, *reassign_c]))
        to_assign_t = created_t
        if reassign_t:
            to_assign_t = list(dict.fromkeys([*created_t, *reassign_t]))
        self.assign_connectors(loads, to_assign_c)
        self.assign_tasks(loads, to_assign_t)

        # 10. outputs
        by_worker = {load.worker: load for load in loads}
        na_c: dict[str, list[str]] = {}
        na_t: dict[str, list[Task]] = {}
        all_c: dict[str, list[str]] = {}
        all_t: dict[str, list[Task]] = {}
        nr_c: dict[str, list[str]] = {}
        nr_t: dict[str, list[Task]] = {}
        for w in members:
            load = by_worker[w]
            na_c[w], na_t[w] = load.newly_assigned()
            all_c[w] = load.connectors
            all_t[w] = load.tasks
            nr_c[w] = revoke_c[w]
            nr_t[w] = revoke_t[w]

        # 11. state: previous = ∪next − ∪revoked + lost, where ∪next is the active set
        # minus what was taken away plus what was appended this round
        rev_all_c: set[str] = set().union(*revoke_c.values())
        rev_all_t: set[Task] = set().union(*revoke_t.values())
        new_prev_c = active_c - rev_all_c if rev_all_c else set(active_c)
        new_prev_t = active_t - rev_all_t if rev_all_t else active_t.copy()
        if loads:
            # ∪ newly assigned = what step 9 dealt (+ lost items dealt in step 7, added below)
            add_dealt(new_prev_c, to_assign_c, conf_c)
            add_dealt(new_prev_t, to_assign_t, conf_t)
        if rev_all_c:
            new_prev_c -= rev_all_c
        if rev_all_t:
            new_prev_t -= rev_all_t
        new_prev_c.update(lost_c)
        new_prev_t.update(lost_t)
        self._prev_c = new_prev_c
        self._prev_t = new_prev_t
        self._rev_c = rev_all_c
        self._rev_t = rev_all_t
        self.previous_generation_id = generation
        self.previous_members = members
        return ClusterAssignment(na_c, na_t, nr_c, nr_t, all_c, all_t)

    # ----------------------------------------------------------------- handleLostAssignments

    def handle_lost_assignments(
        self,
        lost_connectors: Sequence[str],
        lost_tasks: Sequence[Task],
        workers: list[WorkerLoad],
        now_ms: int,
    ) -> tuple[list[str], list[Task]]:
        """Kafka ``handleLostAssignments(lost, lostAssignmentsToReassign, workers)``.

        Args:
            lost_connectors / lost_tasks: items that were assigned last round and that no
                member reports now (sorted, as Kafka's ``TreeSet`` difference yields them).
            workers: the next assignment's worker loads; lost items dealt to candidate workers
                on expiry are appended to these.
            now_ms: virtual time.

        Returns:
            The lost items to assign like new ones this round (connectors, tasks); may be
            empty. Updates ``delay_ms``, ``scheduled_rebalance_ms``, ``candidate_workers`` and
            ``revoked_in_previous`` as Kafka does.
        """
        if not lost_connectors and not lost_tasks and not self.revoked_in_previous:
            self._reset_delay()
            return [], []
        active = {load.worker for load in workers}
        if self.scheduled_rebalance_ms <= 0 and active.issuperset(self.previous_members):
            return list(lost_connectors), list(lost_tasks)
        if self.max_delay_ms == 0:
            return list(lost_connectors), list(lost_tasks)
        if self.scheduled_rebalance_ms > 0 and now_ms >= self.scheduled_rebalance_ms:
            out_c: list[str] = []
            out_t: list[Task] = []
            by_worker = {load.worker: load for load in workers}
            picked = [by_worker[w] for w in self._candidates if w in by_worker]
            if picked:
                n = len(picked)
                for i, c in enumerate(lost_connectors):
                    picked[i % n].connectors.append(c)
                for i, t in enumerate(lost_tasks):
                    picked[i % n].tasks.append(t)
            else:
                out_c = list(lost_connectors)
                out_t = list(lost_tasks)
            self._reset_delay()
            self.revoked_in_previous = False
            return out_c, out_t
        empties = [load.worker for load in workers if load.is_empty()]
        if len(empties) > 1:
            empties = hash_order(empties, string_hash)
        for w in empties:
            self._candidates.setdefault(w, None)
        if now_ms < self.scheduled_rebalance_ms:
            diff = self.scheduled_rebalance_ms - now_ms
            self.delay_ms = min(diff, self.max_delay_ms) if diff > 0 else 0
        else:
            self.delay_ms = self.max_delay_ms
        self.scheduled_rebalance_ms = now_ms + self.delay_ms
        return [], []

    # ------------------------------------------------------- performLoadBalancingRevocations

    def load_balancing_revocations(
        self, configured: ConfigSnapshot, workers: Sequence[WorkerLoad]
    ) -> dict[str, tuple[list[str], list[Task]]]:
        """Which items to revoke from which worker to approach balance over the configured
        totals, walking ``workers`` in list order (``performLoadBalancingRevocations``). Pure:
        changes nothing."""
        conf_c, conf_t = self._configured(configured)
        return load_balancing_revocations(len(conf_c), len(conf_t), workers)

    # ------------------------------------------------------------- assignConnectors / Tasks

    def assign_connectors(self, workers: list[WorkerLoad], connectors: Iterable[str]) -> None:
        """Kafka ``assignConnectors``: sorts ``workers`` in place by (connector count,
        id), then fills the least-loaded level by level, appending to ``connectors``."""
        key = worker_sort_key(w.worker for w in workers)
        workers.sort(key=lambda w: (len(w.connectors), key(w.worker)))
        water_fill([w.connectors for w in workers], list(connectors))

    def assign_tasks(self, workers: list[WorkerLoad], tasks: Iterable[Task]) -> None:
        """Kafka ``assignTasks``: like :meth:`assign_connectors`, by task count."""
        key = worker_sort_key(w.worker for w in workers)
        workers.sort(key=lambda w: (len(w.tasks), key(w.worker)))
        water_fill([w.tasks for w in workers], list(tasks))
