"""``JavaHashMap`` / ``hash_order`` against real JDK 17 orders and an independent table model.

Vectors: ``tests/vectors/java_hashmap_orders.json``, written by
``tests/vectors/gen/JavaHashMapOrders.java`` from real ``java.util.HashSet`` histories (adds,
``remove``, iterator ``remove``; crowded bins below and above 64 slots, tree bins).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from protocol.java_capacity import presized_capacity
from protocol.java_hash_order import hash_order
from protocol.java_hashing import spread, string_hash
from protocol.java_hashmap import JavaHashMap

_VECTORS = json.loads(
    (Path(__file__).parents[1] / "vectors" / "java_hashmap_orders.json").read_text()
)


def _replay(case: dict[str, Any]) -> JavaHashMap[str]:
    init = case["init"]
    m: JavaHashMap[str]
    if init == "default":
        m = JavaHashMap(string_hash)
    elif init == "copy_of":
        m = JavaHashMap.copy_of(case["initial"], string_hash)
    elif init == "copy_of_map":
        m = JavaHashMap.copy_of_map(case["initial"], string_hash)
    else:
        m = JavaHashMap(string_hash, int(init))
    for op, key in case["ops"]:
        if op == "add":
            m.add(key)
        elif op == "remove":
            m.discard(key)
        else:
            m.discard(key, movable=False)
    return m


def _has_tree_bin(m: JavaHashMap[Any]) -> bool:
    return any(b is not None and b.nodes is not None for b in (m._table or []))


def test_vectors_exercise_crowded_and_tree_bins() -> None:
    cases = _VECTORS["cases"]
    assert len(cases) >= 300
    assert sum(_has_tree_bin(_replay(c)) for c in cases) >= 30
    assert any(op == "iterator_remove" for c in cases for op, _ in c["ops"])


@pytest.mark.parametrize("index", range(len(_VECTORS["cases"])))
def test_matches_jdk17_hashset_order(index: int) -> None:
    case = _VECTORS["cases"][index]
    m = _replay(case)
    assert list(m) == case["order"]
    assert len(m) == len(case["order"])


def test_ninth_key_in_a_bin_doubles_a_small_table() -> None:
    # nine keys whose spread hashes share the low 4 bits but differ in bit 4: the ninth put
    # finds a 9-long chain in 16 slots, so treeifyBin resizes to 32 (size 9 < threshold 12)
    keys = [16 * i for i in range(9)]  # Integer.hashCode is the value; spread is a no-op
    m = JavaHashMap(lambda k: k)
    for k in keys[:8]:
        m.add(k)
    assert m.capacity == 16
    m.add(keys[8])
    assert m.capacity == 32
    assert list(m) == [0, 32, 64, 96, 128, 16, 48, 80, 112]
    assert hash_order(keys, lambda k: k) == list(m)


def test_tree_bin_iterates_root_first_then_after_parents() -> None:
    # 64 slots, nine keys in bucket 0: treeify moves the root (384) to the chain's front; a
    # later key is linked right after its tree parent (192 after 256, 64 after 0). Expected
    # orders printed by a JDK 17 HashSet<Integer>(64) with the same history.
    m = JavaHashMap(lambda k: k, 64)
    for i in range(9):
        m.add(128 * i)
    assert _has_tree_bin(m)
    assert list(m) == [384, 0, 128, 256, 512, 640, 768, 896, 1024]
    m.add(192)
    assert list(m) == [384, 0, 128, 256, 192, 512, 640, 768, 896, 1024]
    m.add(64)
    assert list(m) == [384, 0, 64, 128, 256, 192, 512, 640, 768, 896, 1024]
    m.discard(512)
    assert list(m) == [384, 0, 64, 128, 256, 192, 640, 768, 896, 1024]


# -- an independent model: the table array with lo/hi splits, chains only --------------------


def _model_order(keys: list[int], initial: int) -> list[int] | None:
    """A direct table simulation of putVal/resize for chain bins; None if a tree would form."""
    cap = initial
    threshold = cap * 3 // 4
    table: list[list[int]] = [[] for _ in range(cap)]
    size = 0

    def resize() -> None:
        nonlocal table, cap, threshold
        old_cap = cap
        cap *= 2
        threshold = cap * 3 // 4
        new: list[list[int]] = [[] for _ in range(cap)]
        for j, chain in enumerate(table):
            new[j] = [k for k in chain if not spread(k) & old_cap]
            new[j + old_cap] = [k for k in chain if spread(k) & old_cap]
        table = new

    for k in keys:
        h = spread(k)
        chain = table[h & (cap - 1)]
        if k in chain:
            continue
        chain.append(k)
        if len(chain) >= 9:
            if cap >= 64:
                return None
            resize()
        size += 1
        if size > threshold:
            resize()
    return [k for chain in table for k in chain]


_crowded_ints = st.lists(
    st.one_of(
        st.integers(0, 40).map(lambda i: i * 16),  # one bucket of 16 slots
        st.integers(0, 40).map(lambda i: i * 32 + 5),
        st.integers(-(2**31), 2**31 - 1),
    ),
    max_size=80,
)


@settings(max_examples=300, deadline=None)
@given(_crowded_ints, st.sampled_from([16, 32, 64]))
def test_hash_order_matches_table_model(keys: list[int], initial: int) -> None:
    expected = _model_order(keys, initial)
    if expected is None:
        return  # a tree bin: covered by the JDK vectors
    assert hash_order(keys, lambda k: k, initial) == expected
    m = JavaHashMap(lambda k: k, initial)
    for k in keys:
        m.add(k)
    assert list(m) == expected


@settings(max_examples=200, deadline=None)
@given(st.lists(st.text(alphabet="AaBb", min_size=1, max_size=6), max_size=60))
def test_fast_path_equals_full_replay(keys: list[str]) -> None:
    # hash_order skips the replay when no bin can crowd; both must agree everywhere
    for initial in (None, presized_capacity(len(keys))):
        m = JavaHashMap(string_hash, initial)
        for k in keys:
            m.add(k)
        assert hash_order(keys, string_hash, initial) == list(m)


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.integers(0, 200).map(lambda i: i * 64), min_size=1, max_size=40),
    st.data(),
)
def test_removals_keep_every_key_once(keys: list[int], data: st.DataObject) -> None:
    m = JavaHashMap(lambda k: k, 64)
    for k in keys:
        m.add(k)
    gone = data.draw(st.lists(st.sampled_from(keys), max_size=len(keys)))
    for k in gone:
        m.discard(k, movable=data.draw(st.booleans()))
    assert sorted(m) == sorted(set(keys) - set(gone))
    assert len(m) == len(set(keys) - set(gone))


# HashMap<Integer, ...>.computeIfAbsent on JDK 17 (printed by a throwaway Java program): a new key
# goes to the head of its bin, and the table grows before an insertion finding size > threshold.
_COMPUTE_IF_ABSENT = [
    ((4, 20), [20, 4]),
    ((20, 4, 36), [36, 4, 20]),
    ((1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 17), [17, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12]),
    (
        (1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 17),
        [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 17],
    ),
    ((0, 16, 32, 48, 64, 80, 96, 112, 128, 144), [128, 96, 64, 32, 0, 144, 112, 80, 48, 16]),
    ((0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 16), [16, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11]),
    # a call for a present key still grows a table it finds over its threshold
    ((0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 16, 0), [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 16]),
    (
        (5, 21, 37, 53, 69, 85, 101, 117, 133, 149, 165, 181),
        [165, 133, 101, 69, 37, 5, 181, 149, 117, 85, 53, 21],
    ),
]


@pytest.mark.parametrize(("keys", "java_order"), _COMPUTE_IF_ABSENT)
def test_compute_if_absent_matches_jdk17(keys: tuple[int, ...], java_order: list[int]) -> None:
    m: JavaHashMap[int] = JavaHashMap(lambda k: k)
    for i, k in enumerate(keys):
        assert m.compute_if_absent(k) == (k not in keys[:i])
    assert list(m) == java_order
