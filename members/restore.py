"""How a Kafka Streams client restores its state: one restore consumer per stream thread.

Kafka 4.0 (``StreamThread``, ``DefaultStateUpdater``, ``StoreChangelogReader``): every stream
thread has its own state updater thread with one ``StoreChangelogReader`` and one restore
consumer, shared by all the thread's tasks. The reader restores the changelogs of restoring
**active** tasks first: while any of them is unfinished it is in ``ACTIVE_RESTORING`` and
keeps the standby changelogs (warm-ups are standbys) paused on the restore consumer
(``enforceRestoreActive``, ``pauseResumePartitions``); only when every active has restored does
it resume the standbys (``transitToUpdateStandby``). A fetch of the restore consumer brings up
to ``max.partition.fetch.bytes`` (1 MiB) of every unpaused changelog partition, and no new fetch
goes to a broker while any partition it leads still has data buffered (``AbstractFetch``); each
``poll`` hands the reader at most ``max.poll.records`` records, drained from the buffer one
partition's fetched data after another (``FetchCollector#collectFetch``), which the reader
applies partition by partition (``StoreChangelogReader#restore``). So a thread restores its
changelogs one chunk at a time, in turns, at one rate for all of them.

The model (:class:`RestoreThread`, one per stream thread, sans-IO, virtual ms):

* the thread serves its **restoring actives** while it has any, else its **standbys**;
* it applies one *chunk* at a time: up to ``chunk_records`` records (``max.partition.fetch.bytes
  / groupsim.changelog.record.bytes``) of one served changelog, taken from what the changelog
  holds when the chunk starts, at ``rate`` records per virtual second (the store's offset rises
  linearly within a chunk, as it does poll by poll in Kafka); after the chunk, the next served
  changelog in the round gets its chunk; a round visits every served changelog that is behind
  in the order of the thread's **fetch session**, so a changelog under one chunk restores whole
  before the next begins, and larger ones take turns. Kafka's broker keeps the restore
  consumer's partitions in its fetch session in the order they were added, appends a
  partition the consumer adds (``FetchSession``'s incremental context, KIP-227) and forgets
  one it stops fetching (paused or unassigned; moving every partition that returned data to
  the end keeps their order when all of them return data). So a changelog the thread
  already restores or updates comes before one it is given later. Tasks a thread is given
  at once reach its restore consumer **one at a time** here, in task order: Kafka's stream
  thread initialises each task (state directory lock, stores opened) before it hands it to
  the state updater (``TaskManager#addTaskToStateUpdater``), whose thread, woken by the
  first, registers and assigns that task's changelog alone; the order is that of a
  ``HashSet<Task>`` (``Tasks#drainPendingTasksToInit``) of identity hashes, which Java does
  not define (three real runs gave task order). The standbys, paused while actives restore
  (``enforceRestoreActive``), come back together (``transitToUpdateStandby`` resumes them in
  one call) behind nothing, in the order the next fetch lists them (:func:`fetch_order`, a
  Java hash order that follows the changelog topic's name): replayed when the scenario
  names the changelog topics, else in task order;
* an active whose store reaches the changelog's end is restored (it leaves the thread and
  runs); a standby that reaches the end *tracks* it: it keeps up with the changelog's growth,
  which takes that growth out of the thread's rate (a fluid approximation of the small chunks
  Kafka would fetch for it);
* a new restoring active interrupts a standby's chunk (what was applied stays); a thread that
  gains or loses a task continues with the next chunk of its round.

Kafka's tasks of a client are spread over its threads by the leader
(``StreamsPartitionAssignor#assignTasksToThreads``); :func:`assign_tasks_to_threads` carries
that spread to groupsim's one-member-per-client model.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass

from members.assignors.streams import TaskId
from protocol.consumer_codec import TopicPartition
from protocol.java_hashing import topic_partition_hash
from protocol.java_hashmap import JavaHashMap

__all__ = [
    "RestoreThread",
    "RestoreEvent",
    "assign_tasks_to_threads",
    "chunk_records",
    "fetch_order",
]


def chunk_records(max_partition_fetch_bytes: int, record_bytes: int) -> int:
    """Records of one changelog a restore consumer's fetch brings at most: ``max(1,
    max.partition.fetch.bytes // record size)`` (a fetch always returns at least one batch,
    ``max.partition.fetch.bytes`` being a soft limit).

    Raises:
        ValueError: a size below 1.
    """
    if max_partition_fetch_bytes < 1 or record_bytes < 1:
        raise ValueError("fetch size and record size must be at least 1 byte")
    return max(1, max_partition_fetch_bytes // record_bytes)


def _tp_hash(tp: TopicPartition) -> int:
    return topic_partition_hash(tp.topic, tp.partition)


def fetch_order(
    added: Collection[TopicPartition],
    assigned: Sequence[TopicPartition],
    fetchable: Collection[TopicPartition],
) -> list[TopicPartition]:
    """The order in which a restore consumer's next fetch request lists the changelog
    partitions ``added`` to its fetch session together, so the order the broker's session
    appends them in (``FetchSessionHandler.Builder`` keeps the request's order; KIP-227):
    partitions resumed in one call (``StoreChangelogReader#transitToUpdateStandby``) or
    registered in one ``initializeChangelogs`` (a task with several stores).

    Kafka 4.0's path, each step a Java hash collection:

    1. ``StoreChangelogReader#addChangelogsToRestoreConsumer`` (and
       ``ClassicKafkaConsumer#assign``) hand the whole new assignment over as ``HashSet`` copies;
       ``SubscriptionState#assignFromUser`` puts it into a ``new HashMap<>()`` (16 slots,
       grown by ``put``) and ``PartitionStates#update`` keeps that map's order, grouped by
       topic in order of first appearance. groupsim fills that ``HashMap`` in ``assigned``'s
       order, standing for the ``HashSet`` copies before it (their order only shows between
       partitions that share a bucket).
    2. ``AbstractFetch#fetchablePartitions`` copies the fetchable partitions, in that
       assignment order, into ``new HashSet<>(collection)`` (presized to ``max(n / .75 + 1,
       16)`` slots), and ``prepareFetchRequests`` adds them to the request in its order.

    Hashes are ``TopicPartition#hashCode`` (:func:`protocol.java_hashing.topic_partition_hash`);
    e.g. partitions 0, 2, 3 of ``stateful-counts-changelog`` come as 0, 3, 2.

    Args:
        added: the partitions new to the session.
        assigned: the restore consumer's whole assignment after the change (``added`` in it).
        fetchable: the partitions the fetch asks for (not paused; Kafka also leaves out
            those with data still buffered, which groupsim does not model).

    Returns:
        ``added`` in request order; those not fetchable (paused) last, in assignment order.
    """
    assignment = JavaHashMap(_tp_hash)
    for tp in assigned:
        assignment.add(tp)
    by_topic: dict[str, list[TopicPartition]] = {}
    for tp in assignment:
        by_topic.setdefault(tp.topic, []).append(tp)
    ordered = [tp for tps in by_topic.values() for tp in tps]
    request = JavaHashMap.copy_of([tp for tp in ordered if tp in fetchable], _tp_hash)
    new = set(added)
    return [tp for tp in request if tp in new] + [
        tp for tp in ordered if tp in new and tp not in fetchable
    ]


def assign_tasks_to_threads(
    tasks: Collection[TaskId],
    threads: int,
    previous: Mapping[int, Sequence[TaskId]],
    load: dict[int, int],
    *,
    sticky: bool = True,
) -> dict[int, list[TaskId]]:
    """Spread one client's ``tasks`` over its ``threads`` stream threads (indices
    ``0..threads-1``), as Kafka's ``StreamsPartitionAssignor#assignTasksToThreads`` spreads them
    over the client's consumers: balanced (every thread at the floor of the mean load or one
    above, counting ``load`` from earlier calls), each thread first keeping the tasks it
    held before (``previous``: per thread, in order of preference; Kafka's
    ``ClientState#prevTasksByLag``) up to that floor when ``sticky`` (stateful tasks), the rest
    dealt in task order to the threads still under it, then to threads at it, a skipped task
    going back to its previous thread where possible.

    Kafka calls it for a client's stateful actives, then its standbys, then its stateless
    actives, with one ``load`` map carried through the three calls.

    Args:
        tasks: the tasks to place.
        threads: ``num.stream.threads`` (≥ 1).
        previous: thread → the tasks it held before, most preferred first.
        load: thread → tasks already placed by earlier calls; updated.
        sticky: keep previous owners (Kafka: stateful tasks only).

    Returns:
        thread → its tasks (every thread present).

    Raises:
        ValueError: ``threads`` below 1.
    """
    if threads < 1:
        raise ValueError("a client has at least one stream thread")
    out: dict[int, list[TaskId]] = {i: [] for i in range(threads)}
    unassigned = sorted(set(tasks))
    if unassigned:
        total = sum(load.values()) + len(unassigned)
        floor = total // threads
        pending = set(unassigned)
        to_fill: deque[int] = deque()
        skipped: dict[TaskId, int] = {}
        for thread in range(threads):
            target = floor - load.get(thread, 0)
            if sticky:
                for task in previous.get(thread, ()):
                    if task in pending:
                        if len(out[thread]) < target:
                            out[thread].append(task)
                            pending.discard(task)
                        else:
                            skipped.setdefault(task, thread)
            if len(out[thread]) < target:
                to_fill.append(thread)
        while to_fill:
            task = min(pending)  # the loads' floor never asks for more tasks than there are
            thread = to_fill.popleft()
            out[thread].append(task)
            pending.discard(task)
            if len(out[thread]) + load.get(thread, 0) < floor:
                to_fill.append(thread)
        if pending:
            at_floor = [t for t in range(threads) if len(out[t]) + load.get(t, 0) == floor]
            for task in sorted(skipped):
                thread = skipped[task]
                if thread in at_floor and task in pending:
                    out[thread].append(task)
                    pending.discard(task)
                    at_floor.remove(thread)
            for task in sorted(pending):
                out[at_floor.pop(0)].append(task)
    for thread, placed in out.items():
        load[thread] = load.get(thread, 0) + len(placed)
    return out


@dataclass(frozen=True)
class RestoreEvent:
    """Something a :class:`RestoreThread` reached: ``kind`` is ``"restored"`` (an active's
    store reached its changelog's end; the task left the thread) or ``"caught_up"`` (a standby
    came within the thread's ``acceptable_lag``), at ``at_ms`` (virtual ms)."""

    kind: str
    task: TaskId
    at_ms: int


class RestoreThread:
    """One stream thread's state updater and restore consumer (module doc). Pure: every entry
    point takes the virtual time (ms, never going back) and returns what happened.

    Args:
        rate: records the thread applies per virtual second (``groupsim.restore.records.per.sec``).
        chunk: records of one changelog per fetch (:func:`chunk_records`).
        end_offset: task → its changelog's end offset at a virtual time.
        growth: task → records appended to its changelog per virtual second.
        acceptable_lag: a standby within this many records of the end is caught up
            (``acceptable.recovery.lag``).
        changelog_topic: task → its changelog topic's name, or ``None`` when the scenario
            names none; standbys resumed together follow :func:`fetch_order` when every
            changelog on the thread has a name, else task order (module doc).

    Raises:
        ValueError: a negative rate or a chunk below 1.
    """

    def __init__(
        self,
        rate: int,
        chunk: int,
        end_offset: Callable[[TaskId, int], int],
        growth: Callable[[TaskId], int],
        acceptable_lag: int,
        changelog_topic: Callable[[TaskId], str | None] | None = None,
    ) -> None:
        if rate < 0 or chunk < 1:
            raise ValueError("restore rate must be ≥ 0 and chunk ≥ 1")
        self.rate = rate
        self.chunk = chunk
        self._end = end_offset
        self._growth = growth
        self.acceptable_lag = acceptable_lag
        self.kind: dict[TaskId, str] = {}  # task -> "active" | "standby"
        self._offset: dict[TaskId, int] = {}  # at self._t0 (tracking: at their end then)
        self._tracking: set[TaskId] = set()
        self._caught_up: set[TaskId] = set()
        self._round: deque[TaskId] = deque()
        # each served changelog's place in the thread's fetch session (module doc)
        self._place: dict[TaskId, int] = {}
        self._places = 0
        self._topic = changelog_topic
        # the chunk being applied: (task, offset at start, records, start ms), or None
        self._current: tuple[TaskId, int, int, int] | None = None
        self._t0 = 0
        #: records applied so far (property tests: never above rate × time served)
        self.applied = 0

    # ------------------------------------------------------------------ views

    def tasks(self) -> list[TaskId]:
        """The thread's tasks (restoring actives and standbys), sorted."""
        return sorted(self.kind)

    def restoring_actives(self) -> bool:
        """``StoreChangelogReader#isRestoringActive``: some active has not restored yet."""
        return "active" in self.kind.values()

    def offset(self, task: TaskId, now_ms: int) -> int:
        """The offset ``task``'s store has reached at ``now_ms`` (a view: no state changes).

        Raises:
            KeyError: ``task`` is not on this thread.
        """
        if task in self._tracking:
            return self._end(task, now_ms)
        base = self._offset[task]
        cur = self._current
        if cur is not None and cur[0] == task:
            return cur[1] + self._progress(cur, now_ms)
        return base

    def caught_up(self, task: TaskId) -> bool:
        """A standby has come within ``acceptable_lag`` (reported once)."""
        return task in self._caught_up

    # ------------------------------------------------------------------ changes

    def add(self, task: TaskId, kind: str, offset: int, now_ms: int) -> list[RestoreEvent]:
        """A task joins the thread (``StateUpdater#add``) with its store at ``offset``;
        ``kind`` is ``"active"`` (to restore) or ``"standby"`` (to keep updated).

        Returns what happens at ``now_ms`` (an active already at the end is restored at
        once; a standby within the acceptable lag is caught up at once).

        Raises:
            ValueError: an unknown ``kind`` or a task already on the thread.
        """
        if kind not in ("active", "standby") or task in self.kind:
            raise ValueError(f"cannot add {kind} {task}")
        events = self.advance(now_ms)
        if kind == "active" and not self.restoring_actives():
            self._interrupt(now_ms)  # enforceRestoreActive pauses the standbys
        self.kind[task] = kind
        self._offset[task] = offset
        self._place[task] = self._places
        self._places += 1
        return events + self.advance(now_ms)

    def remove(self, task: TaskId, now_ms: int) -> tuple[int, list[RestoreEvent]]:
        """A task leaves the thread (closed, recycled, revoked).

        Returns:
            ``(offset, events)``: the offset its store reached (what stays on disk), and what
            the thread reached up to ``now_ms`` before it left (the task's own events
            included).

        Raises:
            KeyError: ``task`` is not on this thread.
        """
        if task not in self.kind:
            raise KeyError(task)
        events = self._settle(now_ms)
        if task not in self.kind:  # an active that restored by now
            return self._end(task, now_ms), events
        offset = self.offset(task, now_ms)
        self._rebase(now_ms)  # the tracking standbys' share of the rate may change
        cur = self._current
        if cur is not None and cur[0] == task:
            self._current = None
        self.kind.pop(task)
        self._offset.pop(task)
        self._place.pop(task, None)
        self._tracking.discard(task)
        self._caught_up.discard(task)
        if task in self._round:
            self._round.remove(task)
        return offset, events + self._settle(now_ms)  # the next chunk begins

    def advance(self, now_ms: int) -> list[RestoreEvent]:
        """Apply chunks up to ``now_ms``; returns what was reached, in time order."""
        return self._settle(now_ms)

    def next_event_ms(self, now_ms: int) -> int | None:
        """When :meth:`advance` next has something to do (a chunk ends, a standby's lag falls
        within ``acceptable_lag`` inside a chunk, a changelog gets a record to fetch), or
        ``None`` if never without a change; never before ``now_ms``. Call it after
        :meth:`advance` (or a change) at ``now_ms``."""
        cur = self._current
        if cur is None:
            return self._next_record_ms(now_ms)
        task, start, records, since = cur
        rate = self._effective_rate()
        if rate <= 0:
            return None
        due = since + -(-records * 1000 // rate)
        if self.kind[task] == "standby" and task not in self._caught_up:
            # lag(t) = end(t) − (start + rate·(t − since)); within acceptable_lag from …
            lag = self._end(task, since) - start - self.acceptable_lag + 2
            closing = rate - self._growth(task)
            if closing > 0:
                due = min(due, since + max(0, -(-lag * 1000 // closing)))
        return max(due, now_ms)

    # ------------------------------------------------------------------ internals

    def _served(self) -> list[TaskId]:
        """The changelogs served now, in fetch-session order (module doc)."""
        kind = "active" if self.restoring_actives() else "standby"
        return sorted((t for t, k in self.kind.items() if k == kind), key=self._place.__getitem__)

    def _java_order(self, tasks: list[TaskId], fetching: Collection[TaskId]) -> list[TaskId] | None:
        """``tasks``' changelogs added to the fetch session together, in :func:`fetch_order`
        (``fetching``: the changelogs the next fetch asks for); ``None`` when some changelog
        on the thread has no topic name (the caller keeps its own order)."""
        topic = self._topic
        if topic is None:
            return None
        tps: dict[TaskId, TopicPartition] = {}
        for task in self.kind:
            name = topic(task)
            if name is None:
                return None
            tps[task] = TopicPartition(name, task.partition)
        back = {tp: task for task, tp in tps.items()}
        order = fetch_order(
            [tps[t] for t in tasks],
            [tps[t] for t in sorted(self.kind)],
            {tps[t] for t in fetching if t in tps},
        )
        return [back[tp] for tp in order]

    def _resume_standbys(self) -> None:
        """``transitToUpdateStandby``: the paused standbys are fetched again, added to the
        fetch session together, after everything (in :meth:`_java_order`)."""
        standbys = [t for t, k in self.kind.items() if k == "standby"]
        for task in self._java_order(standbys, standbys) or sorted(standbys):
            self._place[task] = self._places
            self._places += 1

    def _effective_rate(self) -> int:
        """The thread's rate minus what its tracking standbys take to keep up."""
        if self.restoring_actives():
            return self.rate
        return self.rate - sum(self._growth(t) for t in self._tracking)

    def _progress(self, cur: tuple[TaskId, int, int, int], now_ms: int) -> int:
        rate = self._effective_rate()
        if rate <= 0:
            return 0
        return min(cur[2], rate * max(0, now_ms - cur[3]) // 1000)

    def _rebase(self, now_ms: int) -> None:
        """Restart the chunk being applied from what it has applied at ``now_ms`` (before the
        effective rate changes)."""
        cur = self._current
        if cur is not None:
            done = self._progress(cur, now_ms)
            self.applied += done
            self._current = (cur[0], cur[1] + done, cur[2] - done, now_ms)

    def _interrupt(self, now_ms: int) -> None:
        """Stop the chunk being applied, keeping what was applied, and start a new round."""
        cur = self._current
        if cur is not None:
            done = self._progress(cur, now_ms)
            self._offset[cur[0]] = cur[1] + done
            self.applied += done
            self._current = None
        self._round.clear()
        # tracking standbys are paused with the rest: they stop at their end now
        for task in sorted(self._tracking):
            self._offset[task] = self._end(task, now_ms)
        self._tracking.clear()

    def _next_record_ms(self, now_ms: int) -> int | None:
        """With nothing to fetch: when a served, untracked changelog next has a record."""
        best: int | None = None
        for task in self._served():
            if task in self._tracking:
                continue
            growth = self._growth(task)
            if growth <= 0:
                continue
            # first t with end(t) > offset: end(t) = end(0) + growth·t/1000
            base = self._end(task, 0)
            need = self._offset[task] + 1 - base
            at = max(now_ms, -(-need * 1000 // growth))
            best = at if best is None else min(best, at)
        return best

    def _may_track(self, task: TaskId) -> bool:
        growth = self._growth(task)
        if growth == 0:
            return True
        return self._effective_rate() - growth > 0

    def _settle(self, now_ms: int) -> list[RestoreEvent]:
        events: list[RestoreEvent] = []
        t = self._t0
        while True:
            events.extend(self._check_caught_up(t))
            cur = self._current
            if cur is None:
                if not self._start_chunk(t, events):
                    break
                continue
            task, start, records, since = cur
            rate = self._effective_rate()
            if rate <= 0:
                break
            end_at = since + -(-records * 1000 // rate)
            if end_at > now_ms:
                break
            # the chunk is applied
            t = end_at
            self._current = None
            self._offset[task] = start + records
            self.applied += records
            self._reached(task, t, events)
        # a standby's lag can fall within the acceptable lag inside the chunk being applied
        events.extend(self._check_caught_up(now_ms))
        if self._current is None:
            self._t0 = now_ms
            self._start_chunk(now_ms, events)
        self._t0 = now_ms
        return events

    def _reached(self, task: TaskId, t: int, events: list[RestoreEvent]) -> None:
        """After a chunk: an active at its end is restored; a standby at its end tracks."""
        if self._offset[task] < self._end(task, t):
            return
        if self.kind[task] == "active":
            self.kind.pop(task)
            self._offset.pop(task)
            if task in self._round:
                self._round.remove(task)
            events.append(RestoreEvent("restored", task, t))
            if not self.restoring_actives():
                self._round.clear()  # transitToUpdateStandby: a new round of standbys
                self._resume_standbys()
        elif self._may_track(task):
            self._tracking.add(task)

    def _start_chunk(self, t: int, events: list[RestoreEvent]) -> bool:
        """Begin the next chunk of the round at ``t`` (a new round when it is over); returns
        whether one began. Served changelogs found at their end are settled on the way."""
        built: set[bool] = set()  # a fresh round per kind served, at most
        while True:
            if not self._round:
                serving_actives = self.restoring_actives()
                if serving_actives in built:
                    return False
                built.add(serving_actives)
                self._round.extend(x for x in self._served() if x not in self._tracking)
                if not self._round:
                    return False
            task = self._round.popleft()
            if task not in self.kind or task in self._tracking:
                continue
            available = self._end(task, t) - self._offset[task]
            if available <= 0:
                self._reached(task, t, events)
                events.extend(self._check_caught_up(t))
                continue
            self._current = (task, self._offset[task], min(self.chunk, available), t)
            return True

    def _check_caught_up(self, t: int) -> list[RestoreEvent]:
        out: list[RestoreEvent] = []
        caught_up = self._caught_up
        # the standbys not yet caught up, in task order (filtered before sorting: usually none)
        waiting = [x for x, k in self.kind.items() if k == "standby" and x not in caught_up]
        for task in sorted(waiting) if waiting else ():
            if self._end(task, t) - self.offset(task, t) <= self.acceptable_lag:
                self._caught_up.add(task)
                out.append(RestoreEvent("caught_up", task, t))
        return out
