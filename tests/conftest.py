"""Shared fixtures for the Velyrix test suite."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--gpu", action="store_true", default=False, help="run tests that need a real NVIDIA GPU")


SLOW = (
    "tests/reconcile/test_crash_resume.py",  # SIGKILLs a real server at random points, then resumes (minutes)
    "tests/declarations/test_mutations.py",  # thousands of mutated declarations through the loader
    "tests/health/test_evaluation.py",  # the health-policy study over simulated weeks
    "tests/controlplane/test_schemathesis.py",  # generated requests against every operation
    "tests/planners/test_fabric_verify.py::test_every_planned_fabric_verifies_on_its_graph",
    "tests/controlplane/test_fuzz.py",  # Hypothesis fuzzing of every request body and listing
    "tests/identity/test_tls.py::test_tls_1_3_only_by_default_with_hsts",  # each starts `velyrix server` (TLS)
    "tests/identity/test_tls.py::test_tls_1_2_only_when_asked_for",
    "tests/identity/test_tls.py::test_login_verifies_the_certificate_and_the_agent_reports_over_tls",
    "tests/identity/test_scim.py::test_scim2_tester_passes_every_check",  # the third-party SCIM conformance suite
    "tests/identity/test_oidc_browser.py",  # Chromium through a real OpenID provider
    "tests/identity/test_saml_browser.py",  # Chromium through the pysaml2 test IdP
    "tests/reconcile/test_running_cloud_e2e.py",  # the running cloud: server, twin and agents in processes
    "tests/reconcile/test_spontaneous_faults.py::test_up_with_spontaneous_faults_acts_on_precursors_before_the_fault",
    "tests/reconcile/test_up_exporter.py::test_velyrix_up_serves_the_exporter_and_refuses_a_port_in_use",  # processes
    "tests/cli/test_demo_home.py",  # the whole `velyrix demo` in a process
    "tests/controlplane/test_server_without_reconcilers.py",  # `velyrix server` in a process
    "tests/agent/test_agent_tls.py",  # `velyrix server --tls-cert` and `velyrix agent` processes
    "tests/controlplane/test_siem_receivers.py",  # real rsyslog and syslog-ng daemons
    "tests/noc/test_alertmanager.py",  # a real Alertmanager (and Prometheus) daemon
    "tests/identity/test_saml_api.py",  # every response signed by xmlsec1 in a process (the bad-input suite)
    "tests/identity/test_mfa_api.py",  # a real uvicorn and a software FIDO2 authenticator per test
    "tests/controlplane/test_customer_keys.py",  # SoftHSM2 tokens and a PyKMIP server over mutual TLS
    "tests/reconcile/test_state_apply.py",  # whole plan/apply/destroy runs against a served control plane
    "tests/reconcile/test_fleet_api_cli.py",  # the CLI end to end against a served twin
    "tests/noc/test_twin_month.py",  # a month on the twin's clock
    "tests/fleet/redfish/test_up_redfish.py",  # `velyrix up --redfish-port` in a process, DMTF's validator
)
"""Tests marked ``slow`` (``make unit`` skips them; ``make test`` runs everything). Listed here, in one place."""


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        where = item.nodeid.split("[")[0]
        if any(where == s or where.startswith(s + "::") for s in SLOW):
            item.add_marker(pytest.mark.slow)
    if config.getoption("--gpu"):
        return
    skip = pytest.mark.skip(reason="needs a real GPU: run with --gpu")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


@pytest.fixture(scope="session")
def pg_server() -> Iterator[Any]:
    """One real PostgreSQL server (``velyrix.testing.postgres.PostgresServer``) for the whole session; tests
    take a database each with ``create_database``. Skips where the server binaries are not installed."""
    from velyrix.testing import postgres

    if postgres.find_bin_dir() is None:
        pytest.skip("PostgreSQL server binaries not installed (scripts/apt-packages.txt lists them)")
    server = postgres.PostgresServer.start()
    yield server
    server.stop()


@dataclass
class CliResult:
    exit_code: int
    stdout: str
    stderr: str


@pytest.fixture
def velyrix(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> Callable[..., CliResult]:
    """Run the ``velyrix`` entry point in-process, exactly as the console script does."""
    from velyrix.cli import main

    def call(*args: str) -> CliResult:
        monkeypatch.setattr(sys, "argv", ["velyrix", *args])
        code = 0
        try:
            main.run()
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
        out, err = capsys.readouterr()
        return CliResult(code, out, err)

    return call
