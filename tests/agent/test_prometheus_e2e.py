"""A real Prometheus scrapes two node agents and the twin's fleet exporter while a scripted schedule of
jobs runs; GPU-hours per job and per team from PromQL equal what the schedule implies."""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from velyrix.agent import service
from velyrix.agent.collectors.sim import SimCollector
from velyrix.agent.fleet_exporter import fleet_source
from velyrix.fleet.drivers.sim import SimClock, SimRegion
from velyrix.testing.prometheus import JobSchedule, PrometheusServer, ScriptedJob, prometheus_binary

pytestmark = [
    pytest.mark.prometheus,
    pytest.mark.skipif(prometheus_binary() is None, reason="apt-get install prometheus"),
]

RULES = Path(__file__).resolve().parents[2] / "deploy" / "prometheus" / "velyrix-rules.yml"
INTERVAL_S = 1.0


@pytest.fixture(scope="module")
def job_maps(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("job-maps")


@pytest.fixture(scope="module")
def stack(job_maps: Path) -> Iterator[tuple[SimRegion, PrometheusServer, list[str]]]:
    """Four twin nodes: n0 and n1 each behind its own agent, n2 and n3 behind the fleet exporter."""
    tmp_path = job_maps
    region = SimRegion.build("us-east-1", {"hgx-h200-8g": 4}, seed=11, clock=SimClock(speed=1.0))
    hosts = list(region.nodes)
    servers = [
        service.serve(service.MetricsSource([service.NodeSource(SimCollector(region.nodes[h], region), tmp_path / h)]))
        for h in hosts[:2]
    ]
    servers.append(service.serve(fleet_source(region, job_map_root=tmp_path, hostnames=hosts[2:])))
    prom = PrometheusServer(
        {
            "velyrix-agent": [f"127.0.0.1:{s.port}" for s in servers[:2]],
            "velyrix-sim-exporter": [f"127.0.0.1:{servers[2].port}"],
        },
        interval_s=INTERVAL_S,
        rule_files=[RULES],
    )
    try:
        prom.start()
        yield region, prom, hosts
    finally:
        prom.stop()
        for s in servers:
            s.close()


def test_gpu_hours_per_job_and_team_match_the_schedule(stack, job_maps: Path) -> None:
    region, prom, (n0, n1, n2, n3) = stack
    tmp_path = job_maps
    # Durations are whole intervals plus a half, so a series is seen in k or k+1 scrapes: the nominal error
    # is half an interval, which leaves half an interval for scheduling jitter on a busy machine.
    schedule = [
        ScriptedJob("job-a", {n0: list(range(8))}, 0.5, 8.0, user="ada", team="ml", cost_center="cc-100"),
        # spans an agent's node and a fleet-exporter node
        ScriptedJob(
            "job-b", {n1: [0, 1, 2, 3], n2: [0, 1, 2, 3]}, 1.0, 5.5, user="bo", team="ml", cost_center="cc-200"
        ),
        ScriptedJob("job-c", {n3: list(range(8))}, 1.5, 9.0, user="cy", team="vision", cost_center="cc-200"),
        ScriptedJob("job-d", {n1: [4, 5, 6, 7]}, 4.0, 7.5, user="di", team="vision", cost_center="cc-300"),
    ]

    def load(host: str, busy: bool) -> None:
        region.nodes[host].load_pct = 90.0 if busy else 0.0

    player = JobSchedule(schedule, lambda host: tmp_path / host, on_load=load)
    thread = player.run_in_background()
    time.sleep(4.5)
    # mid-schedule: job-b holds 8 GPUs over two scrape targets, and its utilization shows
    live = prom.query_by("hpc_job:velyrix_gpus_allocated:count", "hpc_job")
    assert live.get("job-b") == 8 and live.get("job-a") == 8
    util = prom.query_by("hpc_job:DCGM_FI_DEV_GPU_UTIL:avg", "hpc_job")
    assert util.get("job-a") == pytest.approx(90.0)
    thread.join()
    time.sleep(3 * INTERVAL_S)  # the last epilog's stale markers are scraped

    window = f"{int(time.time() - player.started_at) + 5}s"
    step = f"{int(INTERVAL_S * 1000)}ms"
    per_job = prom.query_by(
        f"sum_over_time(hpc_job:velyrix_gpus_allocated:count[{window}:{step}]) * {INTERVAL_S} / 3600", "hpc_job"
    )
    raw = prom.query_by(
        f'sum by (hpc_job) (count_over_time(velyrix_gpu_responsive{{hpc_job!=""}}[{window}])) * {INTERVAL_S} / 3600',
        "hpc_job",
    )
    assert set(per_job) == set(raw) == {j.job_id for j in schedule}
    for job in schedule:
        expected_h = job.gpu_seconds() / 3600
        tolerance_h = job.gpu_count * INTERVAL_S / 3600  # one scrape interval of the job's GPUs
        assert per_job[job.job_id] == pytest.approx(expected_h, abs=tolerance_h), job.job_id
        assert raw[job.job_id] == pytest.approx(expected_h, abs=tolerance_h), job.job_id

    per_team = prom.query_by(
        f"sum_over_time(team:velyrix_gpus_allocated:sum[{window}:{step}]) * {INTERVAL_S} / 3600", "team"
    )
    per_cc = prom.query_by(
        f"sum_over_time(cost_center:velyrix_gpus_allocated:sum[{window}:{step}]) * {INTERVAL_S} / 3600", "cost_center"
    )
    for key, table, attr in (("team", per_team, "team"), ("cost_center", per_cc, "cost_center")):
        groups = {getattr(j, attr) for j in schedule}
        assert set(table) == groups, key
        for group in groups:
            members = [j for j in schedule if getattr(j, attr) == group]
            expected_h = sum(j.gpu_seconds() for j in members) / 3600
            tolerance_h = sum(j.gpu_count for j in members) * INTERVAL_S / 3600
            assert table[group] == pytest.approx(expected_h, abs=tolerance_h), (key, group)

    # ended jobs left the mapping: no GPU series carries a job label any more
    assert prom.query('velyrix_gpu_responsive{hpc_job!=""}') == []
    assert prom.query("velyrix_job_info") == []


def test_every_dashboard_query_runs_on_prometheus(stack, job_maps: Path) -> None:
    from velyrix.agent import dashboards, jobs
    from velyrix.agent.collectors.sim import region_lock
    from velyrix.fleet.drivers.sim import Fault

    region, prom, (n0, _, n2, _) = stack
    jobs.write_prolog(job_maps / n0, "job-z", [0, 1], user="ada", team="ml", cost_center="cc-100")
    with region_lock(region):
        region.inject(n0, Fault(kind="xid", gpu=0, xid=13))  # on the job's GPU (an agent's node)
        region.inject(n2, Fault(kind="xid", gpu=1, xid=79))  # fatal, on a fleet-exporter node
    time.sleep(3 * INTERVAL_S)
    empty = set()
    for board in dashboards.DASHBOARDS:
        for panel in board.panels:
            for expr, _ in panel.queries:
                concrete = expr.replace("$__range", "1m").replace("$node", ".*").replace("$job", "job-z")
                if not prom.query(concrete):  # a syntax error raises
                    empty.add(panel.title)
    jobs.remove_epilog(job_maps / n0, "job-z")
    # the shipped alert rules run on this Prometheus too: the fatal XID fires at once, the lost GPU is pending
    firing = prom.query('ALERTS{alertname="VelyrixGPUFatalXID", alertstate="firing"}')
    assert [(a["metric"]["Hostname"], a["metric"]["gpu"], a["metric"]["xid"]) for a in firing] == [(n2, "1", "79")]
    pending = prom.query('ALERTS{alertname="VelyrixGPUFallenOffBus"}')
    assert [(a["metric"]["Hostname"], a["metric"]["alertstate"]) for a in pending] == [(n2, "pending")]
    # what a twin with one job a few seconds old cannot show yet: idle allocations need 15 minutes of
    # history, the 1d GPU-hours group evaluates once a minute, GPU-hours in range integrate 1-minute steps
    assert empty <= {
        "Allocated but idle GPUs",
        "Idle allocated GPUs",
        "GPU-hours by team (1d)",
        "GPU-hours by cost center (1d)",
        "GPU-hours in range",
    }, empty


def test_dashboard_12239_queries_all_return_data_on_the_twin(stack) -> None:
    """NVIDIA's dcgm-exporter dashboard (grafana.com 12239, queries vendored in fixtures/) is fully
    populated by the twin's agents and fleet exporter: every panel's query returns series, the Tensor
    Core panel included."""
    import json

    region, prom, hosts = stack
    board = json.loads((Path(__file__).parent / "fixtures" / "grafana-12239-queries.json").read_text())
    assert board["gnetId"] == 12239 and len(board["queries"]) == 8
    for var in board["variables"].values():  # label_values(METRIC, LABEL): the variable has values
        metric, label = re.fullmatch(r"label_values\((\w+), (\w+)\)", var).groups()  # type: ignore[union-attr]
        assert prom.query(f"count by ({label}) ({metric})"), var
    with region_lock_for(region):
        for host in hosts:
            region.nodes[host].load_pct = 60.0
    time.sleep(3 * INTERVAL_S)
    empty = []
    for q in board["queries"]:
        expr = q["expr"].replace("$instance", ".*").replace("$gpu", ".*")
        result = prom.query(expr)
        if not result:
            empty.append(q["panel"])
        elif q["panel"] == "Tensor Core Utilization":
            assert all(float(r["value"][1]) > 0 for r in result), result
    with region_lock_for(region):
        for host in hosts:
            region.nodes[host].load_pct = 0.0
    assert empty == []


def region_lock_for(region: SimRegion):  # type: ignore[no-untyped-def]
    from velyrix.agent.collectors.sim import region_lock

    return region_lock(region)
