"""The ``static`` assignor of KIP-987 "Connect Static Assignments" (protocol ``static``, v3).

KIP-987 ("Connect Static Assignments", section "Proposed Changes") is a
proposal Kafka has not implemented; this module is groupsim's reading of it.
Each worker's v3 subscription (docs/upgrades.md) carries its ``static.connectors`` and
``static.tasks``; the leader runs the KIP's eight steps:

1. a **static worker** names at least one connector or task (existing or not: a worker whose
   names match no configured job is a static worker that stays idle, KIP "Choosing static
   assignments"); every other member is a **wildcard worker**;
2. a **static job** is a *configured* connector or task named by at least one live static
   worker (names of jobs that do not exist are ignored; ``static.tasks`` may name tasks of a
   connector that is not in ``static.connectors``); every other configured job is a
   **wildcard job**;
3. static jobs held by wildcard workers are revoked;
4. static jobs held by static workers that do not name them are revoked;
5. wildcard jobs (and jobs that no longer exist) held by static workers are revoked;
6. each static job that nobody holds is assigned to a static worker that names it;
7. + 8. :class:`~members.assignors.incremental_cooperative.IncrementalCooperativeAssignor`
   (its ``perform_task_assignment``, kept as leader state in :attr:`StaticAssignor.wildcard`)
   runs on the wildcard workers only, over the wildcard jobs only.

Rules this module adds where the KIP is silent (each documented in docs/upgrades.md):

* **Tie rule** (:data:`STATIC_TIE_RULE`, KIP step 6 "choosing arbitrarily"): a static job
  stays with its holder when exactly one member holds it and that member names it;
  otherwise, once nobody holds it, it goes to the naming worker whose member id sorts first
  in Java ``String.compareTo`` order. Every step-6 choice is reported as a
  :class:`StaticPlacement` (``to_json()`` gives the event-log form).
* **Duplicates**: a static job held by more than one member is revoked from every holder
  (as ``IncrementalCooperativeAssignor#performTaskAssignment`` does) and placed in a later round.
* **Nothing is assigned in the round it is revoked** (the cooperative rule of
  KIP-415): a static job revoked in steps 3–5 is placed in step 6 of the *next* round; a
  wildcard job revoked from a static worker in step 5 and held by no wildcard worker is
  left out of the wildcard jobs for this round, so steps 7–8 create it next round.
* **A departed static worker's jobs** are not held back by
  ``scheduled.rebalance.max.delay.ms``: a job no live worker names is a wildcard job at
  once and falls back to the wildcard workers (KIP "Compatibility": "the job will migrate
  back to the wildcard workers"). Only wildcard workers' departures use the delay.
* **Unassignable jobs**: with no wildcard worker in the group, every configured job that no
  live static worker names has no eligible worker; such jobs stay unassigned and are
  reported as ``unassigned_static_jobs`` (a static job whose worker is gone looks exactly
  like a job nobody names, so both are reported).

Under ``compatible`` / ``sessioned`` (some member lacks ``static``) the subscriptions carry
no static fields, every worker is a wildcard worker, and the result is the incremental
assignor's: static assignments are ignored, as the KIP says.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import NamedTuple

from members.config import WORKER_DEFAULTS
from protocol.connect import ConnectProtocol
from protocol.connect_codec import decode_subscription

from ._wire import MemberState, read_member_state, sorted_connectors, sorted_tasks
from .base import (
    AssignmentRound,
    ConfigSnapshot,
    check_members,
    config_mismatch_round,
    leader_config_offset,
    pauses_gc,
)
from .incremental_cooperative import (
    ClusterAssignment,
    IncrementalCooperativeAssignor,
    encode_incremental_round,
)

__all__ = [
    "STATIC_TIE_RULE",
    "StaticAssignor",
    "StaticClaims",
    "StaticPlacement",
    "StaticClusterAssignment",
    "StaticAssignmentRound",
]

Task = tuple[str, int]

#: Name of the step-6 choice rule, as written into event logs (see the module docstring).
STATIC_TIE_RULE = "holder-else-first-naming-member-id"


class StaticClaims(NamedTuple):
    """One worker's KIP-987 ``static.connectors`` / ``static.tasks`` as its v3 subscription
    carries them (names of jobs that may not exist; tasks as ``(connector, n)``)."""

    connectors: tuple[str, ...] = ()
    tasks: tuple[Task, ...] = ()

    @property
    def is_static(self) -> bool:
        """True when the worker names anything (KIP step 1: a static worker)."""
        return bool(self.connectors or self.tasks)


class StaticPlacement(NamedTuple):
    """One KIP step-6 decision: ``job`` (a connector name, or ``"<connector>-<n>"`` with
    ``task`` set) goes to ``worker``, chosen by :data:`STATIC_TIE_RULE` among ``candidates``
    (every live worker naming the job, Java String order)."""

    job: str
    is_task: bool
    worker: str
    candidates: tuple[str, ...]

    def to_json(self) -> dict[str, object]:
        """Event-log form: ``{"job", "kind": "connector"|"task", "worker", "candidates",
        "rule"}``."""
        return {
            "job": self.job,
            "kind": "task" if self.is_task else "connector",
            "worker": self.worker,
            "candidates": list(self.candidates),
            "rule": STATIC_TIE_RULE,
        }


class StaticClusterAssignment(ClusterAssignment):
    """:class:`ClusterAssignment` of a static round plus what the static steps decided.

    Attributes (besides the per-worker maps, which hold every member):
        static_workers / wildcard_workers: member ids by KIP step 1, JoinGroup order.
        static_placements: the step-6 choices of this round, connectors first (Java order),
            then tasks (connector, number).
        unassigned_static_jobs: ``(connectors, tasks)`` left unassigned because no eligible
            worker exists (no wildcard worker, and no live worker names them); sorted.
        wildcard: the incremental assignor's own :class:`ClusterAssignment` over the
            wildcard workers (steps 7–8).
    """

    __slots__ = ("static_workers", "wildcard_workers", "static_placements",
                 "unassigned_static_jobs", "wildcard")  # fmt: skip

    static_workers: list[str]
    wildcard_workers: list[str]
    static_placements: list[StaticPlacement]
    unassigned_static_jobs: tuple[list[str], list[Task]]
    wildcard: ClusterAssignment


class StaticAssignmentRound(AssignmentRound):
    """:class:`AssignmentRound` of the static assignor, with the static decisions.

    ``static_workers``, ``static_placements`` and ``unassigned_static_jobs`` are those of
    :class:`StaticClusterAssignment`; on CONFIG_MISMATCH they are empty.
    """

    __slots__ = ("static_workers", "static_placements", "unassigned_static_jobs")

    static_workers: list[str]
    static_placements: list[StaticPlacement]
    unassigned_static_jobs: tuple[list[str], list[Task]]

    @classmethod
    def of(
        cls,
        base: AssignmentRound,
        static_workers: list[str],
        placements: list[StaticPlacement],
        unassigned: tuple[list[str], list[Task]],
    ) -> StaticAssignmentRound:
        """``base`` with the static fields added."""
        out = cls(
            base.assignments,
            base.decoded,
            base.delay_ms,
            base.error,
            base.config_offset,
            base.snapshot,
        )
        out.static_workers = static_workers
        out.static_placements = placements
        out.unassigned_static_jobs = unassigned
        return out


class StaticAssignor:
    """KIP-987's leader algorithm (module docstring), with its leader-local state.

    Args:
        max_delay_ms: ``scheduled.rebalance.max.delay.ms`` (≥ 0, virtual ms), used by the
            incremental assignor over the wildcard workers (lost-work delay and the
            successive-revocation backoff).

    State: :attr:`wildcard` is the incremental assignor of steps 7–8 (its
    ``previous_assignment``, delays, … cover wildcard jobs only); ``delay_ms`` is its delay;
    ``unassigned_static_jobs``, ``static_workers`` and ``static_placements`` are those of
    the last completed (non-mismatch) round.

    Raises:
        ValueError: a negative ``max_delay_ms``.
    """

    name = "static"

    def __init__(
        self, max_delay_ms: int = WORKER_DEFAULTS.scheduled_rebalance_max_delay_ms
    ) -> None:
        self.wildcard = IncrementalCooperativeAssignor(max_delay_ms)
        self.max_delay_ms = max_delay_ms
        self.static_workers: list[str] = []
        self.static_placements: list[StaticPlacement] = []
        self.unassigned_static_jobs: tuple[list[str], list[Task]] = ([], [])
        self._metadata_cache: dict[str, tuple[bytes, MemberState, StaticClaims]] = {}

    @property
    def delay_ms(self) -> int:
        """The delay (virtual ms) every member got in the last round."""
        return self.wildcard.delay_ms

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
    ) -> StaticAssignmentRound:
        """The ``static`` leader's SyncGroup assignments (``ConnectAssignor`` protocol).

        As ``IncrementalCooperativeAssignor#performAssignment``'s: each member's held items come
        from the allocation its metadata embeds (v1 reader), ``maxOffset`` and the leader config
        check pick the snapshot (CONFIG_MISMATCH: every member gets error 1, nothing changes
        in the state), then :meth:`perform_task_assignment` runs and every member gets its
        new and revoked items with header ``protocol.version`` (3 for ``static``) and the
        common delay. Under ``static`` the v3 static fields are read (``decode_subscription``);
        under ``compatible``/``sessioned`` there are none and every worker is wildcard.

        Raises:
            ValueError: no members, the leader not among them, or the eager protocol.
            protocol.connect_codec.DecodeError: malformed metadata.
        """
        if protocol.is_eager:
            raise ValueError("the static assignor does not run under 'default'")
        states = self._read_members(members, protocol is ConnectProtocol.STATIC)
        check_members(leader_id, states)
        version = protocol.version
        max_offset = max(s.config_offset for s, _ in states.values())
        leader_url = states[leader_id][0].url
        order = list(states)
        checked = leader_config_offset(max_offset, snapshot, refresh_snapshot)
        if checked is None:
            failed = config_mismatch_round(version, leader_id, leader_url, max_offset, order)
            return StaticAssignmentRound.of(failed, [], [], ([], []))
        offset, used = checked
        result = self.perform_task_assignment(
            used,
            last_completed_generation,
            generation,
            {m: (s.connectors, s.tasks) for m, (s, _) in states.items()},
            {m: claims for m, (_, claims) in states.items()},
            now_ms,
        )
        encoded = encode_incremental_round(
            version,
            leader_id,
            leader_url,
            offset,
            order,
            result.newly_assigned_connectors,
            result.newly_assigned_tasks,
            result.newly_revoked_connectors,
            result.newly_revoked_tasks,
            self.wildcard.delay_ms,
            used,
        )
        return StaticAssignmentRound.of(
            encoded, result.static_workers, result.static_placements, result.unassigned_static_jobs
        )

    def _read_members(
        self, members: Sequence[tuple[str, bytes]], with_static: bool
    ) -> dict[str, tuple[MemberState, StaticClaims]]:
        """Each member's held items (Kafka's v1 reader) and, under ``static`` with a header
        ≥ 3, its static claims; identical bytes reuse last round's decoding."""
        cache = self._metadata_cache
        out: dict[str, tuple[MemberState, StaticClaims]] = {}
        fresh: dict[str, tuple[bytes, MemberState, StaticClaims]] = {}
        for m, md in members:
            md = bytes(md)
            hit = cache.get(m)
            if hit is not None and hit[0] == md:
                state, claims = hit[1], hit[2]
            else:
                state = read_member_state(md)
                claims = StaticClaims()
                if state.version >= 3:
                    sub = decode_subscription(md)
                    claims = StaticClaims(
                        sub.static_connectors, tuple((t[0], t[1]) for t in sub.static_tasks)
                    )
            if not with_static:
                claims = StaticClaims()
            out[m] = (state, claims)
            fresh[m] = (md, state, claims)
        if out:
            self._metadata_cache = fresh
        return out

    # ----------------------------------------------------------------- the eight KIP steps

    @pauses_gc
    def perform_task_assignment(
        self,
        snapshot: ConfigSnapshot,
        last_completed_generation: int,
        generation: int,
        member_assignments: Mapping[str, tuple[Sequence[str], Sequence[Task]]],
        static_claims: Mapping[str, StaticClaims],
        now_ms: int = 0,
    ) -> StaticClusterAssignment:
        """KIP-987 "Proposed Changes" steps 1–8 over the held items, updating the state.

        Args:
            snapshot: the configured connectors and task counts.
            last_completed_generation / generation: as for the incremental assignor (they
                drive its generation guard in steps 7–8).
            member_assignments: member id → (connectors, tasks) it holds, JoinGroup order;
                each member's lists in its own order (duplicates collapse).
            static_claims: member id → its :class:`StaticClaims` (missing: none, wildcard).
            now_ms: virtual time (the incremental assignor's delay countdown).

        Returns:
            A :class:`StaticClusterAssignment`. A member's revocations list the static
            steps' revocations first (its own held order, connectors then tasks), then the
            incremental assignor's; a static worker's new items are its step-6 placements.
        """
        members = list(member_assignments)
        conf_c = set(snapshot.connectors)
        counts = snapshot.connectors

        def exists(t: Task) -> bool:
            return 0 <= t[1] < counts.get(t[0], 0)

        # 1./2. static workers, and the live workers naming each existing job
        static_workers: list[str] = []
        wildcard_workers: list[str] = []
        namers_c: dict[str, list[str]] = {}
        namers_t: dict[Task, list[str]] = {}
        for m in members:
            claims = static_claims.get(m)
            if claims is None or not claims.is_static:
                wildcard_workers.append(m)
                continue
            static_workers.append(m)
            for c in dict.fromkeys(claims.connectors):
                if c in conf_c:
                    namers_c.setdefault(c, []).append(m)
            for t in dict.fromkeys(claims.tasks):
                if exists(t):
                    namers_t.setdefault(t, []).append(m)
        is_static = set(static_workers)

        held_c = {m: list(dict.fromkeys(member_assignments[m][0])) for m in members}
        held_t = {m: list(dict.fromkeys(member_assignments[m][1])) for m in members}
        holders_c: dict[str, int] = {}
        holders_t: dict[Task, int] = {}
        for m in members:
            for c in held_c[m]:
                if c in namers_c:
                    holders_c[c] = holders_c.get(c, 0) + 1
            for t in held_t[m]:
                if t in namers_t:
                    holders_t[t] = holders_t.get(t, 0) + 1

        # 3.–5. revocations; what wildcard workers keep goes to steps 7–8
        revoke_c: dict[str, list[str]] = {m: [] for m in members}
        revoke_t: dict[str, list[Task]] = {m: [] for m in members}
        keep_c: dict[str, list[str]] = {}
        keep_t: dict[str, list[Task]] = {}
        inner_held: dict[str, tuple[list[str], list[Task]]] = {}
        wild_held_c: set[str] = set()
        wild_held_t: set[Task] = set()
        for m in members:
            if m in is_static:
                kc, kt = [], []
                for c in held_c[m]:
                    named = namers_c.get(c)
                    if named is not None and m in named and holders_c[c] == 1:
                        kc.append(c)
                    else:
                        revoke_c[m].append(c)
                for t in held_t[m]:
                    named_t = namers_t.get(t)
                    if named_t is not None and m in named_t and holders_t[t] == 1:
                        kt.append(t)
                    else:
                        revoke_t[m].append(t)
                keep_c[m], keep_t[m] = kc, kt
            else:
                wc = [c for c in held_c[m] if c not in namers_c]
                wt = [t for t in held_t[m] if t not in namers_t]
                if len(wc) != len(held_c[m]):
                    revoke_c[m] = [c for c in held_c[m] if c in namers_c]
                if len(wt) != len(held_t[m]):
                    revoke_t[m] = [t for t in held_t[m] if t in namers_t]
                inner_held[m] = (wc, wt)
                wild_held_c.update(wc)
                wild_held_t.update(wt)

        # 6. static jobs nobody holds go to a naming worker (STATIC_TIE_RULE)
        placements: list[StaticPlacement] = []
        new_c: dict[str, list[str]] = {m: [] for m in static_workers}
        new_t: dict[str, list[Task]] = {m: [] for m in static_workers}
        for c in sorted_connectors(c for c in namers_c if c not in holders_c):
            cands = tuple(sorted_connectors(namers_c[c]))
            new_c[cands[0]].append(c)
            placements.append(StaticPlacement(c, False, cands[0], cands))
        for t in sorted_tasks(t for t in namers_t if t not in holders_t):
            cands = tuple(sorted_connectors(namers_t[t]))
            new_t[cands[0]].append(t)
            placements.append(StaticPlacement(f"{t[0]}-{t[1]}", True, cands[0], cands))

        # 7./8. the incremental assignor over wildcard workers and wildcard jobs; a wildcard
        # job revoked from a static worker above waits a round unless a wildcard worker has it
        restricted: tuple[set[str], set[Task]] | None = None
        held_back_c = {
            c for m in static_workers for c in revoke_c[m] if c not in namers_c
        } - wild_held_c
        held_back_t = {
            t for m in static_workers for t in revoke_t[m] if t not in namers_t
        } - wild_held_t
        if namers_c or namers_t or held_back_c or held_back_t:
            restricted = (
                conf_c - namers_c.keys() - held_back_c,
                set(_all_tasks(counts)) - namers_t.keys() - held_back_t,
            )
        inner = self.wildcard.perform_task_assignment(
            snapshot, last_completed_generation, generation, inner_held, now_ms, restricted
        )

        # unassignable jobs: no wildcard worker, and no live worker names them
        unassigned: tuple[list[str], list[Task]] = ([], [])
        if not wildcard_workers:
            unassigned = (
                sorted_connectors(conf_c - namers_c.keys()),
                sorted_tasks(t for t in _all_tasks(counts) if t not in namers_t),
            )

        na_c: dict[str, list[str]] = {}
        na_t: dict[str, list[Task]] = {}
        nr_c: dict[str, list[str]] = {}
        nr_t: dict[str, list[Task]] = {}
        all_c: dict[str, list[str]] = {}
        all_t: dict[str, list[Task]] = {}
        for m in members:
            if m in is_static:
                na_c[m], na_t[m] = new_c[m], new_t[m]
                nr_c[m], nr_t[m] = revoke_c[m], revoke_t[m]
                all_c[m] = keep_c[m] + new_c[m]
                all_t[m] = keep_t[m] + new_t[m]
            else:
                na_c[m] = inner.newly_assigned_connectors[m]
                na_t[m] = inner.newly_assigned_tasks[m]
                nr_c[m] = revoke_c[m] + inner.newly_revoked_connectors[m]
                nr_t[m] = revoke_t[m] + inner.newly_revoked_tasks[m]
                all_c[m] = inner.all_assigned_connectors[m]
                all_t[m] = inner.all_assigned_tasks[m]

        out = StaticClusterAssignment(na_c, na_t, nr_c, nr_t, all_c, all_t)
        out.static_workers = static_workers
        out.wildcard_workers = wildcard_workers
        out.static_placements = placements
        out.unassigned_static_jobs = unassigned
        out.wildcard = inner
        self.static_workers = static_workers
        self.static_placements = placements
        self.unassigned_static_jobs = unassigned
        return out


def _all_tasks(counts: Mapping[str, int]) -> list[Task]:
    return [(c, i) for c, n in counts.items() for i in range(n)]
