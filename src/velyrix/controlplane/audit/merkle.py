"""The Merkle tree of RFC 6962 / RFC 9162 (section 2.1), pure functions: no I/O, no clock.

Hashes are SHA-256: a leaf is ``SHA-256(0x00 || data)``, an inner node ``SHA-256(0x01 || left || right)``,
the empty tree ``SHA-256("")``. A tree of ``n`` leaves is stored as its *perfect* subtrees: node
``(level, index)`` covers leaves ``[index * 2**level, (index + 1) * 2**level)``. Every hash a proof needs
is either such a stored node or, at the right edge of a tree whose size is not a power of two, a
combination of at most ``log2(n)`` of them (``pieces``).

Proof generation returns the leaf *ranges* whose subtree hashes make the proof (so the caller fetches
the stored nodes in one query); verification follows RFC 9162 sections 2.1.3.2 and 2.1.4.2.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable, Sequence

Range = tuple[int, int]
"""Leaves ``[start, end)``."""
NodeKey = tuple[int, int]
"""A stored perfect subtree: ``(level, index)``."""

EMPTY_ROOT = hashlib.sha256(b"").digest()


def leaf_hash(data: bytes) -> bytes:
    """``SHA-256(0x00 || data)`` (32 bytes)."""
    return hashlib.sha256(b"\x00" + data).digest()


def node_hash(left: bytes, right: bytes) -> bytes:
    """``SHA-256(0x01 || left || right)`` (32 bytes)."""
    return hashlib.sha256(b"\x01" + left + right).digest()


def split(n: int) -> int:
    """The largest power of two smaller than ``n`` (``n >= 2``): where RFC 6962 splits ``n`` leaves."""
    return 1 << ((n - 1).bit_length() - 1)


def _perfect(start: int, end: int) -> NodeKey | None:
    n = end - start
    if n > 0 and n & (n - 1) == 0 and start % n == 0:
        level = n.bit_length() - 1
        return level, start >> level
    return None


def pieces(start: int, end: int) -> list[NodeKey]:
    """The stored nodes whose combination is the subtree hash of leaves ``[start, end)``, left to right."""
    key = _perfect(start, end)
    if key is not None:
        return [key]
    k = split(end - start)
    return pieces(start, start + k) + pieces(start + k, end)


def subtree_hash(start: int, end: int, node: Callable[[NodeKey], bytes]) -> bytes:
    """MTH of leaves ``[start, end)`` from the stored nodes that ``node((level, index))`` returns."""
    key = _perfect(start, end)
    if key is not None:
        return node(key)
    k = split(end - start)
    return node_hash(subtree_hash(start, start + k, node), subtree_hash(start + k, end, node))


def parents_completed(index: int) -> int:
    """How many inner nodes become complete when leaf ``index`` is appended (its trailing one bits)."""
    count = 0
    while index & 1:
        count += 1
        index >>= 1
    return count


def left_siblings(index: int) -> list[NodeKey]:
    """The stored nodes that appending leaf ``index`` combines with, level 0 first."""
    return [(k, (index >> k) - 1) for k in range(parents_completed(index))]


def new_nodes(index: int, leaf: bytes, siblings: Sequence[bytes]) -> list[tuple[NodeKey, bytes]]:
    """The inner nodes completed by appending ``leaf`` at ``index``, given ``left_siblings`` hashes."""
    out: list[tuple[NodeKey, bytes]] = []
    h = leaf
    for k, sibling in enumerate(siblings):
        h = node_hash(sibling, h)
        out.append(((k + 1, index >> (k + 1)), h))
    return out


def inclusion_ranges(index: int, size: int) -> list[Range]:
    """The ranges of the audit path of leaf ``index`` in a tree of ``size`` leaves (RFC 6962 2.1.1),
    bottom first."""
    if not 0 <= index < size:
        raise ValueError(f"leaf {index} is not in a tree of {size} leaves")
    out: list[Range] = []
    start, n, m = 0, size, index
    while n > 1:
        k = split(n)
        if m < k:
            out.append((start + k, start + n))
            n = k
        else:
            out.append((start, start + k))
            start, n, m = start + k, n - k, m - k
    return out[::-1]


def consistency_ranges(first: int, second: int) -> list[Range]:
    """The ranges of the consistency proof from size ``first`` to ``second`` (RFC 6962 2.1.2)."""
    if not 0 < first <= second:
        raise ValueError(f"no consistency proof from {first} to {second} leaves")
    out: list[Range] = []
    start, n, m, whole = 0, second, first, True
    while m != n:
        k = split(n)
        if m <= k:
            out.append((start + k, start + n))
            n = k
        else:
            out.append((start, start + k))
            start, n, m, whole = start + k, n - k, m - k, False
    if not whole:
        out.append((start, start + n))
    return out[::-1]


def nodes_for(ranges: Iterable[Range]) -> set[NodeKey]:
    """Every stored node the subtree hashes of ``ranges`` need."""
    return {key for start, end in ranges for key in pieces(start, end)}


def _shift_until_odd(fn: int, sn: int) -> tuple[int, int]:
    while fn and not fn & 1:
        fn, sn = fn >> 1, sn >> 1
    return fn, sn


def root_from_inclusion(index: int, size: int, leaf: bytes, path: Sequence[bytes]) -> bytes | None:
    """The root that ``path`` proves ``leaf`` at ``index`` into (RFC 9162 2.1.3.2), None if malformed."""
    if not 0 <= index < size:
        return None
    fn, sn, r = index, size - 1, leaf
    for p in path:
        if sn == 0:
            return None
        if fn & 1 or fn == sn:
            r = node_hash(p, r)
            fn, sn = _shift_until_odd(fn, sn)
        else:
            r = node_hash(r, p)
        fn, sn = fn >> 1, sn >> 1
    return r if sn == 0 else None


def verify_inclusion(index: int, size: int, leaf: bytes, path: Sequence[bytes], root: bytes) -> bool:
    """Whether ``path`` proves ``leaf`` at ``index`` in the tree of ``size`` leaves with ``root``."""
    return root_from_inclusion(index, size, leaf, path) == root


def verify_consistency(first: int, second: int, first_root: bytes, second_root: bytes, proof: Sequence[bytes]) -> bool:
    """Whether ``proof`` shows the tree of ``first`` leaves is a prefix of the one of ``second`` (RFC 9162
    2.1.4.2)."""
    if first == second:
        return not proof and first_root == second_root
    if first == 0:
        return not proof
    if first > second or not proof:
        return False
    path = list(proof)
    if first & (first - 1) == 0:
        path.insert(0, first_root)
    fn, sn = first - 1, second - 1
    while fn & 1:
        fn, sn = fn >> 1, sn >> 1
    fr = sr = path[0]
    for c in path[1:]:
        if sn == 0:
            return False
        if fn & 1 or fn == sn:
            fr, sr = node_hash(c, fr), node_hash(c, sr)
            fn, sn = _shift_until_odd(fn, sn)
        else:
            sr = node_hash(sr, c)
        fn, sn = fn >> 1, sn >> 1
    return sn == 0 and fr == first_root and sr == second_root


def root_of(leaves: Sequence[bytes]) -> bytes:
    """MTH of the leaf hashes ``leaves`` in O(n) time and O(log n) memory (a stack of perfect subtrees)."""
    if not leaves:
        return EMPTY_ROOT
    stack: list[tuple[int, bytes]] = []  # (size, hash), sizes strictly decreasing
    for h in leaves:
        size, cur = 1, h
        while stack and stack[-1][0] == size:
            _, left = stack.pop()
            size, cur = size * 2, node_hash(left, cur)
        stack.append((size, cur))
    _, root = stack.pop()
    while stack:
        _, left = stack.pop()
        root = node_hash(left, root)
    return root
