"""The twin's hardware truth on disk, saved incrementally: a snapshot of every node plus a journal of the
nodes the driver touched since, so that a save before a reconcile commit costs the nodes it changed, not the
whole twin.

``state_file`` holds a snapshot (``SimRegion.state()`` plus ``generation``), replaced atomically;
``<state_file>.journal`` holds JSON lines ``{"generation": g, "clock_s": s, "nodes": {hostname: fields}}``,
each appended and fsynced before the commit it precedes. ``load`` replays the lines of the snapshot's
generation in order on top of it (a torn last line, from a crash mid-append, ends the replay: its commit
never happened). When the journal holds more node entries than the twin has nodes, ``save`` writes a new
snapshot of the next generation and empties the journal: lines of an older generation left by a crash
between the two are ignored. Snapshots written before the journal existed read as generation 0.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from velyrix import private_files
from velyrix.fleet.drivers.sim import SimRegion

COMPACT_MIN_ENTRIES = 256
"""Journal node entries below which it is never compacted (small twins write few, short lines)."""


def journal_path(state_file: Path) -> Path:
    return state_file.with_name(state_file.name + ".journal")


def load(state_file: Path) -> dict[str, Any] | None:
    """The twin state ``state_file`` and its journal describe (the snapshot with the journal replayed: the
    same shape as ``SimRegion.state()``), or None when there is no snapshot."""
    if not state_file.exists():
        return None
    state: dict[str, Any] = json.loads(state_file.read_text())
    generation = int(state.get("generation", 0))
    nodes: dict[str, Any] = state.setdefault("nodes", {})
    journal = journal_path(state_file)
    if not journal.exists():
        return state
    for line in journal.read_bytes().splitlines():
        try:
            entry = json.loads(line)
        except ValueError:
            break  # torn by a crash mid-append: nothing after it was written either
        if int(entry.get("generation", -1)) != generation:
            continue
        for hostname, fields in entry.get("nodes", {}).items():
            nodes.setdefault(hostname, {}).update(fields)
        state["clock_s"] = max(float(state.get("clock_s", 0.0)), float(entry.get("clock_s", 0.0)))
    return state


class TwinJournal:
    """Saves ``sim``'s driver-visible state to ``state_file`` (see the module docstring)."""

    def __init__(self, state_file: Path, sim: SimRegion) -> None:
        self.state_file = state_file
        self.sim = sim
        self.generation = 0
        self.entries = 0
        """Node entries in the journal since the snapshot."""
        self._snapshot_written = False

    def restore(self) -> None:
        """Give the twin back what the files recorded (nothing when there are none)."""
        state = load(self.state_file)
        if state is None:
            return
        self.sim.restore(state)
        self.generation = int(state.get("generation", 0))
        self._snapshot_written = True
        self.compact()  # start each run from one snapshot and an empty journal

    def save(self, hostnames: Iterable[str]) -> None:
        """Record the state of ``hostnames`` (the nodes the driver touched): one appended line, or a new
        snapshot when there is none yet or the journal has grown past the twin's size."""
        names = sorted(hostnames)
        if not self._snapshot_written:
            self.compact()
            return
        if not names:
            return
        if self.entries + len(names) > max(COMPACT_MIN_ENTRIES, len(self.sim.nodes)):
            self.compact()
            return
        part = self.sim.state(names)
        line = {"generation": self.generation, "clock_s": part["clock_s"], "nodes": part["nodes"]}
        _append_private(journal_path(self.state_file), json.dumps(line).encode() + b"\n")
        self.entries += len(names)

    def compact(self) -> None:
        """Write a snapshot of every node as the next generation, then empty the journal."""
        state = self.sim.state()
        state["generation"] = self.generation + 1
        private_files.write_private(self.state_file, json.dumps(state).encode())
        self.generation += 1
        private_files.write_private(journal_path(self.state_file), b"")
        self.entries = 0
        self._snapshot_written = True


def _append_private(path: Path, data: bytes) -> None:
    """Append ``data`` to ``path`` (created 0600) and fsync it before returning."""
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, private_files.FILE_MODE)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
        os.fsync(fd)
    finally:
        os.close(fd)
