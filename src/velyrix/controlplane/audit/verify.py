"""Check a copy of the audit log (``entries``: index, event id, stored leaf hash, event) against signed
checkpoints a client saw, and name the first missing or altered event. Pure: no database, no network.

What is checked, in order, for every leaf up to the largest checkpoint:
1. the leaf is there (a gap in the indexes: a leaf row was deleted);
2. its event is there (the event row was deleted);
3. the event, recomputed into its leaf hash (``log.canonical``), matches the stored leaf hash (edited);
4. each checkpoint's root equals the root of the recomputed leaf hashes (the stored hashes themselves
   were rewritten to hide an edit: then the first leaf past the last matching checkpoint is named as
   the start of the range that differs).
Checkpoint signatures are checked first with ``signing.verify`` against the pinned key.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from velyrix.controlplane.audit import log, merkle
from velyrix.controlplane.reconcile import signing


@dataclass(frozen=True)
class Finding:
    """One problem: the leaf index, the event id when known, a kind and a sentence for the user."""

    index: int
    event_id: str | None
    kind: str
    """``bad-checkpoint``, ``missing-leaf``, ``missing-event``, ``altered-event`` or ``rewritten-tree``."""
    message: str


@dataclass
class Result:
    """The outcome: ``findings`` (first one first); ``checked`` leaves up to ``tree_size`` of the
    newest valid checkpoint, whose root matched when ``findings`` is empty."""

    checked: int = 0
    tree_size: int = 0
    findings: list[Finding] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.findings

    @property
    def first(self) -> Finding | None:
        return self.findings[0] if self.findings else None


def check_checkpoints(checkpoints: Sequence[dict[str, Any]], public_key: str | None) -> list[Finding]:
    """A finding per checkpoint whose signature or body is not a valid audit checkpoint."""
    out = []
    for cp in checkpoints:
        result = signing.verify(cp, public_key)
        body = cp.get("report", {})
        if not result.valid or body.get("kind") != "velyrix.audit.checkpoint/v1":
            size = body.get("tree_size", -1) if isinstance(body, dict) else -1
            out.append(Finding(size, None, "bad-checkpoint", f"checkpoint of size {size}: {result.reason}"))
    return out


def _named(entry: dict[str, Any]) -> str:
    return f"event {entry['event_id']} (leaf {entry['index']})"


def _leaf_findings(by_index: dict[int, dict[str, Any]], size: int) -> tuple[list[bytes | None], list[Finding]]:
    leaves: list[bytes | None] = []
    found: list[Finding] = []
    for i in range(size):
        entry = by_index.get(i)
        if entry is None:
            before, after = by_index.get(i - 1), by_index.get(i + 1)
            near = ", ".join(
                f"{side} {e['event_id']}" for side, e in (("after", before), ("before", after)) if e is not None
            )
            found.append(
                Finding(i, None, "missing-leaf", f"leaf {i} is missing from the log ({near or 'no neighbours'})")
            )
            leaves.append(None)
            continue
        event = entry.get("event")
        if entry.get("redacted"):  # another tenant's event: only its hash is shown
            leaves.append(bytes.fromhex(entry["leaf_hash"]))
            continue
        if event is None:
            found.append(
                Finding(i, entry["event_id"], "missing-event", f"{_named(entry)} is missing: its row was deleted")
            )
            leaves.append(bytes.fromhex(entry["leaf_hash"]))
            continue
        recomputed = merkle.leaf_hash(log.canonical(event, i))
        if recomputed.hex() != entry["leaf_hash"] or event.get("id") != entry["event_id"]:
            found.append(
                Finding(
                    i,
                    entry["event_id"],
                    "altered-event",
                    f"{_named(entry)} was altered: it no longer hashes to its leaf",
                )
            )
        leaves.append(recomputed)
    return leaves, found


def _root_findings(
    leaves: list[bytes | None], sizes: list[tuple[int, str]], by_index: dict[int, dict[str, Any]]
) -> list[Finding]:
    out: list[Finding] = []
    matched = 0
    for size, root_hex in sizes:
        part = leaves[:size]
        if any(h is None for h in part):
            return out  # a missing leaf is already named; no root can be recomputed past it
        if merkle.root_of([h for h in part if h is not None]).hex() == root_hex:
            matched = size
            continue
        entry = by_index.get(matched, {"event_id": None, "index": matched})
        out.append(
            Finding(
                matched,
                entry["event_id"],
                "rewritten-tree",
                f"the log differs from the checkpoint of size {size} in leaves {matched}..{size - 1}, "
                f"from {_named(entry)} on (its stored hashes were rewritten)",
            )
        )
        return out
    return out


def check(
    entries: Sequence[dict[str, Any]], checkpoints: Sequence[dict[str, Any]], public_key: str | None = None
) -> Result:
    """Verify ``entries`` against ``checkpoints`` (signed documents); see the module docstring."""
    result = Result(findings=check_checkpoints(checkpoints, public_key))
    good = [cp["report"] for cp in checkpoints if not check_checkpoints([cp], public_key)]
    sizes = sorted({(int(b["tree_size"]), str(b["root_hash"])) for b in good})
    result.tree_size = sizes[-1][0] if sizes else 0
    by_index = {int(e["index"]): e for e in entries}
    leaves, found = _leaf_findings(by_index, result.tree_size)
    result.findings.extend(found)
    result.findings.extend(_root_findings(leaves, sizes, by_index))
    result.findings.sort(key=lambda f: (f.kind != "bad-checkpoint", f.index))
    result.checked = result.tree_size
    return result


def check_inclusion(bundle: dict[str, Any], public_key: str | None = None) -> tuple[bool, str]:
    """Verify an inclusion proof bundle (``GET /v1/audit-log/proofs/inclusion/{id}``) offline: the
    checkpoint's signature, the event's leaf hash and the audit path up to the signed root."""
    try:
        event, index, size = bundle["event"], int(bundle["leaf_index"]), int(bundle["tree_size"])
        path = [bytes.fromhex(h) for h in bundle["audit_path"]]
        checkpoint = bundle["checkpoint"]
        body = checkpoint["report"]
        signed_root = bytes.fromhex(body["root_hash"])
    except (KeyError, TypeError, ValueError) as exc:
        return False, f"not an audit inclusion proof: missing or malformed {exc}"
    bad = check_checkpoints([checkpoint], public_key)
    if bad:
        return False, bad[0].message
    if int(body["tree_size"]) != size:
        return False, f"the proof is for {size} leaves but the checkpoint signs {body['tree_size']}"
    leaf = merkle.leaf_hash(log.canonical(event, index))
    if bundle.get("leaf_hash") not in (None, leaf.hex()):
        return False, f"event {event.get('id')} does not hash to the proof's leaf (altered)"
    if not merkle.verify_inclusion(index, size, leaf, path, signed_root):
        return False, f"the audit path does not lead from event {event.get('id')} to the signed root"
    return True, f"event {event.get('id')} is leaf {index} of the log of {size} leaves signed at {body['timestamp']}"
