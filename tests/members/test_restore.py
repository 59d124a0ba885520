"""The restore model of a Kafka Streams client (members.restore): one restore stream per
stream thread, actives before standbys, changelogs in chunks of max.partition.fetch.bytes, at
the thread's rate; and the spread of a client's tasks over its threads."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from members.assignors.streams import TaskId
from members.restore import RestoreThread, assign_tasks_to_threads, chunk_records, fetch_order
from protocol.consumer_codec import TopicPartition
from protocol.java_hashing import topic_partition_hash

A, B, C = TaskId(0, 0), TaskId(0, 1), TaskId(0, 2)


def _thread(
    sizes: dict[TaskId, int],
    rate: int = 1000,
    chunk: int = 100,
    growth: dict[TaskId, int] | None = None,
    acceptable: int = 0,
    topic: str | None = None,
) -> RestoreThread:
    grow = growth or {}
    return RestoreThread(
        rate,
        chunk,
        lambda task, now: sizes[task] + grow.get(task, 0) * now // 1000,
        lambda task: grow.get(task, 0),
        acceptable,
        lambda task: topic,
    )


def _run_until(thread: RestoreThread, now: int, until: int) -> list[tuple[str, TaskId, int]]:
    """Fire the thread's timer as a client would, up to ``until``; the events reached."""
    seen: list[tuple[str, TaskId, int]] = []
    while True:
        due = thread.next_event_ms(now)
        if due is None or due > until:
            seen += [(e.kind, e.task, e.at_ms) for e in thread.advance(until)]
            return seen
        now = due
        seen += [(e.kind, e.task, e.at_ms) for e in thread.advance(now)]


def test_chunk_is_the_fetch_size_over_the_record_size() -> None:
    assert chunk_records(1_048_576, 100) == 10_485
    assert chunk_records(1_048_576, 30) == 34_952
    assert chunk_records(10, 100) == 1  # a fetch returns at least one batch
    with pytest.raises(ValueError):
        chunk_records(0, 100)


def test_a_changelog_under_a_chunk_restores_whole_before_the_next_begins() -> None:
    thread = _thread({A: 80, B: 90}, rate=1000, chunk=100)
    thread.add(B, "active", 0, 0)
    thread.add(A, "active", 0, 0)
    # B was added first and its chunk (all of it) was fetched alone
    assert thread.offset(B, 45) == 45 and thread.offset(A, 45) == 0
    events = _run_until(thread, 0, 90)
    assert events == [("restored", B, 90)]
    assert thread.offset(A, 90) == 0
    assert _run_until(thread, 90, 1000) == [("restored", A, 170)]


def test_larger_changelogs_take_turns_chunk_by_chunk_in_task_order() -> None:
    thread = _thread({A: 250, B: 250}, rate=1000, chunk=100)
    thread.add(A, "standby", 0, 0)
    thread.add(B, "standby", 0, 0)
    # A's first chunk (fetched alone), then rounds over A and B in task order
    assert (thread.offset(A, 100), thread.offset(B, 100)) == (100, 0)
    _run_until(thread, 0, 300)
    assert (thread.offset(A, 300), thread.offset(B, 300)) == (200, 100)
    # the next round: A's last 50 records, then B's second chunk
    _run_until(thread, 300, 400)
    assert (thread.offset(A, 400), thread.offset(B, 400)) == (250, 150)
    _run_until(thread, 400, 1000)
    assert (thread.offset(A, 1000), thread.offset(B, 1000)) == (250, 250)


def test_standbys_wait_while_an_active_restores() -> None:
    thread = _thread({A: 500, B: 300}, rate=1000, chunk=100)
    thread.add(A, "standby", 0, 0)
    _run_until(thread, 0, 50)
    assert thread.offset(A, 50) == 50
    # a new active pauses the standby at once (enforceRestoreActive); what it applied stays
    thread.add(B, "active", 0, 50)
    events = _run_until(thread, 50, 349)
    assert events == [] and thread.offset(A, 349) == 50 and thread.offset(B, 349) == 299
    assert _run_until(thread, 349, 350) == [("restored", B, 350)]
    # then the standby resumes (transitToUpdateStandby)
    _run_until(thread, 350, 400)
    assert thread.offset(A, 400) == 100


def test_a_standby_is_caught_up_within_the_acceptable_lag_inside_a_chunk() -> None:
    thread = _thread({A: 1000}, rate=1000, chunk=1000, acceptable=300)
    thread.add(A, "standby", 0, 0)
    events = _run_until(thread, 0, 2000)
    assert events[0][0:2] == ("caught_up", A)
    assert 700 <= events[0][2] <= 703
    assert thread.caught_up(A)


def test_an_active_at_its_end_is_restored_at_once() -> None:
    thread = _thread({A: 100})
    events = thread.add(A, "active", 100, 5)
    assert [(e.kind, e.task, e.at_ms) for e in events] == [("restored", A, 5)]
    assert thread.tasks() == []


def test_a_standby_at_its_end_tracks_a_growing_changelog() -> None:
    thread = _thread({A: 100, B: 1000}, rate=1000, chunk=100, growth={A: 100})
    thread.add(A, "standby", 100, 0)
    thread.add(B, "standby", 0, 0)
    _run_until(thread, 0, 5000)
    assert thread.offset(A, 5000) == 600  # it kept up: 100 + 100 records/s × 5 s
    assert thread.offset(B, 5000) == 1000  # B restored at 900 records/s meanwhile


def test_removing_a_task_returns_its_offset_and_the_next_changelog_goes_on() -> None:
    thread = _thread({A: 100, B: 100}, rate=1000, chunk=100)
    thread.add(A, "active", 0, 0)
    thread.add(B, "active", 0, 0)
    offset, events = thread.remove(A, 40)
    assert (offset, events) == (40, [])
    assert _run_until(thread, 40, 1000) == [("restored", B, 140)]


def test_bad_arguments_are_refused() -> None:
    thread = _thread({A: 10})
    with pytest.raises(ValueError):
        thread.add(A, "warmup", 0, 0)
    thread.add(A, "standby", 0, 0)
    with pytest.raises(ValueError):
        thread.add(A, "standby", 0, 0)
    with pytest.raises(KeyError):
        thread.remove(B, 0)
    with pytest.raises(ValueError):
        RestoreThread(-1, 1, lambda t, n: 0, lambda t: 0, 0)


_TASKS = [TaskId(0, p) for p in range(5)]


@st.composite
def _histories(draw: st.DrawFn) -> tuple[int, int, dict[TaskId, int], dict[TaskId, int], list]:
    rate = draw(st.integers(1, 5000))
    chunk = draw(st.integers(1, 3000))
    sizes = {t: draw(st.integers(0, 20_000)) for t in _TASKS}
    growth = {t: draw(st.sampled_from((0, 0, 1, 7, 50))) for t in _TASKS}
    steps = draw(
        st.lists(
            st.tuples(
                st.integers(0, 3000),
                st.sampled_from(("active", "standby", "remove", "tick")),
                st.sampled_from(_TASKS),
                st.integers(0, 20_000),
            ),
            max_size=25,
        )
    )
    return rate, chunk, sizes, growth, steps


@settings(max_examples=300, deadline=None)
@given(_histories())
def test_a_thread_never_restores_more_than_its_rate_allows(history) -> None:
    """Whatever is added, removed and when: the records a thread's stores gained (restoring
    actives, standbys, tracking standbys) never exceed ``rate × time`` since its first task
    (plus one record per task for the changelogs' integer growth); offsets never pass the end
    nor go back; and actives are served first (a standby gains nothing while an active
    restores)."""
    rate, chunk, sizes, growth, steps = history
    thread = _thread(sizes, rate=rate, chunk=chunk, growth=growth)

    def end(task: TaskId, now: int) -> int:
        return sizes[task] + growth[task] * now // 1000

    start: dict[TaskId, int] = {}
    gained = 0
    first: int | None = None
    seen: set[TaskId] = set()
    now = 0

    def collect(events, at: int) -> None:
        nonlocal gained
        for e in events:
            if e.kind == "restored":
                gained += end(e.task, e.at_ms) - start.pop(e.task)

    last: dict[TaskId, int] = {}
    for dt, op, task, offset in steps:
        # move on in time, firing the thread's timer as the client does
        target = now + dt
        while True:
            due = thread.next_event_ms(now)
            before = {t: thread.offset(t, now) for t in thread.tasks()}
            step_to = target if due is None or due > target else due
            restoring = thread.restoring_actives()
            collect(thread.advance(step_to), step_to)
            for t in thread.tasks():
                here = thread.offset(t, step_to)
                assert here <= end(t, step_to)
                assert here >= before.get(t, here)
                if restoring and thread.kind[t] == "standby":
                    assert here == before[t]
            now = step_to
            if step_to == target:
                break
        if op in ("active", "standby") and task not in thread.kind and task in start:
            continue
        if op in ("active", "standby") and task not in thread.kind:
            first = now if first is None else first
            at = min(offset, end(task, now))
            start[task] = at
            seen.add(task)
            collect(thread.add(task, op, at, now), now)
        elif op == "remove" and task in thread.kind:
            off, events = thread.remove(task, now)
            gained += off - start.pop(task)
            collect(events, now)
        last = {t: thread.offset(t, now) for t in thread.tasks()}
    for task, at in start.items():
        gained += last.get(task, at) - at
    if first is not None:
        assert gained <= rate * (now - first) // 1000 + len(seen)
    assert thread.applied <= rate * (now - (first or 0)) // 1000 + 1


def test_threads_get_tasks_interleaved_actives_then_standbys() -> None:
    tasks = [TaskId(0, p) for p in range(4)]
    load: dict[int, int] = {}
    actives = assign_tasks_to_threads(tasks[:3], 2, {}, load)
    assert actives == {0: [TaskId(0, 0), TaskId(0, 2)], 1: [TaskId(0, 1)]}
    standbys = assign_tasks_to_threads([TaskId(1, 0)], 2, {}, load)
    assert standbys == {0: [], 1: [TaskId(1, 0)]}
    assert load == {0: 2, 1: 2}


def test_threads_keep_the_tasks_they_held() -> None:
    tasks = [TaskId(0, p) for p in range(4)]
    previous = {1: [TaskId(0, 0), TaskId(0, 3)], 0: [TaskId(0, 1)]}
    placed = assign_tasks_to_threads(tasks, 2, previous, {})
    assert placed == {0: [TaskId(0, 1), TaskId(0, 2)], 1: [TaskId(0, 0), TaskId(0, 3)]}
    # a previous owner over its share keeps only the first of its preference
    previous = {0: [TaskId(0, 3), TaskId(0, 2), TaskId(0, 1)]}
    placed = assign_tasks_to_threads(tasks[1:], 3, previous, {})
    assert placed == {0: [TaskId(0, 3)], 1: [TaskId(0, 1)], 2: [TaskId(0, 2)]}
    with pytest.raises(ValueError):
        assign_tasks_to_threads(tasks, 0, {}, {})


def test_a_changelog_given_later_is_fetched_after_those_the_thread_has() -> None:
    """Kafka's broker appends a partition the restore consumer adds to the end of its fetch
    session (``FetchSession``, KIP-227): a warm-up given to a thread that is updating lagging
    standbys restores after them, whatever its task id (the lagging scale-in on Kafka 4.0.2
    and 4.4.0: I3 restored its standbys 0_0 and 0_3 before its new warm-up 0_2)."""
    D = TaskId(0, 3)
    thread = _thread({A: 1_000, C: 10_000, D: 1_000}, rate=100, chunk=20_000, acceptable=10)
    thread.add(A, "standby", 0, 0)
    thread.add(D, "standby", 500, 0)
    thread.add(C, "standby", 0, 0)
    events = _run_until(thread, 0, 60_000)
    caught = [(task, at) for kind, task, at in events if kind == "caught_up"]
    assert [task for task, _ in caught] == [A, D]  # 0_2 not yet: 10,000 records behind
    assert thread.offset(C, 60_000) == 100 * 60 - 1_000 - 500


def test_standbys_resumed_after_an_active_restores_come_back_in_task_order() -> None:
    """``transitToUpdateStandby`` resumes every paused standby at once: they rejoin the fetch
    session together, in task order when the scenario names no changelog topic."""
    thread = _thread({A: 50, B: 50, C: 50}, rate=1000, chunk=100)
    thread.add(C, "standby", 0, 0)
    thread.add(B, "active", 0, 0)
    thread.add(A, "standby", 0, 0)
    events = _run_until(thread, 0, 1_000)
    # C was added first, but comes back with A, after it
    assert events == [("restored", B, 50), ("caught_up", A, 100), ("caught_up", C, 150)]


COUNTS = "stateful-counts-changelog"


def test_topic_partition_hash_is_javas() -> None:
    # "a".hashCode() = 97; 31 * (31 + 0) + 97; int32 wrap-around for a long name
    assert topic_partition_hash("a", 0) == 1058
    assert topic_partition_hash("a", 2) == 1120
    assert -(2**31) <= topic_partition_hash(COUNTS * 3, 7) < 2**31


def test_partitions_added_together_come_in_java_hash_order() -> None:
    """``SubscriptionState#assignFromUser``'s ``HashMap``, then ``AbstractFetch``'s ``HashSet``
    of fetchable partitions: partitions 0, 2, 3 of the real application's changelog are
    fetched (so appended to the broker's fetch session) as 0, 3, 2."""
    tps = [TopicPartition(COUNTS, p) for p in (0, 2, 3)]
    assert [tp.partition for tp in fetch_order(tps, tps, tps)] == [0, 3, 2]
    # only the new ones are listed; a paused one comes last
    old = TopicPartition(COUNTS, 1)
    got = fetch_order(tps, [old, *tps], {old, *tps[1:]})
    assert [tp.partition for tp in got] == [3, 2, 0]


def test_tasks_given_at_once_reach_the_restore_consumer_one_at_a_time() -> None:
    """Kafka's stream thread initialises each task before handing it to the state updater,
    which registers its changelog alone (``TaskManager#addTaskToStateUpdater``): three actives
    given at once restore in task order even with the topic named (three real runs did)."""
    D = TaskId(0, 3)
    for topic in (COUNTS, None):
        thread = _thread({A: 80, C: 80, D: 80}, rate=1000, chunk=100, topic=topic)
        for task in (A, C, D):
            thread.add(task, "active", 0, 0)
        events = _run_until(thread, 0, 1_000)
        assert events == [("restored", A, 80), ("restored", C, 160), ("restored", D, 240)]


def test_named_standbys_resumed_together_come_back_in_fetch_order() -> None:
    """``transitToUpdateStandby`` resumes every paused standby in one call: the next fetch
    lists them in its ``HashSet`` order, 0_0, 0_3, 0_2 for ``stateful-counts-changelog``
    (task order without a name: ``test_standbys_resumed_after_an_active_restores_...``)."""
    D = TaskId(0, 3)
    thread = _thread({A: 50, B: 50, C: 50, D: 50}, rate=1000, chunk=100, topic=COUNTS)
    thread.add(B, "active", 0, 0)
    for task in (A, C, D):
        thread.add(task, "standby", 0, 0)
    events = _run_until(thread, 0, 1_000)
    assert events == [
        ("restored", B, 50),
        ("caught_up", A, 100),
        ("caught_up", D, 150),
        ("caught_up", C, 200),
    ]
