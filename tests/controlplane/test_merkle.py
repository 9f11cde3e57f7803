"""The RFC 6962/9162 Merkle tree of the audit log: roots, inclusion and consistency proofs, checked against
the recursive definition of RFC 6962 section 2.1 on every tree size up to 70 and on tampered proofs."""

from __future__ import annotations

import hashlib

import pytest

from velyrix.controlplane.audit import merkle


def _mth(leaves: list[bytes]) -> bytes:
    """RFC 6962 MTH, written from the definition (the reference the stored-node code must agree with)."""
    if not leaves:
        return hashlib.sha256(b"").digest()
    if len(leaves) == 1:
        return leaves[0]
    k = merkle.split(len(leaves))
    return merkle.node_hash(_mth(leaves[:k]), _mth(leaves[k:]))


def _store(leaves: list[bytes]) -> dict[tuple[int, int], bytes]:
    """Every stored node of the tree, built the way the log appends: leaf by leaf."""
    nodes: dict[tuple[int, int], bytes] = {}
    for i, leaf in enumerate(leaves):
        nodes[(0, i)] = leaf
        siblings = [nodes[key] for key in merkle.left_siblings(i)]
        nodes.update(merkle.new_nodes(i, leaf, siblings))
    return nodes


LEAVES = [merkle.leaf_hash(f"event {i}".encode()) for i in range(70)]
NODES = _store(LEAVES)


def _hashes(ranges: list[tuple[int, int]]) -> list[bytes]:
    return [merkle.subtree_hash(s, e, NODES.__getitem__) for s, e in ranges]


def test_leaf_and_node_hashes_carry_the_domain_prefixes() -> None:
    assert merkle.leaf_hash(b"x") == hashlib.sha256(b"\x00x").digest()
    assert merkle.node_hash(b"a", b"b") == hashlib.sha256(b"\x01ab").digest()
    assert merkle.root_of([]) == hashlib.sha256(b"").digest()


@pytest.mark.parametrize("size", range(1, 71))
def test_roots_and_inclusion_proofs_of_every_leaf(size: int) -> None:
    root = _mth(LEAVES[:size])
    assert merkle.root_of(LEAVES[:size]) == root
    assert merkle.subtree_hash(0, size, NODES.__getitem__) == root
    for i in range(size):
        path = _hashes(merkle.inclusion_ranges(i, size))
        assert len(path) <= (size - 1).bit_length()
        assert merkle.verify_inclusion(i, size, LEAVES[i], path, root)
        assert not merkle.verify_inclusion(i, size, LEAVES[(i + 1) % 70], path, root) or size == 1 and i == 0
        if path:
            forged = [bytes(32)] + path[1:]
            assert not merkle.verify_inclusion(i, size, LEAVES[i], forged, root)
            assert not merkle.verify_inclusion(i, size, LEAVES[i], path[:-1], root)


@pytest.mark.parametrize("second", range(1, 71, 3))
def test_consistency_proofs_between_every_pair_of_sizes(second: int) -> None:
    second_root = _mth(LEAVES[:second])
    for first in range(1, second + 1):
        first_root = _mth(LEAVES[:first])
        proof = _hashes(merkle.consistency_ranges(first, second))
        assert merkle.verify_consistency(first, second, first_root, second_root, proof)
        if first < second:
            assert not merkle.verify_consistency(first, second, merkle.leaf_hash(b"other"), second_root, proof)
            assert not merkle.verify_consistency(first, second, first_root, second_root, [bytes(32)] + proof[1:])


def test_a_rewritten_history_is_not_consistent() -> None:
    altered = list(LEAVES[:40])
    altered[7] = merkle.leaf_hash(b"forged")
    proof = _hashes(merkle.consistency_ranges(20, 40))
    assert not merkle.verify_consistency(20, 40, _mth(LEAVES[:20]), _mth(altered), proof)
