"""The job on each node of the grid, from what the node agents report: ``velyrix up``'s app, twin and
reconciler on a real uvicorn (tests/reconcile/test_node_reports_e2e.py's ``Up``), one agent per twin node
reading its job mapping (``<root>/<hostname>/``, which the delivered Slurm's prolog writes; here
``jobs.write_prolog`` writes it the same way). A node whose mapping names a job shows it (id, user, team,
on its GPUs); the others show "idle"; the job's epilog makes its node idle again."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.reconcile.test_node_reports_e2e import CLUSTER, Up
from velyrix.agent import jobs
from velyrix.controlplane.identity import sessions
from velyrix.ops import twin_agents


@pytest.fixture
def up(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Up, twin_agents.TwinAgents, str]]:
    from velyrix.controlplane.db import models
    from velyrix.controlplane.db.models.identity import User
    from velyrix.controlplane.identity import login

    monkeypatch.setenv("VELYRIX_HOME", str(tmp_path))
    plane = Up(f"sqlite:///{tmp_path / 'velyrix.db'}", twin_nodes=9)
    assert plane.runtime.sim is not None
    agents = twin_agents.TwinAgents(
        plane.app.state.sessionmaker, plane.runtime.sim, plane.url, interval_s=0.2, job_map_root=tmp_path / "jobmap"
    )
    with plane.app.state.sessionmaker() as s:
        tenant = s.query(models.Tenant).filter_by(name="acme").one()
        user = User(tenant_id=tenant.id, user_name="viewer@acme.example", role="viewer")
        s.add(user)
        s.flush()
        secret = login.start_session(s, user, "oidc", mfa=True)[1]
        s.commit()
    try:
        yield plane, agents, secret
    finally:
        agents.stop()
        plane.stop()


def _grid_until(http: httpx.Client, url: str, cookie: str, wanted: str, timeout_s: float = 60.0) -> str:
    """The grid page once it contains ``wanted`` (the agents report every 0.2 s)."""
    deadline = time.monotonic() + timeout_s
    while True:
        page = http.get(url, headers={"cookie": f"{sessions.COOKIE}={cookie}"})
        assert page.status_code == 200, page.text[:300]
        if wanted in page.text or time.monotonic() > deadline:
            assert wanted in page.text, page.text[-2000:]
            return page.text
        time.sleep(0.1)


def _row(text: str, node: str) -> str:
    start = text.index(f'id="node-{node}"')
    return text[start : text.index("</tr>", start)]


def test_the_grid_shows_the_job_the_agent_reports_and_idle_elsewhere(
    up: tuple[Up, twin_agents.TwinAgents, str], tmp_path: Path
) -> None:
    plane, agents, cookie = up
    cid = plane.http.post("/v1/clusters", headers=plane.tenant, json=CLUSTER).json()["id"]
    plane.wait_phase(cid, "Ready", timeout_s=120)
    names = sorted(n["name"] for n in plane.members(cid))
    busy, idle = names[0], names[1]
    jobs.write_prolog(tmp_path / "jobmap" / busy, "4242", [0, 1, 2, 3], user="ada", team="llm", cost_center="research")
    agents.start()
    url = f"/console/clusters/{cid}/nodes"
    text = _grid_until(plane.http, url, cookie, '<span class="job-id">4242</span>')
    row = _row(text, busy)
    assert '<span class="job-id">4242</span> (ada, llm)' in row and row.count("job 4242") == 4
    assert '<span class="idle">idle</span>' in _row(text, idle) and "4242" not in _row(text, idle)
    jobs.remove_epilog(tmp_path / "jobmap" / busy, "4242")
    deadline = time.monotonic() + 60
    while "4242" in _row(_grid_until(plane.http, url, cookie, "idle"), busy):
        assert time.monotonic() < deadline, "the epilog's end of the job never reached the grid"
        time.sleep(0.1)


def test_a_report_s_jobs_are_shown_only_within_the_agent_s_limits() -> None:
    from velyrix.console import grid

    sample: dict[str, Any] = {
        "jobs": [
            {"hpc_job": "ok-1", "gpus": [1, 0, 0, -3, "x"], "user": "u" * 500},
            {"hpc_job": "<script>", "gpus": [2]},
            {"gpus": [3]},
            "not a job",
        ]
    }
    (job,) = grid.jobs_of(sample)
    assert job.hpc_job == "ok-1" and job.gpus == (0, 1) and len(job.user) == jobs.MAX_VALUE_CHARS
    assert grid.jobs_of({"jobs": "many"}) == () and grid.jobs_of(None) == ()
