"""The SIEM export's disk spool: the confirmed position and the batch in flight, in one directory.

``position.json`` holds ``next_index``: the first leaf of the audit log not yet known to have been read by
the receiver (with the destination and format it belongs to). ``batch.spool`` holds the batch being
delivered: one JSON header line (``start``, ``end``, ``count``) and then the framed syslog bytes exactly
as sent, so that a resend after a failure (or after the exporter itself restarted) sends the same
messages with the same sequence numbers. Both are written atomically (``private_files.write_private``:
temporary file, fsync, rename). ``confirm`` writes the position first and then drops the batch, so a
crash between the two leaves a stale batch that ``pending`` recognises (``end <= next_index``) and drops.
"""

from __future__ import annotations

import contextlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from velyrix import errors, private_files

POSITION = "position.json"
BATCH = "batch.spool"


@dataclass(frozen=True)
class Batch:
    """Leaves ``[start, end)`` rendered as ``data`` (``count`` messages; redacted leaves send nothing)."""

    start: int
    end: int
    count: int
    data: bytes


class Spool:
    """The spool directory of one destination (``key``: host, port and format, checked on open)."""

    def __init__(self, directory: Path, key: str) -> None:
        self.directory = private_files.private_dir(directory)
        self.key = key
        state = self._read_position()
        if state is not None and state.get("destination") != key:
            raise errors.InvalidInputError(
                f"the spool {directory} belongs to {state.get('destination')}, not {key}",
                hint="pass another --spool directory for this destination",
            )
        self._next = int(state["next_index"]) if state else 0

    def _read_position(self) -> dict[str, Any] | None:
        path = self.directory / POSITION
        if not path.exists():
            return None
        try:
            state = json.loads(path.read_text())
            int(state["next_index"])
        except (ValueError, KeyError, TypeError):
            raise errors.InvalidInputError(
                f"{path}: the spool's position is damaged (expected JSON with next_index)",
                hint="restore it, or remove the spool directory to start again from leaf 0 (resends everything)",
            ) from None
        return dict(state)

    def position(self) -> int:
        """The first leaf index not yet confirmed."""
        return self._next

    def pending(self) -> Batch | None:
        """The spooled batch still to deliver, if any (a stale one, already confirmed, is dropped)."""
        path = self.directory / BATCH
        if not path.exists():
            return None
        raw = path.read_bytes()
        head, _, data = raw.partition(b"\n")
        try:
            meta = json.loads(head)
            batch = Batch(int(meta["start"]), int(meta["end"]), int(meta["count"]), data)
        except (ValueError, KeyError, TypeError):
            raise errors.InvalidInputError(
                f"{path}: the spooled batch is damaged",
                hint="remove it: the exporter renders the batch again from the audit log",
            ) from None
        if batch.end <= self._next:
            path.unlink()
            return None
        return batch

    def stage(self, start: int, end: int, count: int, data: bytes) -> Batch:
        """Write the batch ``[start, end)`` to disk before it is sent."""
        head = json.dumps({"start": start, "end": end, "count": count}).encode()
        private_files.write_private(self.directory / BATCH, head + b"\n" + data)
        return Batch(start, end, count, data)

    def confirm(self, batch: Batch) -> None:
        """The receiver read ``batch`` whole: move the position past it, then drop the spooled copy."""
        state = {"destination": self.key, "next_index": batch.end}
        private_files.write_private(self.directory / POSITION, json.dumps(state).encode())
        self._next = batch.end
        with contextlib.suppress(FileNotFoundError):
            (self.directory / BATCH).unlink()
