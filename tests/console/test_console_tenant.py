"""The tenant's console pages through the running app: apply from the console (the plan and its monthly
price, the loader's problems at their line and column beside the declaration, one cluster however often the
form is sent), volumes by tier, and invoices, credit notes and SLA reports of a month produced by the
product's own billing run (node states written through the fleet's ``transition()``, the month closed with
``POST /v1/billing-months``), as tests/noc/test_scripted_month.py does."""

from __future__ import annotations

import re
import uuid
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from fastapi.testclient import TestClient

from tests.console.conftest import World
from velyrix.controlplane.identity import sessions

SMALL_TYPE = "hgx-h100-8g"
FREE_NODES = 40
"""Free nodes of ``SMALL_TYPE`` the apply tests add to the world's fleet (5% of them are held as spares)."""


def _ensure_free_nodes(app: Any) -> None:
    from velyrix.controlplane.db import models

    with app.state.sessionmaker() as s:
        if s.scalar(sa.select(sa.func.count()).where(models.Node.node_type == SMALL_TYPE)):
            return
        for i in range(FREE_NODES):
            s.add(
                models.Node(
                    name=f"pool-h100-{i:02d}",
                    region="us-east-1",
                    node_type=SMALL_TYPE,
                    provisioning_state="available",
                    fleet_stage="production",
                    labels={},
                )
            )
        s.commit()


def small(name: str, node_type: str = SMALL_TYPE) -> str:
    """A one-node declaration called ``name``."""
    return (
        'provider "velyrix" { region = "us-east-1" }\n\n'
        'resource "velyrix_cluster" "c" {\n'
        f'  name       = "{name}"\n'
        f'  node_type  = "{node_type}"\n'
        "  node_count = 1\n"
        '  fabric     = "spectrum-x"\n'
        '  scheduler  = "kubernetes"\n'
        "}\n"
    )


def declaration_form(app: Any, name: str) -> dict[str, str]:
    """Form fields of a plan or apply of a one-node cluster ``name`` that the fleet can serve."""
    _ensure_free_nodes(app)
    return {"hcl": small(name), "idempotency_key": str(uuid.uuid4())}


@pytest.fixture(scope="module")
def client(world: World) -> Any:
    with TestClient(world.app, base_url="https://testserver") as c:
        yield c


def _as(world: World, role: str) -> tuple[dict[str, str], str]:
    secret = world.acme.sessions[role]
    return {"cookie": f"{sessions.COOKIE}={secret}"}, sessions.csrf_token(secret)


def test_the_console_offers_the_seed_cluster_of_the_examples() -> None:
    from velyrix.console import tenant_apply

    seed = Path(__file__).parents[2] / "examples" / "acme-pretrain.tf"
    assert tenant_apply.SEED == seed.read_text()


def test_the_plan_shows_the_monthly_price_of_the_planner(client: TestClient, world: World) -> None:
    from velyrix.console import tenant_apply
    from velyrix.declarations import loader
    from velyrix.planners import plan as planner

    headers, csrf = _as(world, "member")
    page = client.get("/console/apply", headers=headers)
    assert page.status_code == 200 and 'name="idempotency_key"' in page.text and "acme-pretrain" in page.text
    key = re.search(r'name="idempotency_key" value="([^"]+)"', page.text)
    assert key is not None
    answer = client.post(
        "/console/apply/plan", data={"csrf": csrf, "hcl": tenant_apply.SEED, "idempotency_key": key[1]}, headers=headers
    )
    assert answer.status_code == 200, answer.text[:500]
    expected = planner.plan_cluster(loader.loads(tenant_apply.SEED, "x").clusters[0])["cost"]["monthly_usd"]
    assert f'id="monthly-usd">{expected:,.2f}<' in answer.text
    assert 'id="apply-form"' in answer.text and f'value="{key[1]}"' in answer.text  # the same key to apply with


def test_an_uploaded_declaration_is_planned(client: TestClient, world: World) -> None:
    headers, csrf = _as(world, "member")
    files = {"upload": ("small.tf", small("uploaded-one").encode(), "text/plain")}
    answer = client.post("/console/apply/plan", data={"csrf": csrf, "hcl": ""}, files=files, headers=headers)
    assert answer.status_code == 200 and "uploaded-one: 1" in answer.text


def test_problems_are_shown_beside_the_declaration_at_their_line_and_column(client: TestClient, world: World) -> None:
    headers, csrf = _as(world, "member")
    answer = client.post(
        "/console/apply/plan", data={"csrf": csrf, "hcl": small("typo", "hgx-h100-9g")}, headers=headers
    )
    assert answer.status_code == 422
    assert 'aria-describedby="apply-hcl-error"' in answer.text and 'id="apply-hcl-error"' in answer.text
    problem = re.search(r'<li class="problem">([^<]*)</li>', answer.text)
    assert problem is not None and problem[1].startswith("line 5, column 3: unknown node type"), problem
    assert "hgx-h100-8g" in problem[1]  # the closest valid name
    assert 'id="apply-form"' not in answer.text  # nothing to apply


def test_applying_twice_with_the_form_s_key_creates_one_cluster(client: TestClient, world: World) -> None:
    from velyrix.controlplane.db import models

    headers, csrf = _as(world, "member")
    form = {"csrf": csrf, **declaration_form(world.app, "twice-sent")}
    first = client.post("/console/apply", data=form, headers=headers, follow_redirects=False)
    second = client.post("/console/apply", data=form, headers=headers, follow_redirects=False)
    assert first.status_code == second.status_code == 303
    assert first.headers["location"] == second.headers["location"]
    page = client.get(first.headers["location"], headers=headers)
    assert page.status_code == 200 and "twice-sent" in page.text and "Pending" in page.text
    with world.app.state.sessionmaker() as s:
        rows = list(s.scalars(sa.select(models.Cluster).where(models.Cluster.name == "twice-sent")))
        assert len(rows) == 1 and rows[0].tenant_id == world.acme.id
        targets = (f"clusters/{rows[0].id}", rows[0].id)  # a replay names the id it answered with
        events = list(s.scalars(sa.select(models.AuditEvent).where(models.AuditEvent.target.in_(targets))))
    assert [(e.action, e.outcome) for e in events] == [
        ("console.clusters.create", "success"),
        ("console.clusters.create", "replayed"),
    ]


def test_a_cluster_the_fleet_cannot_serve_is_refused_beside_the_field(client: TestClient, world: World) -> None:
    from velyrix.console import tenant_apply
    from velyrix.controlplane.db import models

    headers, csrf = _as(world, "admin")
    form = {"csrf": csrf, "hcl": tenant_apply.SEED, "idempotency_key": str(uuid.uuid4())}
    answer = client.post("/console/apply", data=form, headers=headers, follow_redirects=False)
    assert answer.status_code == 409 and 'id="apply-hcl-error"' in answer.text
    assert "64 more requested" in answer.text
    with world.app.state.sessionmaker() as s:
        assert not s.scalars(sa.select(models.Cluster).where(models.Cluster.name == "acme-pretrain")).first()
        denied = s.scalars(
            sa.select(models.AuditEvent).where(
                models.AuditEvent.action == "console.clusters.create", models.AuditEvent.outcome == "denied"
            )
        ).first()
    assert denied is not None and denied.status_code == 409


def test_volumes_by_tier_with_their_monthly_price(client: TestClient, world: World) -> None:
    from velyrix import catalog

    headers, _ = _as(world, "viewer")
    page = client.get("/console/volumes", headers=headers)
    assert page.status_code == 200 and world.acme.volume_name in page.text
    price = catalog.storage_tier("parallel_fs").price_usd_per_tb_month
    assert f'class="tier-monthly">{80 * price:,.2f}<' in page.text
