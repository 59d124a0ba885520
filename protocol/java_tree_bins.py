"""The red-black tree bins of a Java ``HashMap`` (``HashMap.TreeNode``).

A bin of 9+ colliding keys in a table of 64+ slots becomes a tree (OpenJDK 17). Facts used:

* A tree bin keeps a ``next`` chain too, and that chain is what iteration walks. ``treeify``
  builds the tree by inserting the chain's nodes in order, then moves the tree's root to the
  front of the chain (``moveRootToFront``). ``putTreeVal`` links the new node into the chain
  right *after its tree parent*, rebalances, and moves the (possibly new) root to the front.
* ``balanceInsertion`` / ``balanceDeletion`` / ``rotateLeft`` / ``rotateRight`` are the JDK's
  red-black fix-ups, replayed here link for link.

The map using them is :class:`protocol.java_hashmap.JavaHashMap`.
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "TreeNode",
    "Bin",
    "rotate_left",
    "rotate_right",
    "balance_insertion",
    "balance_deletion",
    "root_of",
    "move_root_to_front",
]


class TreeNode:
    """One ``HashMap.TreeNode``: red-black links; chain order lives in the bin's list."""

    __slots__ = ("key", "hash", "parent", "left", "right", "red")

    def __init__(self, key: Any, h: int) -> None:
        self.key = key
        self.hash = h  # signed int32 spread hash (tree descent compares it as an int)
        self.parent: TreeNode | None = None
        self.left: TreeNode | None = None
        self.right: TreeNode | None = None
        self.red = False


class Bin:
    """One table slot: the ``next`` chain in ``chain`` (keys) and, for a tree bin, its nodes."""

    __slots__ = ("chain", "nodes")

    def __init__(self, chain: list[Any]) -> None:
        self.chain = chain
        self.nodes: dict[Any, TreeNode] | None = None  # set while the bin is a tree


def rotate_left(root: TreeNode, p: TreeNode) -> TreeNode:
    """``TreeNode.rotateLeft``: ``p``'s right child takes its place; the new root."""
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


def rotate_right(root: TreeNode, p: TreeNode) -> TreeNode:
    """``TreeNode.rotateRight``: ``p``'s left child takes its place; the new root."""
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


def balance_insertion(root: TreeNode, x: TreeNode) -> TreeNode:
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
                    root = rotate_left(root, x)
                    xp = x.parent
                    xpp = None if xp is None else xp.parent
                if xp is not None:
                    xp.red = False
                    if xpp is not None:
                        xpp.red = True
                        root = rotate_right(root, xpp)
        else:
            if xppl is not None and xppl.red:
                xppl.red = False
                xp.red = False
                xpp.red = True
                x = xpp
            else:
                if x is xp.left:
                    x = xp
                    root = rotate_right(root, x)
                    xp = x.parent
                    xpp = None if xp is None else xp.parent
                if xp is not None:
                    xp.red = False
                    if xpp is not None:
                        xpp.red = True
                        root = rotate_left(root, xpp)


def balance_deletion(root: TreeNode, x: TreeNode | None) -> TreeNode:
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
                root = rotate_left(root, xp)
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
                        root = rotate_right(root, xpr)
                        xp = x.parent
                        xpr = None if xp is None else xp.right
                    if xpr is not None:
                        xpr.red = False if xp is None else xp.red
                        sr = xpr.right
                        if sr is not None:
                            sr.red = False
                    if xp is not None:
                        xp.red = False
                        root = rotate_left(root, xp)
                    x = root
        else:
            if xpl is not None and xpl.red:
                xpl.red = False
                xp.red = True
                root = rotate_right(root, xp)
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
                        root = rotate_left(root, xpl)
                        xp = x.parent
                        xpl = None if xp is None else xp.left
                    if xpl is not None:
                        xpl.red = False if xp is None else xp.red
                        sl = xpl.left
                        if sl is not None:
                            sl.red = False
                    if xp is not None:
                        xp.red = False
                        root = rotate_right(root, xp)
                    x = root


def root_of(node: TreeNode) -> TreeNode:
    """``TreeNode.root``: the root of ``node``'s tree."""
    while node.parent is not None:
        node = node.parent
    return node


def move_root_to_front(b: Bin, root: TreeNode) -> None:
    """``TreeNode.moveRootToFront``: unlink the root from the chain and put it first."""
    if b.chain[0] != root.key:
        b.chain.remove(root.key)
        b.chain.insert(0, root.key)
