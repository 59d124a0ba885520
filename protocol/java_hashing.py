"""Java ``hashCode`` of the keys Kafka puts in its ``HashMap``s and ``HashSet``s.

Kafka's Connect, consumer and Streams code keeps members, connectors, tasks and partitions in
``java.util.HashMap`` / ``HashSet`` collections, so the order it walks them in follows these
hashes (the table itself: :mod:`protocol.java_hashmap`, :mod:`protocol.java_hash_order`).

Facts used (OpenJDK 17):

* ``String.hashCode`` is ``h = 31*h + c`` over UTF-16 code units, in wrapping int32.
* ``ConnectorTaskId.hashCode``, Kafka's ``TopicPartition.hashCode`` and ``UUID.hashCode`` as
  each function states.
* ``HashMap.hash`` spreads a hash: ``h ^ (h >>> 16)``; the bucket is ``hash & (capacity - 1)``.
"""

from __future__ import annotations

__all__ = [
    "to_int32",
    "string_hash",
    "task_id_hash",
    "topic_partition_hash",
    "uuid_hash",
    "spread",
]

_MASK32 = 0xFFFFFFFF
_MASK64 = (1 << 64) - 1


def to_int32(value: int) -> int:
    """The low 32 bits of ``value`` as a signed Java ``int`` (a narrowing cast)."""
    value &= _MASK32
    return value - 0x1_0000_0000 if value & 0x8000_0000 else value


_hash_cache: dict[str, int] = {}


def string_hash(text: str) -> int:
    """Java ``String.hashCode()`` of ``text`` as a signed int32.

    Follows ``java.lang.String#hashCode``: ``s[0]*31^(n-1) + ... + s[n-1]`` over UTF-16 code
    units (a character outside the BMP counts as its two surrogates).
    """
    cached = _hash_cache.get(text)
    if cached is not None:
        return cached
    h = 0
    if text.isascii():
        for ch in text:
            h = (31 * h + ord(ch)) & _MASK32
    else:
        units = text.encode("utf-16-be")
        for i in range(0, len(units), 2):
            h = (31 * h + ((units[i] << 8) | units[i + 1])) & _MASK32
    result = to_int32(h)
    if len(_hash_cache) < 1_000_000:
        _hash_cache[text] = result
    return result


def task_id_hash(connector: str, task: int) -> int:
    """Java ``ConnectorTaskId.hashCode()``: ``31 * connector.hashCode() + task`` (int32)."""
    return to_int32(31 * string_hash(connector) + task)


def topic_partition_hash(topic: str, partition: int) -> int:
    """Java ``TopicPartition.hashCode()``: ``31 * (31 + partition) + topic.hashCode()`` (int32;
    Kafka's ``org.apache.kafka.common.TopicPartition``)."""
    return to_int32(31 * (31 + partition) + string_hash(topic))


def uuid_hash(most: int, least: int) -> int:
    """Java ``UUID.hashCode()`` of the UUID with these 64-bit halves (signed or not).

    ``hilo = most ^ least; (int)(hilo >> 32) ^ (int) hilo``.
    """
    hilo = (most ^ least) & _MASK64
    return to_int32((hilo >> 32) ^ hilo)


def spread(h: int) -> int:
    """``HashMap.hash``: ``h ^ (h >>> 16)`` on the unsigned 32-bit pattern of ``h``."""
    u = h & _MASK32
    return u ^ (u >> 16)
