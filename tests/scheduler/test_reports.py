"""Utilization reports from accounting records (synthetic sacct JSON), in every format."""

from __future__ import annotations

import csv
import io
import json

import pytest

from velyrix.ops.scheduler import accounting, report_formats, reports

T0 = 1_800_000_000


def _job(job_id: int, user: str, account: str, gpus: int, submit: int, start: int | None, end: int | None) -> dict:
    return {
        "job_id": job_id,
        "user": user,
        "account": account,
        "time": {
            "submission": T0 + submit,
            "start": T0 + start if start is not None else 0,
            "end": T0 + end if end is not None else 0,
        },
        "tres": {
            "allocated": [
                {"type": "cpu", "name": None, "count": 4},
                {"type": "gres", "name": "gpu", "count": gpus},
                {"type": "gres", "name": "gpu:h200", "count": gpus},
            ]
        },
    }


JOBS = [
    _job(1, "alice", "llm", 8, 0, 100, 3700),  # 8 GPUs x 1 h, 3500 s of it in the period
    _job(2, "bob", "llm", 4, 0, 200, 2000),  # 4 GPUs x 1800 s
    _job(3, "carol", "vision", 2, 50, 50, 7250),  # 2 GPUs x 2 h, half of it after the period
    _job(4, "carol", "vision", 1, 3000, None, None),  # pending, never started
    _job(5, "dave", "search", 16, -500, -400, 3200),  # started before the period
]
COST = {"llm": "research", "vision": "research", "search": "product"}


def _report(**kw) -> dict:
    table = accounting.JobTable.from_records(JOBS)
    return reports.build(table, T0, T0 + 3600, cost_center_of=COST, now=T0 + 4000, **kw)


def test_gpu_hours_per_team_count_only_the_period():
    r = _report()
    teams = {t["team"]: t for t in r["teams"]}
    assert teams["llm"]["gpu_hours"] == pytest.approx((8 * 3500 + 4 * 1800) / 3600)
    assert teams["vision"]["gpu_hours"] == pytest.approx(2 * 3550 / 3600)
    assert teams["search"]["gpu_hours"] == pytest.approx(16 * 3200 / 3600)
    assert teams["vision"]["jobs"] == 2  # one ran, one waited in the period
    ccs = {c["cost_center"]: c for c in r["cost_centers"]}
    assert ccs["research"]["gpu_hours"] == pytest.approx(teams["llm"]["gpu_hours"] + teams["vision"]["gpu_hours"])
    assert r["totals"]["gpu_hours"] == pytest.approx(sum(t["gpu_hours"] for t in r["teams"]))


def test_wait_times_and_top_users():
    r = _report()
    llm = next(t for t in r["teams"] if t["team"] == "llm")
    assert llm["wait_mean_s"] == 150.0
    assert [u["user"] for u in r["top_users"]][:2] == ["dave", "alice"]


def test_busy_gpu_hours_from_telemetry_give_utilization():
    r = _report(busy_gpu_s={1: 8 * 1800.0, 2: 0.0})
    llm = next(t for t in r["teams"] if t["team"] == "llm")
    assert llm["busy_gpu_hours"] == pytest.approx(4.0)
    assert llm["utilization"] == pytest.approx(4.0 / llm["gpu_hours"], rel=1e-3)


def test_every_format_renders_the_same_figures():
    r = _report(busy_gpu_s={1: 3600.0})
    assert json.loads(report_formats.render(r, "json"))["teams"][0]["team"] == r["teams"][0]["team"]
    rows = list(csv.DictReader(io.StringIO(report_formats.render(r, "csv"))))
    team_rows = {x["name"]: float(x["gpu_hours"]) for x in rows if x["level"] == "team"}
    assert team_rows == {t["team"]: t["gpu_hours"] for t in r["teams"]}
    text = report_formats.render(r, "table")
    assert "Per cost center" in text and "research" in text
    page = report_formats.render(r, "html")
    assert page.count("<svg") == 3 and "GPU-hours per team" in page and "<td>search</td>" in page


def test_bad_time_is_a_clear_error():
    from velyrix import errors

    with pytest.raises(errors.InvalidInputError, match="bad time"):
        accounting.to_epoch("yesterday")


def test_a_preempted_job_counts_both_runs_once_and_shares_its_busy_seconds():
    runs = [
        _job(9, "eve", "llm", 8, 0, 100, 400),  # preempted after 300 s
        _job(9, "eve", "llm", 8, 0, 1000, 1900),
    ]  # requeued run, 900 s
    table = accounting.JobTable.from_records(runs)
    r = reports.build(table, T0, T0 + 3600, busy_gpu_s={9: 8 * 600.0}, now=T0 + 4000)
    llm = r["teams"][0]
    assert llm["jobs"] == 1 and r["totals"]["jobs"] == 1
    assert llm["gpu_hours"] == pytest.approx(8 * 1200 / 3600)
    assert llm["busy_gpu_hours"] == pytest.approx(8 * 600 / 3600)
