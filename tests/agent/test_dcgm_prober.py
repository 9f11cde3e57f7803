"""The DCGM prober against a fake ``dcgmi`` placed first on PATH, ``--prober none``, and the real dcgmi (gpu).

The fixtures in ``fixtures/dcgm`` are written in the shapes DCGM documents (4.x ``"DCGM Diagnostic"`` with
``entity_id`` results, 3.x ``"DCGM GPU Diagnostic"`` with ``gpu_ids`` and a banner line before the JSON);
they are not captures of a real run. The ``gpu`` test runs the real ``dcgmi diag -r 1``.
"""

from __future__ import annotations

import os
import shutil
import stat
import time
from pathlib import Path

import pytest

from velyrix import catalog, errors
from velyrix.agent.checks import suites
from velyrix.agent.checks.runner import CheckContext
from velyrix.agent.collectors import dcgm
from velyrix.agent.collectors.base import NoProber
from velyrix.agent.collectors.sim import SimCollector
from velyrix.fleet.drivers.sim import SimRegion
from velyrix.health.engine import Engine
from velyrix.health.evidence import Evidence
from velyrix.health.ladder import Action, Level

FIXTURES = Path(__file__).parent / "fixtures" / "dcgm"


@pytest.fixture
def fake_dcgmi(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """Install a fake ``dcgmi`` first on PATH: ``install(body)`` writes its shell body; calls are logged."""
    bindir = tmp_path / "bin"
    bindir.mkdir()
    log = tmp_path / "calls.log"
    monkeypatch.setenv("PATH", f"{bindir}{os.pathsep}{os.environ['PATH']}")

    def install(body: str) -> Path:
        exe = bindir / "dcgmi"
        exe.write_text(f'#!/bin/sh\necho "$@" >> {log}\n{body}\n')
        exe.chmod(exe.stat().st_mode | stat.S_IEXEC)
        return log

    return install


@pytest.fixture
def twin():
    region = SimRegion.build("us-east-1", {"hgx-h200-8g": 1}, seed=0)
    node = next(iter(region.nodes.values()))
    region.advance(60.0)
    return region, node


def _ctx(twin, prober) -> CheckContext:
    region, node = twin
    return CheckContext(SimCollector(node, region), prober, catalog.node_type(node.node_type), clock=region.clock.now)


def _by_name(results):
    return {r.name: r for r in results}


def test_quick_check_passes_on_a_passing_level1_run_and_calls_it_once(fake_dcgmi, twin) -> None:
    log = fake_dcgmi(f"cat {FIXTURES / 'r1_pass.json'}")
    results = _by_name(suites.run_tier("quick", _ctx(twin, dcgm.DcgmProber())))
    for name in ("gemm_short", "memtest_short"):
        assert results[name].status == "pass", results[name].detail
        assert "dcgmi diag -r 1" in results[name].detail and "software pass" in results[name].detail
        assert "runs no" in results[name].detail  # level 1 has no kernel: said, not hidden
    assert log.read_text().split("\n")[:-1] == ["diag -r 1 -j"]  # one run serves both probes


def test_a_gpu_failing_dcgm_memory_bandwidth_fails_the_deep_memory_check(fake_dcgmi, twin) -> None:
    fake_dcgmi(f"cat {FIXTURES / 'r3_gpu5_fails.json'}\nexit 226")  # dcgmi exits non-zero when a test fails
    prober = dcgm.DcgmProber()
    report = prober.diag(3)
    assert report.version == "3.3.9" and sorted(report.gpus) == list(range(8))
    bad = dcgm.verdict(report, "mem", 5)
    assert bad.passed is False and bad.value == pytest.approx(2510.4) and "below the minimum" in bad.detail
    good = dcgm.verdict(report, "gemm", 2)
    assert good.passed is True and good.value == pytest.approx(40.02)  # targeted stress gflops -> TFLOPS, own GPU
    results = _by_name(
        suites.run_checks(
            [c for c in suites.suite("deep", _ctx(twin, prober).node_type) if c.name in ("gemm_long", "memtest_long")],
            _ctx(twin, prober),
            60.0,
        )
    )
    assert results["gemm_long"].passed, results["gemm_long"].detail
    mem = results["memtest_long"]
    assert mem.status == "fail" and "gpu5" in mem.detail and "gpu4" not in mem.detail
    verdict = Engine().evaluate(Evidence.build("h", mem.t_s + 1, checks=[mem]))
    assert verdict.action is Action.DRAIN_AFTER_JOB


def test_a_hung_dcgmi_is_killed_at_the_timeout_and_fails(fake_dcgmi, twin) -> None:
    log = fake_dcgmi("sleep 30 &\nwait")  # a child holding the pipes: the whole group must die
    prober = dcgm.DcgmProber(timeouts_s={1: 0.5})
    start = time.monotonic()
    results = _by_name(suites.run_tier("quick", _ctx(twin, prober)))
    assert time.monotonic() - start < 5.0
    for name in ("gemm_short", "memtest_short"):
        assert results[name].status == "error" and "no answer within 0.5 s" in results[name].detail
    assert len(log.read_text().splitlines()) == 1  # the failure is kept, not retried by the second probe


def test_dcgmi_exiting_nonzero_without_json_could_not_run(fake_dcgmi, twin) -> None:
    fake_dcgmi('echo "Error: unable to establish a connection to the specified host: localhost" >&2\nexit 255')
    results = _by_name(suites.run_tier("quick", _ctx(twin, dcgm.DcgmProber())))
    assert results["gemm_short"].status == "error"
    assert "exit 255" in results["gemm_short"].detail and "host: localhost" in results["gemm_short"].detail
    verdict = Engine().evaluate(Evidence.build("h", time.time() + 1e9, checks=list(results.values())))
    assert verdict.level >= Level.DEGRADED and "could not run" in verdict.summary()


def test_missing_dcgmi_says_so_and_fails(twin, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    results = _by_name(suites.run_tier("quick", _ctx(twin, dcgm.DcgmProber())))
    assert results["gemm_short"].status == "error"
    assert results["gemm_short"].detail == "dcgmi not found: install DCGM or choose --prober none"


def test_parse_rejects_output_that_is_not_a_result_and_unknown_statuses_do_not_pass() -> None:
    for text in ("", "Error: could not open /dev/nvidiactl", "{not json"):
        with pytest.raises(errors.DcgmDiagError):
            dcgm.parse_diag(text, 1)
    doc = '{"tests": [{"name": "memory", "results": [{"entity_id": 0, "status": "Inconclusive"}]}]}'
    with pytest.raises(errors.DcgmDiagError, match="no test ran"):
        dcgm.verdict(dcgm.parse_diag(doc, 2), "mem", 0)
    with pytest.raises(errors.DcgmDiagError, match="no result for gpu3"):
        dcgm.verdict(dcgm.parse_diag(doc, 2), "mem", 3)


def test_prober_none_records_skipped_warn_not_a_pass_and_not_a_drain(twin) -> None:
    results = suites.run_tier("quick", _ctx(twin, NoProber()))
    skipped = [r for r in results if r.status == "skipped"]
    assert {r.name for r in skipped} == {"gemm_short", "memtest_short"}
    assert all(not r.passed and r.level == "warn" and "skipped by configuration" in r.detail for r in skipped)
    verdict = Engine().evaluate(Evidence.build("h", max(r.t_s for r in results) + 1, checks=results))
    assert verdict.level is Level.WARN and verdict.action is Action.IGNORE
    assert "skipped by configuration" in verdict.summary()


def test_cli_prober_none_exits_0_with_skipped_in_json_and_dcgm_default_without_dcgmi_exits_1(
    velyrix, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    import json

    res = velyrix("agent", "check", "--quick", "--collector", "sim", "--prober", "none", "--json")
    assert res.exit_code == 0, res.stdout + res.stderr
    out = json.loads(res.stdout)
    assert out["prober"] == "none" and out["verdict"]["level"] in ("warn", 1, "WARN")
    assert {c["name"] for c in out["checks"] if c["status"] == "skipped"} == {"gemm_short", "memtest_short"}
    monkeypatch.setenv("PATH", str(tmp_path))
    res = velyrix("health", "check", "--quick", "--collector", "sim", "--prober", "dcgm")
    assert res.exit_code == 1 and "dcgmi not found" in res.stdout
    assert velyrix("agent", "check", "--prober", "dcmg").exit_code == 2


@pytest.mark.gpu
def test_real_dcgmi_diag_level1_judges_every_gpu() -> None:
    if shutil.which("dcgmi") is None:
        pytest.skip("dcgmi not installed on this GPU machine")
    import pynvml

    pynvml.nvmlInit()
    count = pynvml.nvmlDeviceGetCount()
    prober = dcgm.DcgmProber(timeouts_s={1: 45.0})
    report = prober.diag(1)
    assert sorted(report.gpus) == list(range(count))
    for gpu in range(count):
        res = dcgm.verdict(report, "gemm", gpu)
        assert res.passed is not None and "dcgmi diag -r 1" in res.detail


def test_agent_with_prober_none_exports_a_warn_verdict_naming_the_skipped_tests(velyrix) -> None:
    res = velyrix("agent", "--collector", "sim", "--prober", "none", "--once")
    assert res.exit_code == 0, res.stderr
    assert 'velyrix_node_health_level{Hostname="use1-h200-su00-n00"} 1' in res.stdout
    assert 'velyrix_node_health_action{Hostname="use1-h200-su00-n00"} 0' in res.stdout
    default = velyrix("agent", "--collector", "sim", "--once")
    assert 'velyrix_node_health_level{Hostname="use1-h200-su00-n00"} 0' in default.stdout
    results = suites.skipped_active("quick", 5.0)
    verdict = Engine().evaluate(Evidence.build("h", 6.0, checks=results))
    assert "check gemm_short not run on node: skipped by configuration" in verdict.summary()
