"""The assignors' fast byte paths equal the codec (protocol.connect_codec) byte for byte, and
the eager assignor's arithmetic round robin equals a plain one."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from members.assignors import ConfigSnapshot, EagerAssignor
from members.assignors._wire import (
    assignment_header,
    encode_assignment_fast,
    read_member_state,
    reread_member_state,
)
from members.assignors.base import snapshot_tables
from protocol.connect import ConnectAssignment, ConnectorTaskId, ConnectProtocol, WorkerSubscription
from protocol.connect_codec import (
    decode_assignment,
    decode_subscription_v1,
    encode_assignment,
    encode_subscription,
)
from protocol.java_strings import java_sorted_strings

names = st.sampled_from(
    [f"connector{i}" for i in range(20)] + ["é-conn", "zz", "Ω", "\U0001f600x", "a" * 40]
)
task_lists = st.lists(st.tuples(names, st.integers(0, 5000)), max_size=40, unique=True)
conn_lists = st.lists(names, max_size=16, unique=True)


@given(
    version=st.integers(0, 3),
    conns=conn_lists,
    tasks=task_lists,
    rconns=conn_lists,
    rtasks=task_lists,
    delay=st.integers(0, 2**31 - 1),
)
def test_fast_assignment_encoding_matches_codec(version, conns, tasks, rconns, rtasks, delay):
    a = ConnectAssignment(
        version,
        0,
        "leader-1",
        "http://l:8083",
        42,
        tuple(conns),
        tuple(ConnectorTaskId(c, t) for c, t in tasks),
        tuple(rconns),
        tuple(ConnectorTaskId(c, t) for c, t in rtasks),
        delay,
    )
    header = assignment_header(version, 0, "leader-1", "http://l:8083", 42)
    data, assigned, revoked = encode_assignment_fast(
        header, version, conns, tasks, rconns, rtasks, delay
    )
    assert data == encode_assignment(a, version)
    dec = decode_assignment(data)
    ac, at = assigned()
    assert tuple(ac) == dec.connectors and tuple(at) == dec.tasks
    rc, rt = revoked()
    assert tuple(rc) == dec.revoked_connectors and tuple(rt) == dec.revoked_tasks


@given(
    version=st.integers(0, 2),
    alloc=st.none() | st.tuples(conn_lists, task_lists),
    dup=st.booleans(),
)
def test_fast_metadata_reading_matches_codec(version, alloc, dup):
    allocation = None
    if alloc is not None and version > 0:
        conns, tasks = alloc
        if dup and tasks:
            tasks = [*tasks, tasks[0]]
        allocation = ConnectAssignment(
            version,
            0,
            "w",
            "http://w:8083",
            3,
            tuple(conns),
            tuple(ConnectorTaskId(c, t) for c, t in tasks),
        )
    data = encode_subscription(WorkerSubscription(version, "http://w:8083", 7, allocation))
    fast = read_member_state(data)
    ref = decode_subscription_v1(data)
    assert (fast.version, fast.url, fast.config_offset) == (ref.version, ref.url, 7)
    if ref.allocation is None:
        assert fast.connectors == [] and fast.tasks == [] and fast.allocation_version is None
    else:
        assert tuple(fast.connectors) == ref.allocation.connectors
        assert tuple(fast.tasks) == ref.allocation.tasks
        assert fast.allocation_version == ref.allocation.version


def test_unusual_metadata_falls_back_to_codec() -> None:
    # allocation whose assigned array is null (-1): the codec reads it as empty
    alloc = b"\x00\x01\x00\x00" + b"\x00\x01w" + b"\x00\x01u" + b"\x00" * 8 + b"\xff\xff\xff\xff"
    data = (
        b"\x00\x01" + b"\x00\x01u" + b"\x00" * 7 + b"\x05" + len(alloc).to_bytes(4, "big") + alloc
    )
    state = read_member_state(data)
    assert state.config_offset == 5 and state.connectors == [] and state.tasks == []


def _plain_round_robin(members, snapshot):
    order = java_sorted_strings(members)
    conns = {m: [] for m in order}
    tasks = {m: [] for m in order}
    i = 0
    for c in snapshot.connector_names():
        conns[order[i % len(order)]].append(c)
        i += 1
    for c in snapshot.connector_names():
        for t in snapshot.tasks(c):
            tasks[order[i % len(order)]].append(t)
            i += 1
    return conns, tasks


member_ids = st.lists(
    st.sampled_from([f"w{i}" for i in range(30)] + ["ä", "Z", "w\U0001f600", "\uff5e"]),
    min_size=1,
    max_size=20,
    unique=True,
)


@given(
    members=member_ids,
    counts=st.dictionaries(names, st.integers(0, 45), max_size=18),
)
def test_eager_matches_plain_round_robin(members, counts):
    _check_eager_round(members, counts)


@given(members=member_ids, data=st.data())
def test_eager_spread_path_matches_plain_round_robin(members, data):
    # no connector has more tasks than there are members: the sliced fast path
    counts = data.draw(
        st.dictionaries(names, st.integers(0, len(members)), max_size=24), label="counts"
    )
    _check_eager_round(members, counts)


def _check_eager_round(members: list[str], counts: dict[str, int]) -> None:
    snap = ConfigSnapshot(3, counts)
    md = [(m, encode_subscription(WorkerSubscription(0, f"http://{m}", 3))) for m in members]
    res = EagerAssignor().perform_assignment(
        leader_id=members[-1],
        protocol=ConnectProtocol.EAGER,
        members=md,
        snapshot=snap,
        refresh_snapshot=lambda: snap,
    )
    conns, tasks = _plain_round_robin(members, snap)
    assert list(res.assignments) == members
    for m in members:
        want = ConnectAssignment(
            0, 0, members[-1], f"http://{members[-1]}", 3, tuple(conns[m]), tuple(tasks[m])
        )
        data = encode_assignment(want, 0)
        assert res.assignments[m] == data
        assert res.decoded[m] == decode_assignment(data)


def test_small_metadata_is_decoded_once_per_content() -> None:
    data = encode_subscription(WorkerSubscription(1, "http://w:8083", 7, None))
    first = read_member_state(data)
    again = read_member_state(bytearray(data))  # same content, another buffer type
    assert again is first
    assert (again.url, again.config_offset, again.tasks) == ("http://w:8083", 7, [])


def _metadata(tasks, delay=0, revoked=(), offset=7):
    alloc = ConnectAssignment(
        1,
        0,
        "w",
        "http://w:8083",
        3,
        ("c1",),
        tuple(ConnectorTaskId(c, t) for c, t in tasks),
        (),
        tuple(ConnectorTaskId(c, t) for c, t in revoked),
        delay,
    )
    return encode_subscription(WorkerSubscription(1, "http://w:8083", offset, alloc))


def test_reread_reuses_the_reading_when_only_the_echoed_delay_changed() -> None:
    held = [(f"conn-{i}", i % 10) for i in range(60)]  # > 512 bytes: not the content cache
    before = _metadata(held, delay=0)
    first = read_member_state(before)
    after = _metadata(held, delay=290_000)
    assert after != before
    assert reread_member_state(after, before, first) is first
    fresh = read_member_state(after)
    assert (fresh.connectors, fresh.tasks) == (first.connectors, first.tasks)


@given(
    held=task_lists,
    other=task_lists,
    offset=st.integers(0, 10),
    revoked=task_lists,
    delay=st.integers(0, 600_000),
)
def test_reread_equals_a_fresh_reading(held, other, offset, revoked, delay):
    before = _metadata(held)
    after = _metadata(other, delay=delay, revoked=revoked, offset=offset)
    got = reread_member_state(after, before, read_member_state(before))
    ref = read_member_state(after)
    assert (got.version, got.url, got.config_offset) == (ref.version, ref.url, ref.config_offset)
    assert (got.connectors, got.tasks, got.allocation_version) == (
        ref.connectors,
        ref.tasks,
        ref.allocation_version,
    )


def test_decoded_tasks_are_the_configured_tuples() -> None:
    # identity lets the leader's set differences skip comparing names
    snapshot = ConfigSnapshot(1, {"ident-a": 3, "ident-b": 2})
    configured = {t: t for t in snapshot_tables(snapshot).sorted_tasks}
    state = read_member_state(_metadata([("ident-b", 1), ("ident-a", 0), ("ident-a", 2)]))
    assert state.tasks == [("ident-b", 1), ("ident-a", 0), ("ident-a", 2)]
    assert all(t is configured[t] for t in state.tasks)
