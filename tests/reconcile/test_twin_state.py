"""The twin's state saved incrementally (``reconcile.twin_state``): a save appends only the nodes touched,
a rebuilt twin gets back exactly what the saves recorded, a torn last line or a journal left from before a
compaction is not replayed, and a snapshot written before the journal existed still loads."""

from __future__ import annotations

import json
from pathlib import Path

from velyrix.controlplane.reconcile import twin_state
from velyrix.fleet.drivers.sim import SimRegion


def _twin() -> SimRegion:
    return SimRegion.build("us-east-1", {"hgx-h200-8g": 8}, seed=3)


def _touch(sim: SimRegion, hostname: str, image: str) -> None:
    sim.nodes[hostname].image = image
    sim.nodes[hostname].tenant_data = True


def test_saves_append_only_the_touched_nodes_and_a_rebuilt_twin_gets_them_back(tmp_path: Path) -> None:
    path = tmp_path / "twin.json"
    sim = _twin()
    journal = twin_state.TwinJournal(path, sim)
    journal.restore()
    journal.save([])  # the first save writes the snapshot
    first, second = list(sim.nodes)[:2]
    _touch(sim, first, "img-a")
    journal.save([first])
    _touch(sim, second, "img-b")
    _touch(sim, first, "img-c")
    journal.save([first, second])
    lines = twin_state.journal_path(path).read_text().splitlines()
    assert [sorted(json.loads(line)["nodes"]) for line in lines] == [[first], sorted([first, second])]
    again = _twin()
    twin_state.TwinJournal(path, again).restore()
    assert again.state()["nodes"] == sim.state()["nodes"]
    assert again.nodes[first].image == "img-c" and again.nodes[second].image == "img-b"


def test_a_torn_line_and_lines_of_an_older_snapshot_are_not_replayed(tmp_path: Path) -> None:
    path = tmp_path / "twin.json"
    sim = _twin()
    journal = twin_state.TwinJournal(path, sim)
    journal.save([])
    node = next(iter(sim.nodes))
    _touch(sim, node, "img-a")
    journal.save([node])
    with twin_state.journal_path(path).open("ab") as fh:
        fh.write(b'{"generation": 1, "nodes": {"' + node.encode() + b'": {"image": "tor')  # crash mid-append
    state = twin_state.load(path)
    assert state is not None and state["nodes"][node]["image"] == "img-a"
    # a crash after a compaction's snapshot and before the journal was emptied: the old lines are older
    stale = twin_state.journal_path(path).read_bytes()
    _touch(sim, node, "img-new")
    journal.compact()
    twin_state.journal_path(path).write_bytes(stale)
    state = twin_state.load(path)
    assert state is not None and state["nodes"][node]["image"] == "img-new"


def test_the_journal_is_folded_into_a_snapshot_once_it_outgrows_the_twin(tmp_path: Path) -> None:
    path = tmp_path / "twin.json"
    sim = _twin()
    journal = twin_state.TwinJournal(path, sim)
    journal.save([])
    node = next(iter(sim.nodes))
    for i in range(twin_state.COMPACT_MIN_ENTRIES + 1):
        _touch(sim, node, f"img-{i}")
        journal.save([node])
    assert len(twin_state.journal_path(path).read_text().splitlines()) < twin_state.COMPACT_MIN_ENTRIES
    assert json.loads(path.read_text())["generation"] == 2


def test_a_snapshot_from_before_the_journal_still_loads(tmp_path: Path) -> None:
    path = tmp_path / "twin.json"
    sim = _twin()
    node = next(iter(sim.nodes))
    _touch(sim, node, "img-old")
    path.write_text(json.dumps(sim.state()))  # what save_twin wrote before: no generation, no journal
    again = _twin()
    twin_state.TwinJournal(path, again).restore()
    assert again.nodes[node].image == "img-old"
