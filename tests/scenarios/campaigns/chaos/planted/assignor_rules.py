"""Planted bugs that break one published rule of an assignor and keep ownership safe and the
group live (docs/chaos.md "Contract rules"): each is caught by the checker of the rule it
breaks or, where the rule is only the exact output of a deterministic algorithm, by the Kafka
referee (``--referee kafka``) alone.

:data:`ASSIGNOR_RULE_BUGS` and :data:`CONSUMER_BUGS` (bugs of the consumer assignors, reached
by ``groupsim chaos --kind consumer`` and judged on ``groupsim run`` logs of consumer scenarios
too, tests/scenarios/check/test_consumer_contracts.py) join the chaos catalogue
(``CATALOGUE``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from members import consumer as consumer_member
from members.assignors import incremental_balance
from members.assignors.eager import EagerAssignor
from members.assignors.incremental_cooperative import IncrementalCooperativeAssignor
from members.assignors.streams import partition_assignor
from members.assignors.streams.standby import DefaultStandbyTaskAssignor
from protocol.connect import ConnectAssignment
from protocol.java_strings import java_sorted_strings

from . import PlantedBug, _rewrite_round

__all__ = ["ASSIGNOR_RULE_BUGS", "CONSUMER_BUGS"]


def _round_robin_reversed(round_: dict[str, ConnectAssignment]) -> dict[str, ConnectAssignment]:
    # EagerAssignor whose circular iterator walks the members in descending id order: member
    # i of the sorted list gets what Kafka gives member n-1-i (safe and balanced: only the
    # round robin's published order is broken)
    ids = java_sorted_strings(round_)
    return {mid: round_[ids[len(ids) - 1 - i]] for i, mid in enumerate(ids)}


def _revokes_past_floor(original: Callable[..., Any]) -> Callable[..., Any]:
    # performLoadBalancingRevocations aiming one below the floor: each overloaded worker that
    # is not one of the "extra" ones gives up one task (or connector) more than its excess
    # over floor(total / workers) (KIP-415: revoke only what has to move)
    def lb_for(total: int, held: list[list]) -> dict[int, list]:
        out = original(total, held)
        low = total // len(held) if held else 0
        if not out or low == 0:
            return out
        for i, items in list(out.items()):
            keep = len(held[i]) - len(items)
            if keep == low:
                out[i] = held[i][: len(items) + 1]
        return out

    return lb_for


def _one_extra_too_many(original: Callable[..., Any]) -> Callable[..., Any]:
    # performLoadBalancingRevocations counting the workers allowed one above the floor with
    # "<=" instead of "<": one overloaded worker too many keeps floor + 1, so the round leaves
    # the load unbalanced (a balance off by one in a corner: only when some workers must go
    # down to the floor)
    def lb_for(total: int, held: list[list]) -> dict[int, list]:
        out = original(total, held)
        low, extra = divmod(total, len(held)) if held else (0, 0)
        for i in sorted(out):
            if len(held[i]) - len(out[i]) == low and len(held[i]) > low + 1:
                out[i] = out[i][1:]
                break
        return out

    return lb_for


def _new_work_to_busiest(original: Callable[..., Any]) -> Callable[..., Any]:
    # assignTasks sorting the workers by descending task count: new and lost tasks are dealt
    # round robin from the most loaded worker on (KIP-415 fills the least loaded first)
    def assign_tasks(self: Any, workers: list[Any], tasks: Any) -> None:
        workers.sort(key=lambda w: (-len(w.tasks), w.worker))
        for i, task in enumerate(tasks):
            workers[i % len(workers)].tasks.append(task)

    return assign_tasks


def _tasks_level_never_rises(original: Callable[..., Any]) -> Callable[..., Any]:
    # assignTasks computing upTo once, before its loop: every new and lost task is dealt round
    # robin over the workers least loaded at the start, however many there are, so they end
    # above the workers that held one more (KIP-415's fill raises the level as it goes and
    # takes in each worker it reaches; still safe: each task on one worker)
    def assign_tasks(self: Any, workers: list[Any], tasks: Any) -> None:
        key = incremental_balance.worker_sort_key(w.worker for w in workers)
        workers.sort(key=lambda w: (len(w.tasks), key(w.worker)))
        if not workers:
            return
        least = [w for w in workers if len(w.tasks) == len(workers[0].tasks)]
        for i, task in enumerate(tasks):
            least[i % len(least)].tasks.append(task)

    return assign_tasks


def _revokes_when_balanced(original: Callable[..., Any]) -> Callable[..., Any]:
    # performLoadBalancingRevocations without its "already balanced" exit: a balanced load
    # with a worker above the floor still loses one item (KIP-415: revoke only what moves)
    def lb_for(total: int, held: list[list]) -> dict[int, list]:
        out = original(total, held)
        low = total // len(held) if held else 0
        if out or total % len(held) == 0:
            return out
        top = next((i for i, items in enumerate(held) if len(items) == low + 1), None)
        return {top: held[top][:1]} if top is not None else out

    return lb_for


def _lost_work_ignores_candidates(original: Callable[..., Any]) -> Callable[..., Any]:
    # handleLostAssignments whose expiry branch forgets candidateWorkersForReassignment: the
    # lost work is dealt like new work to the least loaded workers instead of to the workers
    # that came back empty during the delay (KIP-415: a returning worker gets its work back)
    def handle_lost_assignments(self: Any, lost_c: Any, lost_t: Any, workers: Any, now: int) -> Any:
        if self.scheduled_rebalance_ms > 0 and now >= self.scheduled_rebalance_ms:
            self._candidates.clear()
        return original(self, lost_c, lost_t, workers, now)

    return handle_lost_assignments


def _stateless_on_busiest(original: Callable[..., Any]) -> Callable[..., Any]:
    # HighAvailabilityTaskAssignor#assignStatelessActiveTasks taking the most loaded client off
    # its queue instead of the least loaded: every stateless active lands on one client (KIP-441
    # balances active load; still safe: one active per task)
    def assign(clients: Any, stateful: Any, stateless: Any, *args: Any, **kwargs: Any) -> Any:
        result = original(clients, stateful, stateless, *args, **kwargs)
        tasks = set(stateless)
        if len(clients) < 2 or not tasks:
            return result
        busiest = max(clients, key=lambda p: (clients[p].active_task_load, str(p)))
        for pid, state in clients.items():
            for task in sorted(state.active & tasks):
                if pid != busiest:
                    state.unassign_active(task)
                    clients[busiest].assign_active(task)
        return result

    return assign


def _standby_on_busiest(original: Callable[..., Any]) -> Callable[..., Any]:
    # DefaultStandbyTaskAssignor polling its load heap from the wrong end: each standby goes to
    # the most loaded client not holding the task (KIP-441 places it on the least loaded;
    # still num.standby.replicas per task, never beside the active)
    def assign(self: Any, clients: Any, stateful: Any) -> None:
        for task in stateful:
            free = [p for p in sorted(clients) if not clients[p].has_assigned_task(task)]
            free.sort(key=lambda p: -clients[p].assigned_task_load)
            for pid in free[: self.num_standby_replicas]:
                clients[pid].assign_standby(task)

    return assign


ASSIGNOR_RULE_BUGS: tuple[PlantedBug, ...] = (
    PlantedBug(
        "eager-round-robin-reversed",
        "members/assignors/eager.py EagerAssignor.perform_assignment",
        "the eager round robin walks the members in descending id order (referee only)",
        "connect",
        ((EagerAssignor, "perform_assignment", _rewrite_round(_round_robin_reversed)),),
        ("eager",),
        referee_only=True,
    ),
    PlantedBug(
        "cooperative-revokes-past-floor",
        "members/assignors/incremental_balance.py _lb_for (performLoadBalancingRevocations)",
        "load-balancing revocations take an overloaded worker one below the floor",
        "connect",
        ((incremental_balance, "_lb_for", _revokes_past_floor),),
        ("compatible", "sessioned"),
    ),
    PlantedBug(
        "cooperative-revocation-leaves-excess",
        "members/assignors/incremental_balance.py _lb_for (performLoadBalancingRevocations)",
        "one overloaded worker too many keeps floor + 1 after the revocations",
        "connect",
        ((incremental_balance, "_lb_for", _one_extra_too_many),),
        ("compatible", "sessioned"),
    ),
    PlantedBug(
        "cooperative-new-work-to-busiest",
        "members/assignors/incremental_cooperative.py assign_tasks",
        "new and lost tasks are dealt round robin from the most loaded worker on",
        "connect",
        ((IncrementalCooperativeAssignor, "assign_tasks", _new_work_to_busiest),),
        ("compatible", "sessioned"),
    ),
    PlantedBug(
        "cooperative-tasks-level-never-rises",
        "members/assignors/incremental_cooperative.py assign_tasks",
        "new and lost tasks are dealt round robin over the workers least loaded at the start",
        "connect",
        ((IncrementalCooperativeAssignor, "assign_tasks", _tasks_level_never_rises),),
        ("compatible", "sessioned"),
    ),
    PlantedBug(
        "cooperative-revokes-when-balanced",
        "members/assignors/incremental_balance.py _lb_for (performLoadBalancingRevocations)",
        "a balanced load still loses one item of a worker above the floor",
        "connect",
        ((incremental_balance, "_lb_for", _revokes_when_balanced),),
        ("compatible", "sessioned"),
    ),
    PlantedBug(
        "hata-stateless-on-busiest-client",
        "members/assignors/streams/high_availability.py assign_high_availability (step 8)",
        "every stateless active task goes to the most loaded client",
        "streams",
        ((partition_assignor, "assign_high_availability", _stateless_on_busiest),),
    ),
    PlantedBug(
        "standby-assignor-most-loaded",
        "members/assignors/streams/standby.py DefaultStandbyTaskAssignor.assign",
        "each standby goes to the most loaded client instead of the least loaded",
        "streams",
        ((DefaultStandbyTaskAssignor, "assign", _standby_on_busiest),),
        referee_only=True,
    ),
    PlantedBug(
        "cooperative-lost-work-ignores-candidates",
        "members/assignors/incremental_cooperative.py handle_lost_assignments",
        "at the delay's expiry lost work goes to the least loaded, not to the candidate workers",
        "connect",
        (
            (
                IncrementalCooperativeAssignor,
                "handle_lost_assignments",
                _lost_work_ignores_candidates,
            ),
        ),
        ("compatible", "sessioned", "static"),
    ),
)


# ---------------------------------------------------------------- consumer assignor bugs


def _range_off_by_one(original: Callable[..., Any]) -> Callable[..., Any]:
    # RangeAssignor whose first consumer's range ends one partition late: per topic it takes
    # the first partition of the next consumer's range (RangeAssignor's quotas: the counts of
    # one topic's consumers differ by at most one)
    def assign_range(members: Sequence[Any], cluster: Any) -> Any:
        out = original(members, cluster)
        ids = [m for m, parts in out.items()]
        if len(ids) < 2:
            return out
        for topic in cluster:
            owners = [(m, [tp for tp in out[m] if tp.topic == topic]) for m in ids]
            owners = [(m, parts) for m, parts in owners if parts]
            if len(owners) < 2:
                continue
            (first, _), (second, theirs) = owners[0], owners[1]
            moved = min(theirs, key=lambda tp: tp.partition)
            out[second].remove(moved)
            out[first].append(moved)
        return out

    return assign_range


def _user_data_forgotten(original: Callable[..., Any]) -> Callable[..., Any]:
    # StickyAssignor#memberData that drops the partitions of the user data (keeps the
    # generation): every round assigns from scratch, balanced but not sticky (KIP-54). Eager
    # members revoke everything before they rejoin, so ownership stays safe.
    def sticky_member_data(s: Any) -> Any:
        data = original(s)
        return data._replace(partitions=[]) if data.partitions else data

    return sticky_member_data


CONSUMER_BUGS: tuple[PlantedBug, ...] = (
    PlantedBug(
        "range-assignor-off-by-one",
        "members/assignors/consumer/range.py assign_range",
        "per topic the first consumer takes the first partition of the next one's range",
        "consumer",
        ((consumer_member, "assign_range", _range_off_by_one),),
        (),
    ),
    PlantedBug(
        "sticky-assignor-not-sticky",
        "members/assignors/consumer/sticky_data.py sticky_member_data",
        "the eager sticky assignor ignores the user data's partitions and assigns from scratch",
        "consumer",
        ((consumer_member, "sticky_member_data", _user_data_forgotten),),
        (),
    ),
)
