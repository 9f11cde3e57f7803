"""The operator pages for the provider's own staff (``console/operator_*.py``): users of the provider's
tenant (``VELYRIX_PROVIDER_TENANT``) with a provider role who proved a second factor act as provider
staff (``controlplane/identity/provider_staff.py``). The fleet grid shows every tenant's nodes and filters
by GET parameters; the queues show quarantined nodes with their XID/ECC evidence; capacity has the API's
figures; an incident is acknowledged, noted and resolved through the API's route with its timers and
``console.incidents.act`` audit events. Tenant roles get 403 on all of them (test_console_leaks.py)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
import sqlalchemy as sa
from fastapi.testclient import TestClient

from tests.console.conftest import World, incident, sample
from velyrix.controlplane.identity import sessions

PROVIDER = "velyrix-noc"


@dataclass
class Staff:
    """Cookie secrets: ``operator`` and ``auditor`` (second factor proved), ``operator_no_mfa``, and a
    user with the role name ``operator`` in tenant acme (``impostor``)."""

    sessions: dict[str, str]


def _user(s: Any, tenant_id: str, name: str, role: str, mfa: bool) -> str:
    from velyrix.controlplane.db.models.identity import User
    from velyrix.controlplane.identity import login

    user = User(tenant_id=tenant_id, user_name=name, role=role)
    s.add(user)
    s.flush()
    return str(login.start_session(s, user, "oidc", mfa=mfa)[1])


@pytest.fixture(scope="module")
def staff(world: World) -> Iterator[Staff]:
    from velyrix.controlplane.db import models

    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("VELYRIX_PROVIDER_TENANT", PROVIDER)
        with world.app.state.sessionmaker() as s:
            row = models.Tenant(name=PROVIDER, display_name="the provider's NOC")
            s.add(row)
            s.flush()
            found = {
                "operator": _user(s, row.id, "ops@noc.example", "operator", True),
                "auditor": _user(s, row.id, "audit@noc.example", "auditor", True),
                "operator_no_mfa": _user(s, row.id, "new@noc.example", "operator", False),
                "impostor": _user(s, world.acme.id, "ops@acme.example", "operator", True),
            }
            s.commit()
        yield Staff(found)


@pytest.fixture(scope="module")
def client(world: World) -> Iterator[TestClient]:
    with TestClient(world.app, base_url="https://testserver") as c:
        yield c


def _get(client: TestClient, secret: str, url: str) -> Any:
    return client.get(url, headers={"cookie": f"{sessions.COOKIE}={secret}"}, follow_redirects=False)


def _post(client: TestClient, secret: str, url: str, **form: str) -> Any:
    data = {"csrf": sessions.csrf_token(secret), **form}
    return client.post(url, data=data, headers={"cookie": f"{sessions.COOKIE}={secret}"}, follow_redirects=False)


PAGES = ("/console/fleet", "/console/fleet/capacity", "/console/noc/incidents")


def test_only_the_providers_staff_with_a_second_factor_open_the_operator_pages(
    client: TestClient, staff: Staff, world: World
) -> None:
    for url in PAGES:
        assert _get(client, staff.sessions["operator"], url).status_code == 200, url
        assert _get(client, staff.sessions["auditor"], url).status_code == 200, url
        assert _get(client, staff.sessions["operator_no_mfa"], url).status_code == 403, url
        assert _get(client, staff.sessions["impostor"], url).status_code == 403, url
    assert _get(client, staff.sessions["operator"], "/console/fleet/queues").status_code == 200
    assert _get(client, staff.sessions["auditor"], "/console/fleet/queues").status_code == 403  # fleet:operate
    # the impostor's role name gives it nothing in its own tenant either
    assert _get(client, staff.sessions["impostor"], "/console/clusters").status_code == 403


OPERATOR_NAV = ("/console/fleet", "/console/noc/incidents", "/console/fleet/queues", "/console/fleet/capacity")
OPERATOR_NAV += ("/console/rollouts", "/console/contracts")
TENANT_NAV = ("/console/clusters", "/console/keys", "/console/apply", "/console/volumes", "/console/usage")
TENANT_NAV += ("/console/invoices", "/console/incidents", "/console/members", "/console/identity", "/console/audit")
TENANT_NAV += ("/console/sanitization",)


def _nav(page: str) -> set[str]:
    """The links of the page's nav (``templates/base.html``)."""
    nav = page[page.index('<nav aria-label="Console">') : page.index("</nav>")]
    return set(re.findall(r'href="([^"]+)"', nav))


def test_the_nav_of_provider_staff_shows_the_operator_pages_only(
    client: TestClient, staff: Staff, world: World
) -> None:
    for who in ("operator", "auditor"):
        links = _nav(_get(client, staff.sessions[who], "/console/fleet").text)
        assert set(OPERATOR_NAV) <= links and not links & set(TENANT_NAV), (who, links)
    tenant = _nav(_get(client, world.acme.sessions["owner"], "/console/clusters").text)
    assert set(TENANT_NAV) <= tenant and not tenant & set(OPERATOR_NAV), tenant


def test_the_fleet_grid_shows_every_tenants_nodes_and_filters_them(
    client: TestClient, staff: Staff, world: World
) -> None:
    page = _get(client, staff.sessions["operator"], "/console/fleet").text
    for name in world.acme.node_names + world.beta.node_names:
        assert f'title="{name}: allocated / production' in page
    assert page.count('class="n s-allocated"') == len(world.acme.node_names) + len(world.beta.node_names)
    only_beta = _get(client, staff.sessions["operator"], "/console/fleet?tenant=beta").text
    assert all(n in only_beta for n in world.beta.node_names)
    assert not any(f'title="{n}:' in only_beta for n in world.acme.node_names)
    assert "us-east-1, scalable unit 0" in only_beta
    none = _get(client, staff.sessions["operator"], "/console/fleet?state=rma").text
    assert "No node matches these filters." in none
    typo = _get(client, staff.sessions["operator"], "/console/fleet?tenat=beta")
    assert typo.status_code == 422 and "tenant" in typo.text


def test_a_quarantined_node_is_in_the_queue_with_its_evidence(client: TestClient, staff: Staff, world: World) -> None:
    from velyrix.controlplane.db import models
    from velyrix.controlplane.db.models import health as health_tables

    name = world.beta.node_names[1]
    with world.app.state.sessionmaker() as s:
        node = s.scalars(sa.select(models.Node).where(models.Node.name == name)).one()
        node.fleet_stage = "quarantined"
        report = s.scalars(sa.select(health_tables.NodeReport).where(health_tables.NodeReport.node_id == node.id)).one()
        report.sample = sample(name, xid=79, dbe=2)
        report.health_summary = "XID 79 on GPU 3: fallen off the bus"
        s.commit()
    page = _get(client, staff.sessions["operator"], "/console/fleet/queues").text
    row = page.split(f'id="q-{name}"')[1].split("</tr>")[0]
    assert "XID 79 on GPU 3: fallen off the bus" in row and "XID 79&times;2" in row and "2 DBE" in row
    grid = _get(client, staff.sessions["operator"], "/console/fleet?state=quarantined").text
    assert f'title="{name}: allocated / quarantined' in grid and 'class="n s-quarantined"' in grid
    capacity = _get(client, staff.sessions["operator"], "/console/fleet/capacity").text
    assert "<td>hgx-h200-8g</td><td>6</td>" in capacity  # 4 acme + 2 beta nodes


def test_an_operator_acknowledges_notes_and_resolves_a_p1_through_the_api(
    client: TestClient, staff: Staff, world: World
) -> None:
    from velyrix.controlplane.db import models

    with world.app.state.sessionmaker() as s:
        incident_id = incident(s, world.beta)  # the fixture's P1 of beta is active: the same one
        s.commit()
    assert incident_id == world.beta.incident_id
    operator = staff.sessions["operator"]
    listed = _get(client, operator, "/console/noc/incidents?priority=P1").text
    assert world.acme.incident_id in listed and incident_id in listed
    page = _get(client, operator, f"/console/noc/incidents/{incident_id}").text
    assert 'data-timer="first response"' in page and "of 0:15:00" in page  # the default contract's P1 target
    url = f"/console/noc/incidents/{incident_id}/actions"
    assert _post(client, staff.sessions["auditor"], url, action="ack").status_code == 403
    assert _post(client, operator, url, action="ack").status_code == 303
    assert _post(client, operator, url, action="note", text="replacing the node from the spares").status_code == 303
    acked = _get(client, operator, f"/console/noc/incidents/{incident_id}").text
    assert 'id="incident-state">acknowledged' in acked and "replacing the node from the spares" in acked
    assert 'data-timer="next update"' in acked
    assert _post(client, operator, url, action="resolve", text="spare delivered").status_code == 303
    again = _post(client, operator, url, action="ack")
    assert again.status_code == 409 and 'id="act-action-error"' in again.text and "cannot become" in again.text
    bad = _post(client, operator, url, action="explode")
    assert bad.status_code == 422 and 'aria-describedby="act-action-error"' in bad.text
    resolved = _get(client, operator, f"/console/noc/incidents/{incident_id}").text
    assert 'id="incident-state">resolved' in resolved and "met" in resolved
    with world.app.state.sessionmaker() as s:
        events = list(
            s.scalars(sa.select(models.AuditEvent).where(models.AuditEvent.target == f"incidents/{incident_id}"))
        )
        denied = list(
            s.scalars(
                sa.select(models.AuditEvent.status_code).where(
                    models.AuditEvent.action == "console.incidents.act", models.AuditEvent.outcome == "denied"
                )
            )
        )
    done = sorted(e.detail["action"] for e in events if e.outcome == "success")
    assert done == ["ack", "note", "resolve"]
    assert {e.action for e in events} == {"console.incidents.act"}
    assert all(e.actor.endswith("(ops@noc.example)") for e in events if e.outcome == "success")
    assert set(denied) >= {403, 409, 422}


def test_an_operator_releases_or_sends_to_rma_from_the_queue_through_the_api(
    client: TestClient, staff: Staff, world: World
) -> None:
    """The queue's form calls ``nodes.act``: a release of a node whose last report is fatal is refused (409
    ``node_health_not_clean``) beside the field; an empty reason is the API model's 422 beside its field;
    an auditor gets 403; an RMA moves the node and files the record (``console.nodes.act`` audit events)."""
    from velyrix.controlplane.db import models

    name = world.acme.node_names[1]  # its last report: XID 79 and a DBE, level fatal (conftest)
    with world.app.state.sessionmaker() as s:
        node = s.scalars(sa.select(models.Node).where(models.Node.name == name)).one()
        node.fleet_stage = "quarantined"
        node_id = node.id
        s.commit()
    operator, url = staff.sessions["operator"], f"/console/fleet/nodes/{node_id}/actions"
    page = _get(client, operator, "/console/fleet/queues").text
    assert f'id="act-{name}"' in page and f'action="{url}"' in page
    assert _post(client, staff.sessions["auditor"], url, action="rma", reason="x").status_code == 403
    refused = _post(client, operator, url, action="release", reason="false alarm")
    assert refused.status_code == 409, refused.text
    assert f'id="act-{name}-action-error"' in refused.text and "not clean now" in refused.text
    assert f'aria-describedby="act-{name}-action-error"' in refused.text
    empty = _post(client, operator, url, action="rma", reason="")
    assert empty.status_code == 422 and f'id="act-{name}-reason-error"' in empty.text
    sent = _post(client, operator, url, action="rma", reason="GPU 3 fell off the bus twice")
    assert sent.status_code == 303 and sent.headers["location"] == "/console/fleet/queues"
    with world.app.state.sessionmaker() as s:
        assert s.get(models.Node, node_id).fleet_stage == "rma"  # type: ignore[union-attr]
        records = list(s.scalars(sa.select(models.RmaRecord).where(models.RmaRecord.node_id == node_id)))
        events = list(s.scalars(sa.select(models.AuditEvent).where(models.AuditEvent.action == "console.nodes.act")))
    assert [r.reasons for r in records] == [["operator: GPU 3 fell off the bus twice"]]
    done = [e for e in events if e.outcome == "success"]
    assert len(done) == 1 and done[0].detail["to_stage"] == "rma" and done[0].actor.endswith("(ops@noc.example)")
    assert {e.status_code for e in events if e.outcome == "denied"} >= {403, 409, 422}
    queue = _get(client, operator, "/console/fleet/queues").text
    assert (
        f'id="act-{name}"' not in queue and "GPU 3 fell off the bus twice" in queue
    )  # in the RMA queue now, with its event


def test_an_operator_reads_a_rollouts_waves_and_pauses_and_resumes_it_through_the_api(
    client: TestClient, staff: Staff, world: World
) -> None:
    """The rollouts pages read ``rollouts.list``/``rollouts.get``: waves with their nodes, progress and the gate's
    verdict; pause and resume go through ``rollouts.act`` (``console.rollouts.act`` audit events); a move the
    state table forbids (pausing a paused rollout) is 409 beside the field; the auditor gets 403."""
    from tests.console.conftest import rollout
    from velyrix.controlplane.db import models

    with world.app.state.sessionmaker() as s:
        rollout_id = rollout(s, ["gpu-r0", "gpu-r1", "gpu-r2"])
        s.commit()
    operator = staff.sessions["operator"]
    listed = _get(client, operator, "/console/rollouts")
    assert listed.status_code == 200 and f'href="/console/rollouts/{rollout_id}"' in listed.text
    page = _get(client, operator, f"/console/rollouts/{rollout_id}").text
    wave0 = page.split('id="wave-0"')[1].split("</tr>")[0]
    wave1 = page.split('id="wave-1"')[1].split("</tr>")[0]
    assert "canary" in wave0 and "gpu-r0" in wave0 and "1 of 1" in wave0 and "holds" in wave0
    assert "gpu-r1, gpu-r2" in wave1 and "0 of 2" in wave1 and "not judged yet" in wave1
    assert 'id="rollout-state">running' in page
    assert _get(client, staff.sessions["auditor"], f"/console/rollouts/{rollout_id}").status_code == 403
    url = f"/console/rollouts/{rollout_id}/actions"
    assert _post(client, staff.sessions["auditor"], url, action="pause").status_code == 403
    assert _post(client, operator, url, action="pause").status_code == 303
    assert 'id="rollout-state">paused' in _get(client, operator, f"/console/rollouts/{rollout_id}").text
    again = _post(client, operator, url, action="pause")
    assert again.status_code == 409 and 'id="act-action-error"' in again.text
    bad = _post(client, operator, url, action="explode")
    assert bad.status_code == 422 and 'aria-describedby="act-action-error"' in bad.text
    assert _post(client, operator, url, action="resume").status_code == 303
    assert 'id="rollout-state">running' in _get(client, operator, f"/console/rollouts/{rollout_id}").text
    with world.app.state.sessionmaker() as s:
        events = list(s.scalars(sa.select(models.AuditEvent).where(models.AuditEvent.action == "console.rollouts.act")))
    done = [e.detail["action"] for e in events if e.outcome == "success"]
    assert done == ["pause", "resume"] and all(
        e.target == f"rollouts/{rollout_id}" for e in events if e.outcome == "success"
    )
    assert {e.status_code for e in events if e.outcome == "denied"} >= {403, 409, 422}


def test_the_contracts_page_shows_each_tenants_sla_terms_and_maintenance_windows(
    client: TestClient, staff: Staff, world: World
) -> None:
    """Per tenant: the contract ``contracts.get`` answers (here the catalog's default: P1 first response in
    15 min) and the maintenance windows of its clusters; only provider staff open it (leak matrix)."""
    import datetime as dt

    from velyrix.controlplane.db.models import noc as models_noc

    start = dt.datetime(2026, 12, 5, 2, 0, tzinfo=dt.UTC)
    with world.app.state.sessionmaker() as s:
        s.add(
            models_noc.MaintenanceWindow(
                tenant_id=world.acme.id,
                cluster_id=world.acme.cluster_id,
                starts_at=start,
                ends_at=start + dt.timedelta(hours=2),
                announced_at=start - dt.timedelta(days=10),
                label="fabric firmware",
            )
        )
        s.commit()
    page = _get(client, staff.sessions["auditor"], "/console/contracts")
    assert page.status_code == 200, page.text
    acme = page.text.split('id="contract-acme"')[1].split("</section>")[0]
    beta = page.text.split('id="contract-beta"')[1].split("</section>")[0]
    assert "(the catalog's default)" in acme and "first_response_min" in acme and "fabric firmware" in acme
    assert world.acme.cluster_id in acme and "fabric firmware" not in beta


def _self_operated_node(world: World) -> str:
    """A node of a new self-operated cluster of tenant beta (provider orders need its approval); its name."""
    from velyrix.controlplane.db import models

    with world.app.state.sessionmaker() as s:
        cluster = models.Cluster(
            tenant_id=world.beta.id,
            name="beta-self",
            region="us-east-1",
            node_type="hgx-h200-8g",
            node_count=1,
            spec={"operating_mode": "self_operated"},
            plan={},
            phase="Ready",
        )
        s.add(cluster)
        s.flush()
        node = models.Node(
            name="beta-self-gpu-00",
            region="us-east-1",
            node_type="hgx-h200-8g",
            tenant_id=world.beta.id,
            cluster_id=cluster.id,
            provisioning_state="allocated",
            fleet_stage="production",
            labels={},
        )
        s.add(node)
        s.commit()
        return node.name


def test_an_operator_drains_or_reboots_a_node_from_the_fleet_page_through_the_api(
    client: TestClient, staff: Staff, world: World
) -> None:
    """The fleet page's form calls ``nodes.act`` by node name: a drain of a managed cluster's node is done
    and lands on its cluster's events; a reboot on this control plane (no fleet driver) is 409 beside the
    action; an unknown node is 404 beside its name; an empty reason is the API model's 422 beside it; a
    self-operated cluster's node needs the tenant's approval (403 beside it) or a break-glass (a NOC
    incident); an auditor gets 403 and no form (``console.nodes.operate`` audit events)."""
    from velyrix.controlplane.db import models

    operator, url, name = staff.sessions["operator"], "/console/fleet/operate", world.acme.node_names[2]
    assert 'id="operate"' in _get(client, operator, "/console/fleet").text
    assert 'id="operate"' not in _get(client, staff.sessions["auditor"], "/console/fleet").text
    assert _post(client, staff.sessions["auditor"], url, node=name, action="drain", reason="x").status_code == 403
    drained = _post(client, operator, url, node=name, action="drain", reason="leaf switch swap")
    assert drained.status_code == 200 and f"Drain of {name} ordered (provider)" in drained.text, drained.text
    with world.app.state.sessionmaker() as s:
        events = s.get(models.Cluster, world.acme.cluster_id).events  # type: ignore[union-attr]
    assert any(e["reason"] == "ProviderDrain" and "leaf switch swap" in e["message"] for e in events)

    reboot = _post(client, operator, url, node=name, action="reboot", reason="firmware")
    assert reboot.status_code == 409 and 'aria-describedby="op-action-error"' in reboot.text
    assert "drives no fleet" in reboot.text and 'value="firmware"' in reboot.text  # the form keeps its values
    unknown = _post(client, operator, url, node="gpu-nowhere", action="drain", reason="r")
    assert unknown.status_code == 404 and 'id="op-node-error"' in unknown.text
    empty = _post(client, operator, url, node="", action="drain", reason="")
    assert empty.status_code == 422 and 'id="op-reason-error"' in empty.text and 'id="op-node-error"' in empty.text

    own = _self_operated_node(world)
    gated = _post(client, operator, url, node=own, action="drain", reason="fabric work")
    assert gated.status_code == 403 and 'id="op-approval_id-error"' in gated.text, gated.text
    why = "leaf switch replaced tonight, tenant paged with no answer"
    glass = _post(client, operator, url, node=own, action="drain", reason="leaf", break_glass_reason=why)
    assert glass.status_code == 200 and "(break_glass, NOC incident " in glass.text, glass.text
    with world.app.state.sessionmaker() as s:
        audit = list(s.scalars(sa.select(models.AuditEvent).where(models.AuditEvent.target.like("%nodes/%"))))
    mine = [e for e in audit if e.action in ("console.nodes.operate", "access.break_glass")]
    done = [e for e in mine if e.outcome == "success"]
    assert [e.detail["action"] for e in done] == ["drain", "drain"] and done[-1].action == "access.break_glass"
    assert all(e.actor.endswith("(ops@noc.example)") for e in done)
    denied = {e.status_code for e in _denied(world)}
    assert denied >= {403, 404, 409, 422}


def _denied(world: World) -> list[Any]:
    """The denied audit events of the fleet page's form."""
    from velyrix.controlplane.db import models

    with world.app.state.sessionmaker() as s:
        query = sa.select(models.AuditEvent).where(
            models.AuditEvent.action == "console.nodes.operate", models.AuditEvent.outcome == "denied"
        )
        return list(s.scalars(query))
