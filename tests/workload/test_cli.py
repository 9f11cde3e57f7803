"""``velyrix sim workload`` on a delivered cluster, ``velyrix report goodput``, what-if and bad input."""

from __future__ import annotations

import json

import pytest
from sqlalchemy import orm

from tests.scheduler.delivered_seed import add_delivered
from tests.workload.conftest import ACME
from velyrix.controlplane.db import engine, migrate


@pytest.fixture
def home(tmp_path, monkeypatch):
    monkeypatch.setenv("VELYRIX_HOME", str(tmp_path / "home"))
    url = f"sqlite:///{tmp_path / 'cp.db'}"
    monkeypatch.setenv("VELYRIX_DATABASE_URL", url)
    migrate.upgrade(url)
    return tmp_path


@pytest.fixture
def delivered(home):
    """The control plane's acme-pretrain: Ready, 64 allocated nodes (as `velyrix up` + apply leave it)."""
    with orm.Session(engine.make_engine(f"sqlite:///{home / 'cp.db'}")) as s:
        add_delivered(s, "acme-pretrain", [f"use1-h200-su{i // 32:02d}-n{i % 32:02d}" for i in range(64)])
        s.commit()
    return home


def test_the_job_runs_on_the_delivered_clusters_nodes_and_is_reported(delivered, velyrix):
    res = velyrix(
        "sim",
        "workload",
        "acme-pretrain",
        "--from",
        str(ACME),
        "--days",
        "2",
        "--seed",
        "5",
        "--inject",
        "20:xid=79:3",
        "--json",
    )
    assert res.exit_code == 0, res.stderr
    body = json.loads(res.stdout)
    assert body["placed_on"].startswith("delivered cluster acme-pretrain")
    assert body["nodes"][3] == "use1-h200-su00-n03" and len(body["nodes"]) == 64
    failures = [f for f in body["timeline"]["failures"] if f["cause"] == "injected"]
    assert failures[0]["host"] == "use1-h200-su00-n03" and failures[0]["fault"] == "xid 79"
    assert body["measured"]["job_interruptions"] >= 1
    for name in ("run.json", "goodput.svg", "metrics.prom"):
        assert (delivered / "home" / "workloads" / "acme-pretrain" / name).stat().st_size > 0
    svg = (delivered / "home" / "workloads" / "acme-pretrain" / "goodput.svg").read_text()
    assert svg.lstrip().startswith("<?xml") and "<svg" in svg

    report = velyrix("report", "goodput", "acme-pretrain")
    assert report.exit_code == 0, report.stderr
    assert "measured" in report.stdout and "plan" in report.stdout
    assert "interruptions of the job" in report.stdout and "use1-h200-su00-n03" not in report.stderr
    rj = json.loads(velyrix("report", "goodput", "acme-pretrain", "--json").stdout)
    assert rj["measured"]["ettr"] == body["measured"]["ettr"]
    # the run's health is proactive: beside the plan's figure for it (precursor failures caught)
    assert rj["comparison"]["planned_model"].startswith("proactive")
    assert rj["comparison"]["planned_ettr"] == pytest.approx(0.98704, abs=1e-4)
    assert rj["comparison"]["planned_ettr_reactive"] == pytest.approx(0.98546, abs=1e-4)


def test_the_metrics_carry_the_jobs_label_and_the_same_figures(delivered, velyrix):
    from prometheus_client.parser import text_string_to_metric_families

    body = json.loads(velyrix("sim", "workload", "acme-pretrain", "--from", str(ACME), "--days", "1", "--json").stdout)
    text = (delivered / "home" / "workloads" / "acme-pretrain" / "metrics.prom").read_text()
    samples = {s.name: s for f in text_string_to_metric_families(text) for s in f.samples}
    ettr = samples["velyrix_training_ettr_ratio"]
    assert ettr.labels == {"training_job": "acme-pretrain/seed-0", "cluster": "acme-pretrain"}
    assert ettr.value == pytest.approx(body["measured"]["ettr"])
    assert samples["velyrix_training_planned_ettr_ratio"].value == pytest.approx(body["comparison"]["planned_ettr"])


def test_what_if_the_plans_fix_on_a_tenth_of_the_tier(home, velyrix):
    res = velyrix(
        "sim",
        "workload",
        "acme-pretrain",
        "--from",
        str(ACME),
        "--declared",
        "--days",
        "2",
        "--parallel-fs-tb",
        "80",
        "--what-if-fix",
        "--json",
    )
    assert res.exit_code == 0, res.stderr
    w = json.loads(res.stdout)["what_if"]
    assert w["changes"] == ["checkpoint_interval_s = 2700", "checkpoint_mode = async", "parallel_fs_tb = 100"]
    assert w["difference"]["checkpoint_stall_points"] < -5.0 and w["measured"]["checkpoint_stall_share"] < 0.02
    usd = w["difference"]["usd_per_month"]
    assert usd["performance_tier"] == pytest.approx(20 * 42.0)  # 80 -> 100 TB at $42/TB-month
    assert usd["lost_gpu_time"] < 0 and usd["total"] == pytest.approx(usd["performance_tier"] + usd["lost_gpu_time"])


def test_a_cluster_the_control_plane_does_not_have_is_a_clear_error(home, velyrix):
    res = velyrix("sim", "workload", "acme-pretrain", "--from", str(ACME), "--days", "1")
    assert res.exit_code == 2
    assert "acme-pretrain" in res.stderr and "Traceback" not in res.stderr


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["--inject", "soon:xid=79"], "HOURS:FAULT"),
        (["--inject", "1:xid"], "XID needs its number"),
        (["--inject", "1:xid=79:99"], "no job node 99"),
        (["--inject", "100:xid=79"], "outside the run"),
        (["--inject", "1:bogus"], "unknown fault kind"),
        (["--what-if", "intervl=5"], "interval"),
        (["--health", "psychic"], "proactive"),
        (["--days", "0"], "--days"),
        (["--mode", "lazy"], "async"),
    ],
)
def test_bad_options_exit_2_and_say_what_was_expected(home, velyrix, args, says):
    res = velyrix("sim", "workload", "acme-pretrain", "--from", str(ACME), "--declared", "--days", "0.1", *args)
    assert res.exit_code == 2, res.stdout
    assert says in res.stderr and "Traceback" not in res.stderr


def test_report_without_a_run_says_how_to_make_one(home, velyrix):
    res = velyrix("report", "goodput", "acme-pretrain")
    assert res.exit_code == 2 and "velyrix sim workload acme-pretrain" in res.stderr
