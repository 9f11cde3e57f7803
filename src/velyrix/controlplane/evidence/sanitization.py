"""Sanitization certificates: when a node or a volume that held a tenant's data is released, the facts the
driver reports (media, method, technique, tool, verification) become a certificate with the fields of
the NIST SP 800-88 sample certificate of sanitization (who, when, media, method clear/purge/destroy,
tool, verification, destination), signed by the region's key like acceptance reports
(``reconcile.signing``), so ``velyrix verify sanitization FILE`` checks it offline.

Nodes: issued in the teardown's SANITIZING step (``reconcile/teardown.py``). Volumes: issued when the
destroy deletes them (``issue_volumes``), before the rows go.
"""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa
from sqlalchemy import orm

from velyrix.controlplane import scoping
from velyrix.controlplane.audit import log
from velyrix.controlplane.db import models
from velyrix.controlplane.db.models import evidence as ev
from velyrix.controlplane.reconcile import signing
from velyrix.fleet.hardware import StoredHardware

KIND = "velyrix.sanitization-certificate/v1"
STANDARD = "NIST SP 800-88 Rev. 2"
METHODS = ("clear", "purge", "destroy")


def _body(
    cluster: models.Cluster, kind: str, subject: dict[str, Any], result: dict[str, Any], actor: str
) -> dict[str, Any]:
    method = str(result.get("method", ""))
    if method not in METHODS:
        raise ValueError(f"sanitization method {method!r} is not one of {METHODS}")
    verification = dict(result.get("verification") or {})
    return {
        "kind": KIND,
        "standard": STANDARD,
        "tenant_id": cluster.tenant_id,
        "cluster": {"id": cluster.id, "name": cluster.name.split("~deleted-")[0]},
        "region": cluster.region,
        "subject": {"kind": kind, **subject},
        "media": list(result.get("media") or []),
        "sanitization": {
            "method": method,
            "technique": result.get("technique") or sorted({m.get("technique", "") for m in result.get("media", [])}),
            "tool": result.get("tool", ""),
            "operation": result.get("certificate"),
        },
        "verification": {"method": verification.get("method", ""), "passed": bool(verification.get("passed"))},
        "performed_by": actor,
        "performed_at": log.iso(models.utcnow()),
        "destination": "returned to the region's free pool" if kind == "node" else "deleted",
    }


def _store(session: orm.Session, cluster: models.Cluster, kind: str, subject: str, body: dict[str, Any]) -> str:
    cert_id = models.new_id(ev.SanitizationCertificate.id_prefix)
    row = ev.SanitizationCertificate(
        id=cert_id,
        tenant_id=cluster.tenant_id,
        cluster_id=cluster.id,
        subject_kind=kind,
        subject=subject[:200],
        document=signing.sign({**body, "certificate_id": cert_id}, cluster.region),
    )
    session.add(row)
    return row.id


def issue_node(
    session: orm.Session, cluster: models.Cluster, node: models.Node, result: dict[str, Any], actor: str
) -> str:
    """Sign and store the certificate of ``node``'s sanitization (``result``: the driver's); its id."""
    subject = {"name": node.name, "serial": StoredHardware.from_dict(node.hardware).serial, "node_type": node.node_type}
    return _store(session, cluster, "node", node.name, _body(cluster, "node", subject, result, actor))


def issue_volumes(session: orm.Session, cluster: models.Cluster, driver: Any, actor: str) -> list[str]:
    """Sanitize (``driver.sanitize_volume``) and certify every volume of ``cluster`` that the destroy deletes."""
    stmt = sa.select(models.Volume).where(
        models.Volume.cluster_id == cluster.id, models.Volume.forbid_deletion.is_(False)
    )
    ids = []
    for vol in session.scalars(stmt):
        result = driver.sanitize_volume(vol.id, vol.tier, vol.size_tb)
        subject = {"name": vol.name, "volume_id": vol.id, "tier": vol.tier, "size_tb": vol.size_tb}
        ids.append(_store(session, cluster, "volume", vol.name, _body(cluster, "volume", subject, result, actor)))
    return ids


def for_cluster(session: orm.Session, cluster_id: str) -> list[ev.SanitizationCertificate]:
    cert = ev.SanitizationCertificate
    return list(session.scalars(sa.select(cert).where(cert.cluster_id == cluster_id).order_by(cert.id)))


def documents(scope: scoping.Scope, cluster_id: str) -> list[dict[str, Any]]:
    """The signed certificates of a cluster the caller may read (404 for another tenant's cluster)."""
    cluster = scope.get(models.Cluster, cluster_id, "cluster")
    return [dict(row.document) for row in for_cluster(scope.session, cluster.id)]
