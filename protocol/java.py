"""Java ordering rules that leak into Kafka's observable behaviour.

Kafka's Connect and Streams code keeps members, connectors and tasks in ``java.util.HashMap`` /
``HashSet`` collections, so the order in which it walks them — and therefore which worker keeps
an extra task, or the byte order of connector entries in an assignment — follows Java's
hashing. groupsim reproduces that order here, once, so every caller agrees.

Facts used (OpenJDK 17, ``java.lang.String``, ``java.util.HashMap``, ``java.util.HashSet``):

* ``String.hashCode`` is ``h = 31*h + c`` over UTF-16 code units, in wrapping int32.
* ``HashMap.hash`` spreads it: ``h ^ (h >>> 16)``; the bucket is ``hash & (capacity - 1)``.
* Iteration walks the table bucket by bucket and, inside a bucket, the bin's ``next`` chain.
* ``putVal`` appends a new key at the end of its bin's chain. When that makes the chain 9
  long (``TREEIFY_THRESHOLD`` 8) ``treeifyBin`` runs: below 64 slots
  (``MIN_TREEIFY_CAPACITY``) it *doubles the table instead*; at 64+ it turns the bin into a
  red-black tree (``TreeNode``). Then, if ``++size > threshold``, the table doubles again.
* ``resize`` splits every bin into a "lo" and a "hi" chain, each keeping its relative order. A
  tree bin's half of 6 or fewer nodes becomes a plain chain again (``untreeify``); a bigger half
  whose sibling half is not empty is re-treeified from its chain (``treeify``).
* A tree bin keeps a ``next`` chain too, and that chain is what iteration walks. ``treeify``
  builds the tree by inserting the chain's nodes in order, then moves the tree's root to the
  front of the chain (``moveRootToFront``). ``putTreeVal`` links the new node into the chain
  right *after its tree parent*, rebalances, and moves the (possibly new) root to the front.
  ``removeTreeNode`` unlinks the node from the chain; a tree that looks too small (root lacks a
  child, or its left child lacks a left child) becomes a plain chain, otherwise the tree is
  rebalanced and its root moved to the front. Tree descent compares the spread hashes as
  signed ints, then ``compareTo`` (String, ConnectorTaskId, TaskId and UUID are
  ``Comparable``). Keys that tie on both (or are not ``Comparable``, e.g. ``TopicPartition``)
  fall to ``tieBreakOrder``'s ``System.identityHashCode``, which differs from run to run: Java
  has no defined order there, and groupsim deterministically sends the new key left.
* A default map starts at 16 slots (threshold 12) and doubles its threshold with its table;
  ``new HashMap<>(n)`` starts at ``tableSizeFor(n)`` slots with threshold ``0.75 * slots``;
  ``new HashSet<>(collection)`` is ``new HashMap<>(max((int)(n / .75f) + 1, 16))`` filled in
  the collection's order; ``new HashMap<>(map)`` / ``putAll`` on an empty map presizes to
  ``tableSizeFor((int)(n / .75f + 1))`` (no floor of 16).
* ``String.compareTo`` compares UTF-16 code units, which equals comparing the UTF-16-BE bytes.
"""

from __future__ import annotations

import functools
import struct
from collections import Counter
from collections.abc import Callable, Hashable, Iterable, Iterator
from typing import Any, Generic, TypeVar, cast

__all__ = [
    "java_utf8",
    "string_hash",
    "task_id_hash",
    "topic_partition_hash",
    "uuid_hash",
    "spread",
    "grown_capacity",
    "presized_capacity",
    "table_size_for",
    "hash_order",
    "chain_order",
    "JavaHashMap",
    "java_string_key",
    "java_sorted_strings",
]

T = TypeVar("T", bound=Hashable)

_MASK32 = 0xFFFFFFFF
_MASK64 = (1 << 64) - 1
#: ``HashMap.TREEIFY_THRESHOLD``: a chain reaching this many + 1 entries asks for a tree.
TREEIFY_THRESHOLD = 8
#: ``HashMap.UNTREEIFY_THRESHOLD``: a split tree half this small becomes a chain again.
UNTREEIFY_THRESHOLD = 6
#: ``HashMap.MIN_TREEIFY_CAPACITY``: below this many slots a crowded bin resizes the table.
MIN_TREEIFY_CAPACITY = 64
_MAXIMUM_CAPACITY = 1 << 30


def _to_int32(value: int) -> int:
    value &= _MASK32
    return value - 0x1_0000_0000 if value & 0x8000_0000 else value


def _float32(value: float) -> float:
    """``value`` rounded to a Java ``float``."""
    return float(struct.unpack("<f", struct.pack("<f", value))[0])


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
    result = _to_int32(h)
    if len(_hash_cache) < 1_000_000:
        _hash_cache[text] = result
    return result


#: String → its :func:`spread` ``String.hashCode``, for :func:`hash_order` (bounded as
#: ``_hash_cache``).
_spread_cache: dict[str, int] = {}


def _string_spread(text: str) -> int:
    """``HashMap.hash`` of ``text`` (:func:`spread` of :func:`string_hash`), memoized."""
    found = _spread_cache.get(text)
    if found is None:
        u = string_hash(text) & _MASK32
        found = u ^ (u >> 16)
        if len(_spread_cache) < 1_000_000:
            _spread_cache[text] = found
    return found


def task_id_hash(connector: str, task: int) -> int:
    """Java ``ConnectorTaskId.hashCode()``: ``31 * connector.hashCode() + task`` (int32)."""
    return _to_int32(31 * string_hash(connector) + task)


def topic_partition_hash(topic: str, partition: int) -> int:
    """Java ``TopicPartition.hashCode()``: ``31 * (31 + partition) + topic.hashCode()`` (int32;
    Kafka's ``org.apache.kafka.common.TopicPartition``)."""
    return _to_int32(31 * (31 + partition) + string_hash(topic))


def uuid_hash(most: int, least: int) -> int:
    """Java ``UUID.hashCode()`` of the UUID with these 64-bit halves (signed or not).

    ``hilo = most ^ least; (int)(hilo >> 32) ^ (int) hilo``.
    """
    hilo = (most ^ least) & _MASK64
    return _to_int32((hilo >> 32) ^ hilo)


def spread(h: int) -> int:
    """``HashMap.hash``: ``h ^ (h >>> 16)`` on the unsigned 32-bit pattern of ``h``."""
    u = h & _MASK32
    return u ^ (u >> 16)


@functools.lru_cache(maxsize=4096)  # pure and called per member: memoized
def table_size_for(cap: int) -> int:
    """``HashMap.tableSizeFor``: the smallest power of two >= ``cap`` (at least 1)."""
    size = 1
    while size < cap and size < _MAXIMUM_CAPACITY:
        size *= 2
    return size


def grown_capacity(size: int) -> int:
    """Table capacity of a default ``HashMap``/``HashSet`` after ``size`` single insertions.

    Load-factor growth only; crowded bins can double the table earlier (see
    :class:`JavaHashMap`).
    """
    capacity = 16
    while size > capacity * 3 // 4:
        capacity *= 2
    return capacity


@functools.lru_cache(maxsize=4096)
@functools.lru_cache(maxsize=4096)  # pure and called per member: memoized
def presized_capacity(size: int) -> int:
    """Initial table capacity of ``new HashSet<>(collection)`` for ``size`` elements.

    ``new HashMap<>(Math.max((int) (size / .75f) + 1, 16))`` — ``size / .75f`` in ``float``.
    """
    wanted = max(int(_float32(_float32(float(size)) / _float32(0.75))) + 1, 16)
    return table_size_for(wanted)


@functools.lru_cache(maxsize=4096)  # pure and called per member: memoized
def _threshold(capacity: int) -> int:
    """``resize``'s threshold of a fresh table: ``(int)(capacity * 0.75f)``."""
    return int(_float32(capacity * 0.75))


class _TreeNode:
    """One ``HashMap.TreeNode``: red-black links; chain order lives in the bin's list."""

    __slots__ = ("key", "hash", "parent", "left", "right", "red")

    def __init__(self, key: Any, h: int) -> None:
        self.key = key
        self.hash = h  # signed int32 spread hash (tree descent compares it as an int)
        self.parent: _TreeNode | None = None
        self.left: _TreeNode | None = None
        self.right: _TreeNode | None = None
        self.red = False


class _Bin:
    """One table slot: the ``next`` chain in ``chain`` (keys) and, for a tree bin, its nodes."""

    __slots__ = ("chain", "nodes")

    def __init__(self, chain: list[Any]) -> None:
        self.chain = chain
        self.nodes: dict[Any, _TreeNode] | None = None  # set while the bin is a tree


def _rotate_left(root: _TreeNode, p: _TreeNode) -> _TreeNode:
    r = p.right
    if r is not None:
        rl = p.right = r.left
        if rl is not None:
            rl.parent = p
        pp = r.parent = p.parent
        if pp is None:
            root = r
            r.red = False
        elif pp.left is p:
            pp.left = r
        else:
            pp.right = r
        r.left = p
        p.parent = r
    return root


def _rotate_right(root: _TreeNode, p: _TreeNode) -> _TreeNode:
    left = p.left
    if left is not None:
        lr = p.left = left.right
        if lr is not None:
            lr.parent = p
        pp = left.parent = p.parent
        if pp is None:
            root = left
            left.red = False
        elif pp.right is p:
            pp.right = left
        else:
            pp.left = left
        left.right = p
        p.parent = left
    return root


def _balance_insertion(root: _TreeNode, x: _TreeNode) -> _TreeNode:
    """``TreeNode.balanceInsertion`` (CLR insertion fix-up as the JDK writes it)."""
    x.red = True
    while True:
        xp = x.parent
        if xp is None:
            x.red = False
            return x
        xpp = xp.parent
        if not xp.red or xpp is None:
            return root
        xppl = xpp.left
        if xp is xppl:
            xppr = xpp.right
            if xppr is not None and xppr.red:
                xppr.red = False
                xp.red = False
                xpp.red = True
                x = xpp
            else:
                if x is xp.right:
                    x = xp
                    root = _rotate_left(root, x)
                    xp = x.parent
                    xpp = None if xp is None else xp.parent
                if xp is not None:
                    xp.red = False
                    if xpp is not None:
                        xpp.red = True
                        root = _rotate_right(root, xpp)
        else:
            if xppl is not None and xppl.red:
                xppl.red = False
                xp.red = False
                xpp.red = True
                x = xpp
            else:
                if x is xp.left:
                    x = xp
                    root = _rotate_right(root, x)
                    xp = x.parent
                    xpp = None if xp is None else xp.parent
                if xp is not None:
                    xp.red = False
                    if xpp is not None:
                        xpp.red = True
                        root = _rotate_left(root, xpp)


def _balance_deletion(root: _TreeNode, x: _TreeNode | None) -> _TreeNode:
    """``TreeNode.balanceDeletion``."""
    while True:
        if x is None or x is root:
            return root
        xp = x.parent
        if xp is None:
            x.red = False
            return x
        if x.red:
            x.red = False
            return root
        xpl = xp.left
        if xpl is x:
            xpr = xp.right
            if xpr is not None and xpr.red:
                xpr.red = False
                xp.red = True
                root = _rotate_left(root, xp)
                xp = x.parent
                xpr = None if xp is None else xp.right
            if xpr is None:
                x = xp
            else:
                sl, sr = xpr.left, xpr.right
                if (sr is None or not sr.red) and (sl is None or not sl.red):
                    xpr.red = True
                    x = xp
                else:
                    if sr is None or not sr.red:
                        if sl is not None:
                            sl.red = False
                        xpr.red = True
                        root = _rotate_right(root, xpr)
                        xp = x.parent
                        xpr = None if xp is None else xp.right
                    if xpr is not None:
                        xpr.red = False if xp is None else xp.red
                        sr = xpr.right
                        if sr is not None:
                            sr.red = False
                    if xp is not None:
                        xp.red = False
                        root = _rotate_left(root, xp)
                    x = root
        else:
            if xpl is not None and xpl.red:
                xpl.red = False
                xp.red = True
                root = _rotate_right(root, xp)
                xp = x.parent
                xpl = None if xp is None else xp.left
            if xpl is None:
                x = xp
            else:
                sl, sr = xpl.left, xpl.right
                if (sl is None or not sl.red) and (sr is None or not sr.red):
                    xpl.red = True
                    x = xp
                else:
                    if sl is None or not sl.red:
                        if sr is not None:
                            sr.red = False
                        xpl.red = True
                        root = _rotate_left(root, xpl)
                        xp = x.parent
                        xpl = None if xp is None else xp.left
                    if xpl is not None:
                        xpl.red = False if xp is None else xp.red
                        sl = xpl.left
                        if sl is not None:
                            sl.red = False
                    if xp is not None:
                        xp.red = False
                        root = _rotate_right(root, xp)
                    x = root


class JavaHashMap(Generic[T]):
    """The key order of one ``java.util.HashMap`` (or ``HashSet``) through its whole history.

    Replays ``putVal`` / ``resize`` / ``treeifyBin`` / ``removeNode`` of OpenJDK 17 on keys only
    (values never affect order), so iteration order is exact for every size and collision
    pattern, including crowded bins that resize a small table and tree bins in a large one.

    Args:
        hash_fn: the key's Java ``hashCode()`` (e.g. :func:`string_hash`).
        initial_capacity: as ``new HashMap<>(initialCapacity)``; ``None`` = ``new HashMap<>()``
            (16 slots on first put).
        compare_key: a sort key equal to the key's Java ``compareTo`` order, used only inside
            tree bins (9+ colliding keys in 64+ slots) between keys of equal hash. Default:
            :func:`java_string_key` for ``str`` keys, Python's own order for other keys (right
            for ints and int tuples such as ``TaskId``). Keys it cannot order, or that it ties,
            go left (Java: ``tieBreakOrder``, identity hashes, no defined order).

    Iterating yields the keys in Java's iteration order.
    """

    __slots__ = ("_hash_fn", "_compare_key", "_table", "_threshold", "_size", "_bin_of")

    def __init__(
        self,
        hash_fn: Callable[[T], int],
        initial_capacity: int | None = None,
        compare_key: Callable[[T], Any] | None = None,
    ) -> None:
        self._hash_fn = hash_fn
        self._compare_key = compare_key
        self._table: list[_Bin | None] | None = None
        # as in Java: before the first put, ``threshold`` holds the initial table size
        self._threshold = 0 if initial_capacity is None else table_size_for(initial_capacity)
        self._size = 0
        self._bin_of: dict[T, int] = {}  # key -> its spread hash (unsigned)

    @classmethod
    def copy_of(
        cls,
        keys: Iterable[T],
        hash_fn: Callable[[T], int],
        compare_key: Callable[[T], Any] | None = None,
    ) -> JavaHashMap[T]:
        """``new HashSet<>(collection)`` of ``keys`` (an ordered collection, duplicates kept)."""
        items = list(keys)
        m = cls(hash_fn, presized_capacity(len(items)), compare_key)
        for k in items:
            m.add(k)
        return m

    @classmethod
    def copy_of_map(
        cls,
        keys: Iterable[T],
        hash_fn: Callable[[T], int],
        compare_key: Callable[[T], Any] | None = None,
    ) -> JavaHashMap[T]:
        """``new HashMap<>(map)`` / ``new HashSet<>()`` + ``putAll``: the source's keys in order."""
        items = list(dict.fromkeys(keys))
        m = cls(hash_fn, None, compare_key)
        if items:
            ft = _float32(_float32(float(len(items))) / _float32(0.75)) + 1.0
            t = int(_float32(ft))
            if t > m._threshold:
                m._threshold = table_size_for(t)
        for k in items:
            m.add(k)
        return m

    def __len__(self) -> int:
        return self._size

    def __contains__(self, key: object) -> bool:
        return key in self._bin_of

    @property
    def capacity(self) -> int:
        """Current table length (0 before the first put)."""
        return 0 if self._table is None else len(self._table)

    def __iter__(self) -> Iterator[T]:
        if self._table is None:
            return
        for b in self._table:
            if b is not None:
                yield from b.chain

    # -- insertion ----------------------------------------------------------------------
    def add(self, key: T) -> bool:
        """``put(key, v)`` / ``HashSet.add``: False (no change at all) if already present."""
        if key in self._bin_of:
            return False
        h = spread(self._hash_fn(key))
        self._bin_of[key] = h
        if self._table is None:
            self._resize()
        tab = self._table
        assert tab is not None
        i = h & (len(tab) - 1)
        b = tab[i]
        if b is None:
            tab[i] = _Bin([key])
        elif b.nodes is not None:
            self._put_tree(b, key, h)
        else:
            b.chain.append(key)
            if len(b.chain) > TREEIFY_THRESHOLD:
                self._treeify_bin(i)
        self._size += 1
        if self._size > self._threshold:
            self._resize()
        return True

    def compute_if_absent(self, key: T) -> bool:
        """``computeIfAbsent(key, k -> value)`` (non-null value): False if already present.

        Differs from :meth:`add` in two ways that change iteration order (OpenJDK 17
        ``HashMap.computeIfAbsent``): a new key goes to the *head* of its bin's chain, not the
        tail, and the table grows at the *start* of any call that finds ``size > threshold``
        (even one whose key is present), not after the insertion that crosses it. A chain that
        already held 7+ keys is treeified (or the table doubled) after the insertion, as with
        ``put``.
        """
        if self._table is None or self._size > self._threshold:
            self._resize()  # also when the key turns out to be present
        if key in self._bin_of:
            return False
        h = spread(self._hash_fn(key))
        self._bin_of[key] = h
        tab = self._table
        assert tab is not None
        i = h & (len(tab) - 1)
        b = tab[i]
        if b is None:
            tab[i] = _Bin([key])
        elif b.nodes is not None:
            self._put_tree(b, key, h)
        else:
            bin_count = len(b.chain)
            b.chain.insert(0, key)
            if bin_count >= TREEIFY_THRESHOLD - 1:
                self._treeify_bin(i)
        self._size += 1
        return True

    def _resize(self) -> None:
        old = self._table
        old_cap = 0 if old is None else len(old)
        old_thr = self._threshold
        new_thr = 0
        if old_cap > 0:
            if old_cap >= _MAXIMUM_CAPACITY:
                self._threshold = 2**31 - 1
                return
            new_cap = old_cap << 1
            if new_cap < _MAXIMUM_CAPACITY and old_cap >= 16:
                new_thr = old_thr << 1
        elif old_thr > 0:
            new_cap = old_thr
        else:
            new_cap, new_thr = 16, 12
        if new_thr == 0:
            new_thr = _threshold(new_cap) if new_cap < _MAXIMUM_CAPACITY else 2**31 - 1
        self._threshold = new_thr
        tab: list[_Bin | None] = [None] * new_cap
        self._table = tab
        if old is None:
            return
        bin_of = self._bin_of
        for j, b in enumerate(old):
            if b is None:
                continue
            if len(b.chain) == 1:  # a lone node moves as it is (even a lone TreeNode)
                tab[bin_of[b.chain[0]] & (new_cap - 1)] = b
                continue
            lo = [k for k in b.chain if not bin_of[k] & old_cap]
            hi = [k for k in b.chain if bin_of[k] & old_cap]
            if b.nodes is None:
                if lo:
                    tab[j] = _Bin(lo)
                if hi:
                    tab[j + old_cap] = _Bin(hi)
                continue
            # TreeNode.split
            for half, index, other in ((lo, j, hi), (hi, j + old_cap, lo)):
                if not half:
                    continue
                if len(half) <= UNTREEIFY_THRESHOLD:
                    tab[index] = _Bin(half)
                elif not other:
                    tab[index] = b  # the whole tree moves unchanged
                else:
                    nb = _Bin(half)
                    tab[index] = nb
                    self._treeify(nb)

    def _treeify_bin(self, index: int) -> None:
        tab = self._table
        assert tab is not None
        if len(tab) < MIN_TREEIFY_CAPACITY:
            self._resize()
            return
        b = tab[index]
        assert b is not None
        self._treeify(b)

    def _compare(self, k: T, pk: T) -> int:
        """``compareComparables`` of two keys with equal hashes."""
        ck = self._compare_key
        a: Any
        b: Any
        if ck is not None:
            a, b = ck(k), ck(pk)
        elif isinstance(k, str) and isinstance(pk, str):
            a, b = java_string_key(k), java_string_key(pk)
        else:
            a, b = k, pk
        try:
            if a < b:
                return -1
            if a > b:
                return 1
        except TypeError:
            pass
        return -1  # tieBreakOrder: identity hashes in Java (undefined); groupsim goes left

    def _dir(self, x: _TreeNode, p: _TreeNode) -> int:
        if p.hash > x.hash:
            return -1
        if p.hash < x.hash:
            return 1
        return self._compare(x.key, p.key)

    def _treeify(self, b: _Bin) -> None:
        """``TreeNode.treeify`` on the bin's chain, then ``moveRootToFront``."""
        nodes = {k: _TreeNode(k, _to_int32(self._bin_of[k])) for k in b.chain}
        root: _TreeNode | None = None
        for k in b.chain:
            x = nodes[k]
            if root is None:
                root = x
                continue
            p = root
            while True:
                d = self._dir(x, p)
                xp = p
                nxt = p.left if d <= 0 else p.right
                if nxt is None:
                    x.parent = xp
                    if d <= 0:
                        xp.left = x
                    else:
                        xp.right = x
                    root = _balance_insertion(root, x)
                    break
                p = nxt
        b.nodes = nodes
        assert root is not None
        _move_root_to_front(b, root)

    def _put_tree(self, b: _Bin, key: T, h: int) -> None:
        """``TreeNode.putTreeVal`` for a key not yet present."""
        nodes = b.nodes
        assert nodes is not None
        x = _TreeNode(key, _to_int32(h))
        root = _root_of(nodes[b.chain[0]])
        p = root
        while True:
            d = self._dir(x, p)
            xp = p
            nxt = p.left if d <= 0 else p.right
            if nxt is None:
                if d <= 0:
                    xp.left = x
                else:
                    xp.right = x
                x.parent = xp
                b.chain.insert(b.chain.index(xp.key) + 1, key)
                nodes[key] = x
                _move_root_to_front(b, _balance_insertion(root, x))
                return
            p = nxt

    # -- removal ------------------------------------------------------------------------
    def discard(self, key: T, movable: bool = True) -> bool:
        """``remove(key)`` (``movable`` True) or an iterator's ``remove()`` (``movable`` False).

        Returns whether the key was present.
        """
        h = self._bin_of.pop(key, None)
        if h is None:
            return False
        tab = self._table
        assert tab is not None
        i = h & (len(tab) - 1)
        b = tab[i]
        assert b is not None
        self._size -= 1
        if b.nodes is None:
            b.chain.remove(key)
            if not b.chain:
                tab[i] = None
            return True
        self._remove_tree_node(tab, i, b, key, movable)
        return True

    def _remove_tree_node(
        self, tab: list[_Bin | None], index: int, b: _Bin, key: T, movable: bool
    ) -> None:
        """``TreeNode.removeTreeNode``."""
        nodes = b.nodes
        assert nodes is not None
        p = nodes.pop(key)
        first_root = nodes.get(b.chain[0]) if b.chain[0] != key else p
        b.chain.remove(key)
        if not b.chain:
            tab[index] = None
            return
        # ``root = first`` (the old chain head), climbed to the real root if needed
        root: _TreeNode = first_root if first_root is not None else p
        if root.parent is not None:
            root = _root_of(root)
        if movable and (root.right is None or root.left is None or root.left.left is None):
            b.nodes = None  # untreeify: the chain stays as it is
            return
        pl, pr = p.left, p.right
        if pl is not None and pr is not None:
            s = pr
            while s.left is not None:
                s = s.left
            s.red, p.red = p.red, s.red
            sr = s.right
            pp = p.parent
            if s is pr:
                p.parent = s
                s.right = p
            else:
                sp = s.parent
                p.parent = sp
                if sp is not None:
                    if s is sp.left:
                        sp.left = p
                    else:
                        sp.right = p
                s.right = pr
                pr.parent = s
            p.left = None
            p.right = sr
            if sr is not None:
                sr.parent = p
            s.left = pl
            pl.parent = s
            s.parent = pp
            if pp is None:
                root = s
            elif p is pp.left:
                pp.left = s
            else:
                pp.right = s
            replacement = sr if sr is not None else p
        elif pl is not None:
            replacement = pl
        elif pr is not None:
            replacement = pr
        else:
            replacement = p
        if replacement is not p:
            pp = replacement.parent = p.parent
            if pp is None:
                root = replacement
                replacement.red = False
            elif p is pp.left:
                pp.left = replacement
            else:
                pp.right = replacement
            p.left = p.right = p.parent = None
        r = root if p.red else _balance_deletion(root, replacement)
        if replacement is p:
            pp = p.parent
            p.parent = None
            if pp is not None:
                if p is pp.left:
                    pp.left = None
                elif p is pp.right:
                    pp.right = None
        if movable:
            _move_root_to_front(b, r)


def _root_of(node: _TreeNode) -> _TreeNode:
    while node.parent is not None:
        node = node.parent
    return node


def _move_root_to_front(b: _Bin, root: _TreeNode) -> None:
    """``TreeNode.moveRootToFront``: unlink the root from the chain and put it first."""
    if b.chain[0] != root.key:
        b.chain.remove(root.key)
        b.chain.insert(0, root.key)


def hash_order(
    keys: Iterable[T],
    hash_fn: Callable[[T], int],
    capacity: int | None = None,
    compare_key: Callable[[T], Any] | None = None,
) -> list[T]:
    """Order in which a Java ``HashMap``/``HashSet`` filled by ``put`` of ``keys`` iterates them.

    Args:
        keys: the keys in insertion order; later duplicates are ignored (as ``put`` would).
        hash_fn: the key's Java ``hashCode`` (e.g. :func:`string_hash`).
        capacity: the initial capacity, as ``new HashMap<>(capacity)``; by default that of
            ``new HashMap<>()`` (16). Use :func:`presized_capacity` for ``new HashSet<>(list)``.
        compare_key: see :class:`JavaHashMap` (only tree bins use it).

    Returns:
        The distinct keys in Java iteration order. Crowded bins (9+ keys) resize a table below
        64 slots or become tree bins at 64+, exactly as :class:`JavaHashMap` replays.
    """
    unique = list(dict.fromkeys(keys))
    spreads: list[int]
    if hash_fn is string_hash:  # member ids and topic names: spreads looked up in C
        names = cast("list[str]", unique)
        known = list(map(_spread_cache.get, names))
        spreads = list(map(_string_spread, names)) if None in known else cast("list[int]", known)
    else:
        spreads = []
        for k in unique:
            u = hash_fn(k) & _MASK32
            spreads.append(u ^ (u >> 16))
    order = chain_order(spreads, capacity)
    if order is None:  # a crowded bin: replay the whole table
        m = JavaHashMap(hash_fn, capacity if capacity is not None else 16, compare_key)
        for k in unique:
            m.add(k)
        return list(m)
    return [unique[i] for i in order]


def chain_order(spreads: list[int], capacity: int | None = None) -> list[int] | None:
    """Iteration order (as indices) of distinct keys put in order, if no bin ever crowds.

    Args:
        spreads: the distinct keys' spread hashes (:func:`spread`), in insertion order.
        capacity: the initial capacity as in :func:`hash_order`.

    Returns:
        Indices into ``spreads`` in iteration order, or ``None`` if some chain would reach 9
        keys (then only a full replay, :class:`JavaHashMap`, gives the order).
    """
    n = len(spreads)
    cap = 16 if capacity is None else table_size_for(capacity)
    if n >= _VECTOR_KEYS:
        return _chain_order_vector(spreads, cap)
    # While no chain reaches 9 keys, only the load factor resizes and every bin is a chain in
    # insertion order. A table of ``cap`` slots receives the keys up to the put that crosses
    # its threshold (``putVal`` checks the bin before it resizes); a bin of that table reaches
    # 9 keys during those puts exactly when 9 of those keys share it (a crowded bin of a
    # later, finer table is also crowded in every coarser one before it).
    while True:
        threshold = _threshold(cap)
        if n > TREEIFY_THRESHOLD:
            put = spreads if n <= threshold else spreads[: threshold + 1]
            if _crowded(put, cap - 1):
                return None
        if n <= threshold:
            break
        cap *= 2
    # sorted() is stable, so keys in one bucket keep their insertion order.
    bins = list(map((cap - 1).__and__, spreads))
    return sorted(range(n), key=bins.__getitem__)


#: From this many keys :func:`chain_order` counts bins and sorts with numpy (fewer: the
#: import and array conversion cost more than they save).
_VECTOR_KEYS = 48


def _chain_order_vector(spreads: list[int], cap: int) -> list[int] | None:
    """:func:`chain_order` from table size ``cap`` on, each table's bins counted by
    ``numpy.bincount`` and the final bins ordered by a stable ``argsort`` (the same steps as
    the ``Counter`` and ``sorted`` of the plain path, in C: a leader's member map of 1,000
    ids is counted in eight tables)."""
    import numpy as np  # imported here: small maps (and a Connect-only run) never need it

    n = len(spreads)
    keys = np.array(spreads, dtype=np.int64)
    while True:
        threshold = _threshold(cap)
        put = keys if n <= threshold else keys[: threshold + 1]
        if int(np.bincount(put & (cap - 1)).max()) > TREEIFY_THRESHOLD:
            return None
        if n <= threshold:
            break
        cap *= 2
    order: list[int] = np.argsort(keys & (cap - 1), kind="stable").tolist()
    return order


def _crowded(spreads: list[int], mask: int) -> bool:
    """True when more than ``TREEIFY_THRESHOLD`` of ``spreads`` share a bin of ``mask``."""
    if len(spreads) <= TREEIFY_THRESHOLD:
        return False
    per_bin = Counter(map(mask.__and__, spreads))  # keys per bin, counted in C
    # a bin of 9+ keys leaves 8+ keys sharing an earlier key's bin: fewer, and none crowds
    if len(spreads) - len(per_bin) < TREEIFY_THRESHOLD:
        return False
    return max(per_bin.values()) > TREEIFY_THRESHOLD


def java_string_key(text: str) -> bytes:
    """Sort key giving Java ``String.compareTo`` order (UTF-16 code units)."""
    return text.encode("utf-16-be")


def java_sorted_strings(strings: Iterable[str]) -> list[str]:
    """``strings`` sorted as Java's ``Collections.sort`` / ``TreeSet`` would sort them."""
    items = list(strings)
    if all(map(str.isascii, items)):
        return sorted(items)
    return sorted(items, key=java_string_key)


_REPLACEMENT = "\ufffd"


def _continuation(b: int) -> bool:
    return b & 0xC0 == 0x80


def _bad_second_of_four(b1: int, b2: int) -> bool:
    """The second byte of a 4-byte sequence cannot follow ``b1`` (overlong, beyond U+10FFFF or
    not a continuation byte)."""
    return (
        (b1 == 0xF0 and not 0x90 <= b2 <= 0xBF)
        or (b1 == 0xF4 and b2 & 0xF0 != 0x80)
        or not _continuation(b2)
    )


def java_utf8(raw: bytes) -> str:
    """``new String(raw, StandardCharsets.UTF_8)`` as OpenJDK 17 decodes it (what Kafka's
    generated message readers do with a STRING's bytes).

    Well-formed UTF-8 decodes as in Python. Malformed input gets U+FFFD per malformed unit as
    Java's decoder cuts them, which is not always Python's ``errors="replace"`` cut: a
    3-byte lead followed by a continuation byte that is not allowed after it (``ED A9``, a
    surrogate range) is one unit in Java, two in Python; an encoded surrogate (``ED A0 80``)
    is one unit in Java, three in Python; a truncated sequence at the end is one unit, and
    Java stops there.
    """
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        pass
    out: list[str] = []
    sp, sl = 0, len(raw)
    while sp < sl:
        b1 = raw[sp]
        sp += 1
        if b1 < 0x80:
            out.append(chr(b1))
        elif 0xC2 <= b1 <= 0xDF:  # two bytes
            if sp < sl:
                b2 = raw[sp]
                if _continuation(b2):
                    sp += 1
                    out.append(chr(((b1 & 0x1F) << 6) | (b2 & 0x3F)))
                else:
                    out.append(_REPLACEMENT)
                continue
            out.append(_REPLACEMENT)
            break
        elif 0xE0 <= b1 <= 0xEF:  # three bytes
            if sp + 1 < sl:
                b2, b3 = raw[sp], raw[sp + 1]
                bad_second = (b1 == 0xE0 and b2 & 0xE0 == 0x80) or not _continuation(b2)
                if bad_second or not _continuation(b3):
                    out.append(_REPLACEMENT)
                    sp += 0 if bad_second else 1
                    continue
                sp += 2
                c = ((b1 & 0x0F) << 12) | ((b2 & 0x3F) << 6) | (b3 & 0x3F)
                out.append(_REPLACEMENT if 0xD800 <= c <= 0xDFFF else chr(c))
                continue
            if sp < sl and ((b1 == 0xE0 and raw[sp] & 0xE0 == 0x80) or not _continuation(raw[sp])):
                out.append(_REPLACEMENT)
                continue
            out.append(_REPLACEMENT)
            break
        elif 0xF0 <= b1 <= 0xF7:  # four bytes
            if sp + 2 < sl:
                b2, b3, b4 = raw[sp], raw[sp + 1], raw[sp + 2]
                uc = ((b1 & 0x07) << 18) | ((b2 & 0x3F) << 12) | ((b3 & 0x3F) << 6) | (b4 & 0x3F)
                if (
                    _continuation(b2)
                    and _continuation(b3)
                    and _continuation(b4)
                    and 0x10000 <= uc <= 0x10FFFF
                ):
                    sp += 3
                    out.append(chr(uc))
                    continue
                out.append(_REPLACEMENT)
                if b1 > 0xF4 or _bad_second_of_four(b1, b2):
                    continue  # a unit of one byte
                sp += 1 if not _continuation(b3) else 2
                continue
            if b1 > 0xF4 or (sp < sl and _bad_second_of_four(b1, raw[sp])):
                out.append(_REPLACEMENT)
                continue
            sp += 1
            out.append(_REPLACEMENT)
            if sp < sl and not _continuation(raw[sp]):
                continue
            break
        else:
            out.append(_REPLACEMENT)
    return "".join(out)
