"""The health evaluation on the twin: same faults for every policy, proactive catches precursor faults."""

from __future__ import annotations

import json

import pytest

from velyrix import errors
from velyrix.ops.study.evaluation import EvalConfig, Jobs, evaluate, run_policy


@pytest.fixture(scope="module")
def result():
    return evaluate(EvalConfig(days=20, nodes=128, seed=4))


def test_every_policy_sees_the_same_failures(result):
    pol = result["policies"]
    assert pol["none"]["failures"] == pol["reactive"]["failures"] == pol["proactive"]["failures"] > 0
    assert pol["none"]["precursor_failures"] == pol["proactive"]["precursor_failures"] > 0


def test_reactive_beats_none_and_proactive_catches_precursor_faults_before_damage(result):
    pol = result["policies"]
    assert pol["reactive"]["job_interruptions"] <= pol["none"]["job_interruptions"]
    assert pol["none"]["failures_caught_before_job_damage"] == pol["reactive"]["failures_caught_before_job_damage"] == 0
    assert pol["proactive"]["failures_caught_before_job_damage"] >= 1
    assert pol["proactive"]["precursor_job_interruptions"] < pol["reactive"]["precursor_job_interruptions"]
    assert 0 < pol["proactive"]["mean_lead_time_h"] <= 6.0  # the twin's precursor window is 6 h
    assert pol["proactive"]["false_quarantines_pct_nodes_per_month"] <= 1.0
    for key in (
        "job_interruptions",
        "failures_caught_before_job_damage",
        "mean_lead_time_h",
        "false_quarantines",
        "spares_used",
        "gpu_hours_lost",
    ):
        assert all(key in p for p in pol.values())
    json.dumps(result)


def test_same_seed_same_figures():
    cfg = EvalConfig(days=3, nodes=32, seed=9)
    assert run_policy("proactive", cfg) == run_policy("proactive", cfg)


def test_jobs_keep_about_ninety_percent_of_nodes_busy():
    import numpy as np

    cfg = EvalConfig(days=30, nodes=64, seed=1)
    jobs = Jobs(cfg, np.random.default_rng(0))
    busy = [jobs.at(i, t)[0] for i in range(64) for t in np.linspace(0, 30 * 86400, 50)]
    assert 0.85 < sum(busy) / len(busy) < 0.95


def test_bad_arguments_are_user_errors():
    with pytest.raises(errors.InvalidInputError):
        evaluate(EvalConfig(days=0))
    with pytest.raises(errors.UnknownNameError):
        run_policy("procative", EvalConfig(days=1, nodes=8))
