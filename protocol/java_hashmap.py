"""Java ``HashMap`` / ``HashSet`` iteration order through a map's whole history.

:class:`JavaHashMap` replays OpenJDK 17's ``putVal`` / ``resize`` / ``treeifyBin`` /
``removeNode`` on keys only. Facts used (``java.util.HashMap``):

* Iteration walks the table bucket by bucket and, inside a bucket, the bin's ``next`` chain.
* ``putVal`` appends a new key at the end of its bin's chain. When that makes the chain 9
  long (``TREEIFY_THRESHOLD`` 8) ``treeifyBin`` runs: below 64 slots
  (``MIN_TREEIFY_CAPACITY``) it *doubles the table instead*; at 64+ it turns the bin into a
  red-black tree (``TreeNode``, :mod:`protocol.java_tree_bins`). Then, if
  ``++size > threshold``, the table doubles again (sizes: :mod:`protocol.java_capacity`).
* ``resize`` splits every bin into a "lo" and a "hi" chain, each keeping its relative order. A
  tree bin's half of 6 or fewer nodes becomes a plain chain again (``untreeify``); a bigger half
  whose sibling half is not empty is re-treeified from its chain (``treeify``).
* ``removeTreeNode`` unlinks the node from the chain; a tree that looks too small (root lacks a
  child, or its left child lacks a left child) becomes a plain chain, otherwise the tree is
  rebalanced and its root moved to the front. Tree descent compares the spread hashes as
  signed ints, then ``compareTo`` (String, ConnectorTaskId, TaskId and UUID are
  ``Comparable``). Keys that tie on both (or are not ``Comparable``, e.g. ``TopicPartition``)
  fall to ``tieBreakOrder``'s ``System.identityHashCode``, which differs from run to run: Java
  has no defined order there, and groupsim deterministically sends the new key left.

The fast path for a map filled once without crowded bins is
:func:`protocol.java_hash_order.hash_order`.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable, Iterator
from typing import Any, Generic, TypeVar

from protocol.java_capacity import (
    MAXIMUM_CAPACITY,
    MIN_TREEIFY_CAPACITY,
    TREEIFY_THRESHOLD,
    UNTREEIFY_THRESHOLD,
    float32,
    presized_capacity,
    resize_threshold,
    table_size_for,
)
from protocol.java_hashing import spread, to_int32
from protocol.java_strings import java_string_key
from protocol.java_tree_bins import (
    Bin,
    TreeNode,
    balance_deletion,
    balance_insertion,
    move_root_to_front,
    root_of,
)

__all__ = ["JavaHashMap"]

T = TypeVar("T", bound=Hashable)


class JavaHashMap(Generic[T]):
    """The key order of one ``java.util.HashMap`` (or ``HashSet``) through its whole history.

    Replays ``putVal`` / ``resize`` / ``treeifyBin`` / ``removeNode`` of OpenJDK 17 on keys only
    (values never affect order), so iteration order is exact for every size and collision
    pattern, including crowded bins that resize a small table and tree bins in a large one.

    Args:
        hash_fn: the key's Java ``hashCode()`` (e.g. :func:`protocol.java_hashing.string_hash`).
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
        self._table: list[Bin | None] | None = None
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
            ft = float32(float32(float(len(items))) / float32(0.75)) + 1.0
            t = int(float32(ft))
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
            tab[i] = Bin([key])
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
            tab[i] = Bin([key])
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
            if old_cap >= MAXIMUM_CAPACITY:
                self._threshold = 2**31 - 1
                return
            new_cap = old_cap << 1
            if new_cap < MAXIMUM_CAPACITY and old_cap >= 16:
                new_thr = old_thr << 1
        elif old_thr > 0:
            new_cap = old_thr
        else:
            new_cap, new_thr = 16, 12
        if new_thr == 0:
            new_thr = resize_threshold(new_cap) if new_cap < MAXIMUM_CAPACITY else 2**31 - 1
        self._threshold = new_thr
        tab: list[Bin | None] = [None] * new_cap
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
                    tab[j] = Bin(lo)
                if hi:
                    tab[j + old_cap] = Bin(hi)
                continue
            # TreeNode.split
            for half, index, other in ((lo, j, hi), (hi, j + old_cap, lo)):
                if not half:
                    continue
                if len(half) <= UNTREEIFY_THRESHOLD:
                    tab[index] = Bin(half)
                elif not other:
                    tab[index] = b  # the whole tree moves unchanged
                else:
                    nb = Bin(half)
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

    def _dir(self, x: TreeNode, p: TreeNode) -> int:
        if p.hash > x.hash:
            return -1
        if p.hash < x.hash:
            return 1
        return self._compare(x.key, p.key)

    def _treeify(self, b: Bin) -> None:
        """``TreeNode.treeify`` on the bin's chain, then ``moveRootToFront``."""
        nodes = {k: TreeNode(k, to_int32(self._bin_of[k])) for k in b.chain}
        root: TreeNode | None = None
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
                    root = balance_insertion(root, x)
                    break
                p = nxt
        b.nodes = nodes
        assert root is not None
        move_root_to_front(b, root)

    def _put_tree(self, b: Bin, key: T, h: int) -> None:
        """``TreeNode.putTreeVal`` for a key not yet present."""
        nodes = b.nodes
        assert nodes is not None
        x = TreeNode(key, to_int32(h))
        root = root_of(nodes[b.chain[0]])
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
                move_root_to_front(b, balance_insertion(root, x))
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
        self, tab: list[Bin | None], index: int, b: Bin, key: T, movable: bool
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
        root: TreeNode = first_root if first_root is not None else p
        if root.parent is not None:
            root = root_of(root)
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
        r = root if p.red else balance_deletion(root, replacement)
        if replacement is p:
            pp = p.parent
            p.parent = None
            if pp is not None:
                if p is pp.left:
                    pp.left = None
                elif p is pp.right:
                    pp.right = None
        if movable:
            move_root_to_front(b, r)
