"""The job on each node of the grid, from what the node agents report: ``velyrix up``'s app, twin and
reconciler on a real uvicorn (tests/reconcile/test_node_reports_e2e.py's ``Up``), one agent per twin node
reading its job mapping (``<root>/<hostname>/``, which the delivered Slurm's prolog writes; here
``jobs.write_prolog`` writes it the same way). A node whose mapping names a job shows it (id, user, team,
on its GPUs); the others show "idle"; the job's epilog makes its node idle again."""

from __future__ import annotations

import re
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
    plane.runtime.sim.advance(60.0)  # type: ignore[union-attr]
    text = _grid_until(plane.http, url, cookie, '<span class="job-id">4242</span>')
    row = _row(text, busy)
    assert '<span class="job-id">4242</span> (ada, llm)' in row and row.count("job 4242") == 4
    assert '<span class="idle">idle</span>' in _row(text, idle) and "4242" not in _row(text, idle)
    _usage(plane, cookie, busy)
    jobs.remove_epilog(tmp_path / "jobmap" / busy, "4242")
    deadline = time.monotonic() + 60
    while "4242" in _row(_grid_until(plane.http, url, cookie, "idle"), busy):
        assert time.monotonic() < deadline, "the epilog's end of the job never reached the grid"
        plane.runtime.sim.advance(60.0)  # type: ignore[union-attr]
        time.sleep(0.1)


def _usage(plane: Up, cookie: str, busy: str) -> None:
    """The twin's clock moves on while the job runs at 80% load: the control plane meters its GPU time
    from the reports (4 GPUs x the reported intervals; busy by the GPUs' utilization) and the usage page
    shows it per team and cost center, as a chart and a table."""
    import sqlalchemy as sa

    from velyrix.controlplane.db.models.usage import JobUsage

    sim = plane.runtime.sim
    assert sim is not None
    sim.nodes[busy].load_pct = 80.0
    deadline = time.monotonic() + 60
    row = None
    while row is None or row.last_s - row.first_s < 600:
        assert time.monotonic() < deadline, "no usage metered"
        sim.advance(60.0)
        time.sleep(0.3)
        with plane.app.state.sessionmaker() as s:
            row = s.scalar(sa.select(JobUsage).where(JobUsage.hpc_job == "4242"))
    with plane.app.state.sessionmaker() as s:
        row = s.scalar(sa.select(JobUsage).where(JobUsage.hpc_job == "4242"))
        assert row is not None
        assert row.allocated_gpu_s == pytest.approx(4 * (row.last_s - row.first_s))
        assert 0 < row.busy_gpu_s <= row.allocated_gpu_s
        assert (row.team, row.cost_center, row.user) == ("llm", "research", "ada")
        allocated_h, busy_h = row.allocated_gpu_s / 3600, row.busy_gpu_s / 3600
    page = plane.http.get("/console/usage", headers={"cookie": f"{sessions.COOKIE}={cookie}"}).text
    for slug, name in (("team", "llm"), ("cost-center", "research")):
        table = page[page.index(f'id="usage-{slug}-table"') :]
        table = table[: table.index("</table>")]
        shown = re.search(
            rf'<th scope="row">{name}</th><td class="num">([0-9.]+)</td><td class="num">([0-9.]+)</td>', table
        )
        assert shown is not None, table
        # the page reads a moment later than this test: the job may have run a little longer
        assert float(shown[1]) >= round(allocated_h, 2) and float(shown[2]) >= round(busy_h, 2) - 0.01
        assert f'id="chart-{slug}"' in page


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


def test_metering_counts_only_what_the_report_may_claim() -> None:
    from types import SimpleNamespace

    from velyrix.controlplane import job_usage

    class Session:
        def __init__(self) -> None:
            self.added: list[Any] = []

        def scalar(self, _stmt: Any) -> None:
            return None

        def add(self, row: Any) -> None:
            self.added.append(row)

    node = SimpleNamespace(id="nod_1", tenant_id="ten_1", cluster_id="clu_1")
    jobs_then = {"jobs": [{"hpc_job": "9", "gpus": [0, 1], "team": "t"}, {"hpc_job": "bad id", "gpus": [2]}]}
    previous = SimpleNamespace(collected_at_s=100.0, sample=jobs_then)
    now = {"collected_at_s": 160.0, "sample": {"gpus": [{"index": 0, "utilization_pct": 50.0}, {"index": 1}]}}
    s = Session()
    assert job_usage.meter(s, node, previous, now) == 1  # type: ignore[arg-type]
    (row,) = s.added
    assert (row.hpc_job, row.allocated_gpu_s, row.busy_gpu_s, row.team) == ("9", 120.0, 30.0, "t")
    late = {**now, "collected_at_s": 100.0 + job_usage.MAX_INTERVAL_S + 1}
    backwards = {**now, "collected_at_s": 50.0}
    for report in (late, backwards):
        assert job_usage.meter(Session(), node, previous, report) == 0  # type: ignore[arg-type]
    nobody = SimpleNamespace(id="n", tenant_id=None, cluster_id=None)
    assert job_usage.meter(Session(), nobody, previous, now) == 0  # type: ignore[arg-type]
