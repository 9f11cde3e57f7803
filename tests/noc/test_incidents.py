"""Incidents with a lifecycle: the CLI against a real uvicorn (``velyrix noc incidents|show|ack|note|
resolve``), contracts set from HCL by ``velyrix admin contract set``, the lifecycle table, and
escalation's pages at the policy's delays."""

from __future__ import annotations

import datetime as dt
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.controlplane.conftest import Recorder, assert_each_mutation_audited_once
from velyrix.ops.noc import escalation, lifecycle
from velyrix.ops.sla import contract_store
from velyrix.testing import postgres

T0 = dt.datetime(2026, 11, 3, tzinfo=dt.UTC)


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("VELYRIX_HOME", str(tmp_path / "home"))
    for var in ("VELYRIX_DATABASE_URL", "VELYRIX_ENDPOINT", "VELYRIX_API_KEY"):
        monkeypatch.delenv(var, raising=False)
    return tmp_path / "home"


@pytest.fixture
def served(home: Path) -> Iterator[tuple[str, Any]]:
    import uvicorn

    from velyrix.ops.service import create_app

    app = Recorder(create_app())
    port = postgres.free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    while not server.started:
        time.sleep(0.02)
    yield f"http://127.0.0.1:{port}", app
    server.should_exit = True
    thread.join(timeout=10)
    assert_each_mutation_audited_once(app)
    app.state.engine.dispose()


def _key(velyrix: Callable[..., Any], *args: str) -> str:
    result = velyrix(*args)
    assert result.exit_code == 0, result.stderr
    return str(result.stdout.strip().splitlines()[-1])


def test_noc_cli_walks_an_incident_through_its_lifecycle(
    velyrix: Callable[..., Any], served: tuple[str, Any], tmp_path: Path
) -> None:
    url, app = served
    owner = _key(velyrix, "admin", "create-tenant", "acme")
    operator = _key(velyrix, "admin", "create-provider-key", "noc-alice", "--role", "operator")
    from velyrix.controlplane.db import models
    from velyrix.ops.noc import incidents

    with app.state.sessionmaker() as s:
        tenant = s.query(models.Tenant).filter_by(name="acme").one()
        inc, created = incidents.open_incident(
            s,
            key="alert:x",
            priority="P1",
            title="GPU fell off the bus",
            tenant_id=tenant.id,
            cluster_id=None,
            source="alertmanager",
            at=dt.datetime.now(dt.UTC),
        )
        s.commit()
        inc_id = inc.id
    assert created

    assert velyrix("login", "--endpoint", url, "--api-key", operator).exit_code == 0
    listed = velyrix("noc", "incidents", "--state", "open")
    assert listed.exit_code == 0 and inc_id in listed.stdout
    assert velyrix("noc", "ack", inc_id, "-m", "looking").exit_code == 0
    assert "is acknowledged" in velyrix("noc", "note", inc_id, "node drained, replacement provisioning").stdout
    assert velyrix("noc", "resolve", inc_id).exit_code == 0
    again = velyrix("noc", "ack", inc_id)
    assert again.exit_code == 2 and "cannot become acknowledged" in again.stderr

    assert velyrix("login", "--endpoint", url, "--api-key", owner).exit_code == 0
    shown = velyrix("noc", "show", inc_id, "--json")
    assert shown.exit_code == 0, shown.stderr
    import json

    data = json.loads(shown.stdout)
    assert data["state"] == "resolved" and "noc-alice" in data["owner"]
    assert [e["kind"] for e in data["timeline"]] == ["opened", "state", "note", "state"]
    refused = velyrix("noc", "ack", inc_id)  # a tenant key cannot act for the NOC
    assert refused.exit_code == 2 and "incidents:write" in refused.stderr + refused.stdout

    with app.state.sessionmaker() as s:
        from velyrix.controlplane.db import models as m

        acts = s.query(m.AuditEvent).filter_by(action="incidents.act", target=f"incidents/{inc_id}").all()
        assert [a.outcome for a in acts].count("success") == 3


def test_admin_contract_set_reports_every_problem_then_stores_a_valid_one(
    velyrix: Callable[..., Any], home: Path, tmp_path: Path
) -> None:
    assert velyrix("admin", "create-tenant", "acme").exit_code == 0
    bad = tmp_path / "bad.hcl"
    bad.write_text('contract "gold" {\n  availabilty_target_percent = 99.95\n  measure = "minutes"\n}\n')
    result = velyrix("admin", "contract", "set", "acme", str(bad))
    assert result.exit_code == 2
    assert f"{bad}:2:3: unknown attribute 'availabilty_target_percent'" in result.stderr
    assert "did you mean 'availability_target_percent'" in result.stderr
    good = tmp_path / "gold.hcl"
    good.write_text('contract "gold" {\n  availability_target_percent = 99.95\n  maintenance_notice_days = 7\n}\n')
    ok = velyrix("admin", "contract", "set", "acme", str(good))
    assert ok.exit_code == 0, ok.stderr
    assert "target 99.95%" in ok.stdout
    from velyrix.controlplane import db
    from velyrix.controlplane.db.models import noc as models_noc

    with db.session() as s:
        tenant = s.query(db.models.Tenant).filter_by(name="acme").one()
        terms = contract_store.contract_for(s, tenant.id)
        assert str(terms.availability_target_percent) == "99.95" and terms.maintenance_notice_days == 7
        assert s.query(models_noc.SlaContract).count() == 1
        assert s.query(db.models.AuditEvent).filter_by(action="contracts.set").count() == 1


class _Inc:
    number, state = "INC-1", "open"
    acknowledged_at = first_response_at = last_update_at = mitigated_at = resolved_at = None


def test_lifecycle_table_refuses_skipping_back_and_stamps_first_response() -> None:
    inc = _Inc()
    lifecycle.note(inc, actor="a", text="seen", at=T0 + dt.timedelta(minutes=4))
    lifecycle.transition(inc, "acknowledged", actor="a", reason="mine", at=T0 + dt.timedelta(minutes=9))
    assert inc.first_response_at == T0 + dt.timedelta(minutes=4)  # the note came first
    lifecycle.transition(inc, "resolved", actor="a", reason="fixed", at=T0 + dt.timedelta(hours=1))
    with pytest.raises(lifecycle.InvalidIncidentTransitionError):
        lifecycle.transition(inc, "acknowledged", actor="a", reason="x", at=T0)
    lifecycle.transition(inc, "postmortem", actor="a", reason="written", at=T0)
    assert lifecycle.TABLE["postmortem"] == frozenset()


def test_unacknowledged_p1_pages_each_level_at_its_delay_then_reescalates_without_updates() -> None:
    pol = escalation.policy("default")
    kw: dict[str, Any] = {"pages_sent": 0, "last_level": -1, "last_update_at": None, "reescalated_at": None}
    due = escalation.due(pol, state="open", opened_at=T0, update_every_min=30, now=T0 + dt.timedelta(minutes=14), **kw)
    assert [p.level for p in due] == [0]
    due = escalation.due(pol, state="open", opened_at=T0, update_every_min=30, now=T0 + dt.timedelta(minutes=15), **kw)
    assert [(p.level, p.due_at) for p in due] == [(0, T0), (1, T0 + dt.timedelta(minutes=15))]
    kw.update(pages_sent=2, last_level=1)
    after_ack = T0 + dt.timedelta(minutes=20)
    kw["last_update_at"] = after_ack
    quiet = escalation.due(pol, state="acknowledged", opened_at=T0, update_every_min=30, now=after_ack, **kw)
    assert quiet == []
    late = escalation.due(
        pol, state="acknowledged", opened_at=T0, update_every_min=30, now=after_ack + dt.timedelta(minutes=30), **kw
    )
    assert [p.level for p in late] == [2] and late[0].index == -1


def test_sweep_sends_due_pages_once_and_records_them_on_the_timeline(tmp_path: Path) -> None:
    from velyrix.controlplane.db.models import noc as models_noc
    from velyrix.ops.noc import incidents
    from velyrix.ops.service import create_app

    app = create_app(f"sqlite:///{tmp_path / 'n.db'}")
    sent: list[tuple[str, dict[str, Any]]] = []
    with app.state.sessionmaker() as s:
        inc, _ = incidents.open_incident(
            s, key="k", priority="P1", title="down", tenant_id=None, cluster_id=None, source="test", at=T0
        )
        assert incidents.sweep(s, T0 + dt.timedelta(minutes=1), lambda t, c: sent.append((t, c))) != []
        assert incidents.sweep(s, T0 + dt.timedelta(minutes=2), lambda t, c: sent.append((t, c))) == []
        incidents.sweep(s, T0 + dt.timedelta(minutes=16), lambda t, c: sent.append((t, c)))
        assert [t for t, _ in sent] == ["email:noc-oncall@velyrix.example", "email:noc-lead@velyrix.example"]
        pages = [e for e in incidents.timeline(s, inc.id) if e.kind == "page"]
        assert len(pages) == 2
        assert s.query(models_noc.IncidentState).one().pages_sent == 2
    app.state.engine.dispose()
