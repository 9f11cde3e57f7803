"""A rollout controller as a process of its own, for kill tests: ``python -m velyrix.testing.rollout_process
WORKDIR SEED SPEC`` runs the rollout of the HCL file SPEC on the region of ``velyrix.testing.rollouts``
whose database (``WORKDIR/rollouts.db``) and twin state (``WORKDIR/twin.json``: the nodes' state, the clock
and every install executed) live on disk. Started again after a SIGKILL, it resumes from both. Prints the
rollout's final state."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from velyrix import private_files
from velyrix.declarations import rollout as decl
from velyrix.ops.rollouts import running, service
from velyrix.testing import rollouts as tr


def main(argv: list[str]) -> int:
    workdir, seed, spec_file = Path(argv[0]), int(argv[1]), Path(argv[2])
    db, state = workdir / "rollouts.db", workdir / "twin.json"
    fresh = not db.exists()
    region = tr.build(seed, url=f"sqlite:///{db}", fresh=fresh)
    if state.exists():
        saved = json.loads(state.read_text())
        region.sim.restore(saved["sim"])
        region.driver.installs = [(str(n), str(c), str(v)) for n, c, v in saved["installs"]]

    saved_calls = [-1]

    def save() -> None:  # the twin's truth, written before each journal commit that follows a change
        if region.driver.calls == saved_calls[0]:
            return
        data = {"sim": region.sim.state(), "installs": region.driver.installs}
        private_files.write_private(state, json.dumps(data).encode())
        saved_calls[0] = region.driver.calls

    region.world.before_commit = save
    spec = decl.loads(spec_file.read_text(), str(spec_file))[0]
    with region.sessionmaker() as s:
        if fresh:
            row, _ = service.apply(s, region.world, spec, "rollout-process")
            save()
            s.commit()
        rollout_id = service.get(s, spec.region, spec.name).id
    print(running.drive(region.sessionmaker, rollout_id, region.world, region.advance, poll_s=300.0), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
