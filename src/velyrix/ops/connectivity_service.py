"""What ``ops/connectivity_routes.py`` does on the principal's scoped view of the database: validate,
plan and store a cluster's connectivity objects (passwords removed), and read them back."""

from __future__ import annotations

import dataclasses
import ipaddress
from typing import Any

import sqlalchemy as sa

from velyrix import errors
from velyrix.controlplane import scoping
from velyrix.controlplane.db import models
from velyrix.controlplane.db.models import access as tables
from velyrix.declarations import connectivity
from velyrix.declarations import connectivity_specs as specs
from velyrix.planners import connectivity as planner


def _stored_spec(obj: Any) -> dict[str, Any]:
    spec = dataclasses.asdict(obj)
    if "peering" in spec:
        spec["peering"].pop("md5_password", None)
    spec.pop("position", None)
    return spec


def _answer(cluster_id: str, rows: list[tables.ConnectivityObject]) -> dict[str, Any]:
    items = [row.plan for row in rows]
    return {
        "cluster_id": cluster_id,
        "items": items,
        "monthly_usd": round(sum(i["cost"]["monthly_usd"] for i in items), 2),
        "cloud_estimate_monthly_usd": round(
            sum(i["cloud_estimate"]["monthly_usd"] for i in items if i.get("cloud_estimate")), 2
        ),
    }


def _rows(scope: scoping.Scope, cluster_id: str) -> list[tables.ConnectivityObject]:
    table = tables.ConnectivityObject
    q = scope.select(table).where(table.cluster_id == cluster_id).order_by(table.address)
    return list(scope.session.scalars(q))


def _announced_elsewhere(scope: scoping.Scope, cluster_id: str, conn: specs.ConnectivityFile) -> None:
    """A BYOIP prefix that overlaps one another cluster (of any tenant) already announces is refused
    (422 ``spec_invalid`` at the session): one origin per address. The other cluster is not named."""
    table = tables.ConnectivityObject
    stored = scope.session.execute(
        sa.select(table.spec).where(table.kind == "bgp_session", table.cluster_id != cluster_id)
    )
    taken = [ipaddress.ip_network(p) for (spec,) in stored for p in spec.get("prefixes", [])]
    problems = []
    for session in conn.bgp_sessions:
        for text in session.prefixes:
            net = ipaddress.ip_network(text)
            if any(net.version == other.version and net.overlaps(other) for other in taken):
                pos = session.position
                problems.append(
                    errors.Diagnostic(
                        pos.file,
                        pos.line,
                        pos.column,
                        f"BYOIP prefix {text} of {session.address} overlaps a prefix another cluster already announces",
                        expected="a prefix announced from one cluster only",
                    )
                )
    if problems:
        raise errors.SpecError(problems)


_KINDS = {specs.PrivateLink: "private_link", specs.BgpSession: "bgp_session", specs.Vpn: "vpn"}


def put(scope: scoping.Scope, cluster_id: str, hcl: str) -> dict[str, Any]:
    """Replace the cluster's connectivity objects by those ``hcl`` declares (``SpecError`` when any
    problem); returns what ``get`` answers. The caller audits and commits."""
    cluster = scope.get(models.Cluster, cluster_id, "cluster")
    conn = connectivity.loads(hcl, "request body", known_clusters=[cluster.name])
    _announced_elsewhere(scope, cluster.id, conn)
    planned = {item["address"]: item for item in planner.plan(conn)["items"]}
    for row in _rows(scope, cluster.id):
        scope.session.delete(row)
    scope.session.flush()
    objects: list[specs.PrivateLink | specs.BgpSession | specs.Vpn] = [
        *conn.private_links,
        *conn.bgp_sessions,
        *conn.vpns,
    ]
    for obj in objects:
        scope.session.add(
            tables.ConnectivityObject(
                tenant_id=cluster.tenant_id,
                cluster_id=cluster.id,
                address=obj.address,
                kind=_KINDS[type(obj)],
                spec=_stored_spec(obj),
                plan=planned[obj.address],
            )
        )
    for address, item in planned.items():
        if item["kind"] == "ddos_protection":
            scope.session.add(
                tables.ConnectivityObject(
                    tenant_id=cluster.tenant_id,
                    cluster_id=cluster.id,
                    address=address,
                    kind="ddos_protection",
                    spec={},
                    plan=item,
                )
            )
    scope.session.flush()
    return _answer(cluster.id, _rows(scope, cluster.id))


def get(scope: scoping.Scope, cluster_id: str) -> dict[str, Any]:
    """The cluster's connectivity objects as planned and priced."""
    cluster = scope.get(models.Cluster, cluster_id, "cluster")
    return _answer(cluster.id, _rows(scope, cluster.id))
