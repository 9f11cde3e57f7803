"""``PUT /v1/clusters/{id}/connectivity``: the HCL of a private link and a BYOIP session planned and
priced through the API; bad input is a 422 ``spec_invalid`` naming line:column; passwords never stored."""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa

from tests.conftest import EXAMPLES
from tests.controlplane.conftest import World, auth
from velyrix.controlplane.db import models
from velyrix.controlplane.db.models import access as tables


def connectivity_hcl(cluster_name: str) -> str:
    """The example's connectivity resources, put on ``cluster_name`` (no velyrix_cluster block)."""
    text = (EXAMPLES / "acme-connectivity.tf").read_text()
    body = text[text.index('resource "velyrix_private_link"') :]
    return body.replace("velyrix_cluster.train.name", f'"{cluster_name}"').replace(
        "var.bgp_password", '"s3cret-md5-key"'
    )


def name_of(world: World, cluster_id: str) -> str:
    with world.session() as s:
        return str(s.get(models.Cluster, cluster_id).name)


def test_put_plans_and_prices_and_get_reads_it_back(client: Any, world: World) -> None:
    cluster_id = world.cluster(world.a)
    path = f"/v1/clusters/{cluster_id}/connectivity"
    resp = client.put(
        path, json={"hcl": connectivity_hcl(name_of(world, cluster_id))}, headers=auth(world.a.keys["owner"])
    )
    assert resp.status_code == 200, resp.text
    body = resp.json()
    kinds = sorted(i["kind"] for i in body["items"])
    assert kinds == ["bgp_session", "ddos_protection", "private_link"]
    assert body["monthly_usd"] == round(sum(i["cost"]["monthly_usd"] for i in body["items"]), 2) > 0
    assert body["cloud_estimate_monthly_usd"] > 0
    assert "s3cret" not in resp.text
    with world.session() as s:
        stored = list(
            s.scalars(sa.select(tables.ConnectivityObject).where(tables.ConnectivityObject.cluster_id == cluster_id))
        )
    assert stored and all("s3cret" not in str(row.spec) for row in stored)
    again = client.get(path, headers=auth(world.a.keys["viewer"]))
    assert again.status_code == 200 and again.json() == body


def test_bad_connectivity_is_a_422_with_line_and_column(client: Any, world: World) -> None:
    cluster_id = world.cluster(world.a)
    hcl = connectivity_hcl(name_of(world, cluster_id)).replace('"203.0.113.0/24"]', '"203.0.113.0/33"]')
    resp = client.put(f"/v1/clusters/{cluster_id}/connectivity", json={"hcl": hcl}, headers=auth(world.a.keys["owner"]))
    assert resp.status_code == 422 and resp.json()["code"] == "spec_invalid", resp.text
    (diag,) = resp.json()["diagnostics"]
    line = next(n for n, t in enumerate(hcl.splitlines(), 1) if "/33" in t)
    assert (diag["file"], diag["line"], diag["column"]) == ("request body", line, 3)
    assert "/33 is longer than IPv4's 32 bits" in diag["message"]


def test_objects_of_another_cluster_name_are_refused(client: Any, world: World) -> None:
    cluster_id = world.cluster(world.a)
    resp = client.put(
        f"/v1/clusters/{cluster_id}/connectivity",
        json={"hcl": connectivity_hcl("someone-else")},
        headers=auth(world.a.keys["owner"]),
    )
    assert resp.status_code == 422
    assert {d["message"] for d in resp.json()["diagnostics"]} == {"unknown cluster 'someone-else'"}


def test_a_prefix_another_cluster_announces_is_refused_without_naming_it(client: Any, world: World) -> None:
    def hcl(cluster_id: str) -> str:  # a prefix of its own in this module's database
        return connectivity_hcl(name_of(world, cluster_id)).replace("203.0.113.0/24", "192.0.2.0/24")

    theirs = world.cluster(world.b)
    first = client.put(
        f"/v1/clusters/{theirs}/connectivity",
        json={"hcl": hcl(theirs)},
        headers=auth(world.b.keys["owner"]),
    )
    assert first.status_code == 200, first.text
    mine = world.cluster(world.a)
    resp = client.put(
        f"/v1/clusters/{mine}/connectivity",
        json={"hcl": hcl(mine)},
        headers=auth(world.a.keys["owner"]),
    )
    assert resp.status_code == 422 and resp.json()["code"] == "spec_invalid", resp.text
    (diag,) = resp.json()["diagnostics"]
    assert "overlaps a prefix another cluster already announces" in diag["message"]
    assert theirs not in resp.text and world.b.tenant_id not in resp.text and name_of(world, theirs) not in resp.text
