"""Java hashing and ordering rules (``protocol/java_hashing.py``, ``java_hash_order.py``,
``java_capacity.py``, ``java_strings.py``) against known Java values."""

from __future__ import annotations

import pytest

from protocol.connect import ConnectorTaskId
from protocol.java_capacity import grown_capacity, presized_capacity
from protocol.java_hash_order import hash_order
from protocol.java_hashing import spread, string_hash, task_id_hash
from protocol.java_strings import java_sorted_strings

GRINNING_FACE = "\U0001f600"  # outside the BMP: UTF-16 surrogates D83D DE00


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("", 0),
        ("hello", 99162322),  # the textbook Java value
        ("Aa", 2112),  # "Aa" and "BB" collide in Java
        ("BB", 2112),
        ("polygenelubricants", -(2**31)),  # wraps to Integer.MIN_VALUE
        ("connector1", -775645820),
        ("connector3", -775645818),
        (GRINNING_FACE, 0xD83D * 31 + 0xDE00),  # two UTF-16 code units, not one code point
        ("a" + GRINNING_FACE + "b", 57849694),
    ],
)
def test_string_hash_matches_java(text: str, expected: int) -> None:
    assert string_hash(text) == expected
    assert string_hash(text) == expected  # second call goes through the cache


def test_task_id_hash_is_31_times_connector_plus_task() -> None:
    def int32(x: int) -> int:
        return (x + 2**31) % 2**32 - 2**31

    assert task_id_hash("connector1", 3) == int32(-775645820 * 31 + 3) == 1724783359
    assert task_id_hash("polygenelubricants", 1) == int32(-(2**31) * 31 + 1) == -(2**31) + 1
    assert task_id_hash("", 7) == 7


def test_spread_mixes_high_bits() -> None:
    assert spread(0x12345678) == 0x12345678 ^ 0x1234
    assert spread(-1) == 0xFFFFFFFF ^ 0xFFFF


def test_hash_set_order_connector1_connector3() -> None:
    # IncrementalCooperativeConnectProtocolTest: Kafka's tests rely on {connector1, connector3}
    # iterating in this order.
    for insertion in (["connector1", "connector3"], ["connector3", "connector1"]):
        assert hash_order(insertion, string_hash, presized_capacity(2)) == [
            "connector1",
            "connector3",
        ]


def test_hash_order_twenty_connectors_golden() -> None:
    # connect_encodings.json a07: new HashSet<>(conn-0..conn-19) iteration order (capacity 32).
    names = [f"conn-{i}" for i in range(20)]
    assert presized_capacity(len(names)) == 32
    assert hash_order(names, string_hash, presized_capacity(len(names))) == [
        "conn-9", "conn-8", "conn-7", "conn-6", "conn-5", "conn-4", "conn-3", "conn-2",
        "conn-1", "conn-0", "conn-13", "conn-12", "conn-11", "conn-10", "conn-17", "conn-16",
        "conn-15", "conn-14", "conn-19", "conn-18",
    ]  # fmt: skip


def test_hash_order_keeps_insertion_order_within_a_bucket() -> None:
    # "Aa" and "BB" share a hash, hence a bucket: insertion order decides.
    assert hash_order(["Aa", "BB"], string_hash) == ["Aa", "BB"]
    assert hash_order(["BB", "Aa"], string_hash) == ["BB", "Aa"]
    assert hash_order(["BB", "Aa", "BB"], string_hash) == ["BB", "Aa"]  # duplicates ignored


def test_task_id_hash_set_order() -> None:
    # IncrementalCooperativeAssignor (a HashSet of ConnectorTaskId): Kafka revokes
    # [connector1-3, connector1-0] for a deleted connector1.
    ids = [ConnectorTaskId("connector1", 0), ConnectorTaskId("connector1", 3)]
    assert hash_order(ids, lambda t: task_id_hash(*t)) == [ids[1], ids[0]]


@pytest.mark.parametrize(
    ("size", "expected"),
    [(0, 16), (1, 16), (11, 16), (12, 32), (23, 32), (24, 64), (48, 128), (100, 256)],
)
def test_presized_capacity(size: int, expected: int) -> None:
    # new HashSet<>(c): tableSizeFor(max((int)(n / .75f) + 1, 16)) — 32 already at n = 12.
    assert presized_capacity(size) == expected


@pytest.mark.parametrize(
    ("size", "expected"),
    [(0, 16), (12, 16), (13, 32), (24, 32), (25, 64), (48, 64), (49, 128)],
)
def test_grown_capacity(size: int, expected: int) -> None:
    # A map grown one put at a time doubles when size exceeds 0.75 * capacity.
    assert grown_capacity(size) == expected


def test_java_compare_order_uses_utf16_code_units() -> None:
    # Code-point order puts U+FFFF first; Java compares UTF-16 units, and the surrogate 0xD83D
    # of U+1F600 sorts below 0xFFFF.
    assert sorted(["\uffff", GRINNING_FACE]) == ["\uffff", GRINNING_FACE]
    assert java_sorted_strings(["\uffff", GRINNING_FACE]) == [GRINNING_FACE, "\uffff"]
    assert java_sorted_strings(["b", "a", "B"]) == ["B", "a", "b"]
    assert java_sorted_strings(["ab", "a", ""]) == ["", "a", "ab"]


def test_java_utf8_cuts_malformed_input_as_java() -> None:
    """``new String(bytes, UTF_8)`` of OpenJDK 17: one U+FFFD per malformed unit as Java cuts
    them (Kafka's differential test found ``ED A9`` read as one unit; Python's
    ``errors="replace"`` makes two)."""
    from protocol.java_strings import java_utf8

    assert java_utf8("é中😀".encode()) == "é中😀"
    assert java_utf8(b"\xed\xa9\xe4\xb8\xad") == "\ufffd中"  # Python "replace": two U+FFFD
    assert java_utf8(b"\xed\xa0\x80a") == "\ufffda"  # an encoded surrogate: one unit
    assert java_utf8(b"ab\xe4\xb8") == "ab\ufffd"  # truncated at the end: one unit
    assert java_utf8(b"\xe0\x80\x80") == "\ufffd\ufffd\ufffd"  # overlong: the lead alone
    assert java_utf8(b"\xf0\x9f\x98") == "\ufffd"  # a 4-byte sequence cut short, then stop
    assert java_utf8(b"\xf5\x80\x80\x80") == "\ufffd" * 4
    assert java_utf8(b"\xc3(") == "\ufffd("
