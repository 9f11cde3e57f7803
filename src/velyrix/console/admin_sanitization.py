"""The console's sanitization certificates: the signed NIST SP 800-88 certificates of the nodes and volumes
the tenant's clusters released (``controlplane.evidence.sanitization``, the documents of
``GET /v1/clusters/{id}/sanitization-certificates``), each checked here as ``velyrix verify sanitization``
checks it (an Ed25519 signature by the key of the certificate's region, ``reconcile.signing``) and
downloadable for that command."""

from __future__ import annotations

import json
import re
from typing import Any

from fastapi import APIRouter, Depends, Query, Request
from fastapi.responses import Response

from velyrix import catalog, errors
from velyrix.console import access, render
from velyrix.controlplane.api import schemas
from velyrix.controlplane.api.context import Ctx
from velyrix.controlplane.db.models import evidence
from velyrix.controlplane.evidence import sanitization
from velyrix.controlplane.reconcile import signing

router = APIRouter(include_in_schema=False)
PAGE = 50


def checked(document: dict[str, Any]) -> dict[str, Any]:
    """What the page shows of a certificate, with the verdict of its signature against its region's key
    (``valid``, ``reason``): the certificate of a region this cloud does not have is invalid."""
    found = document.get("report")
    report: dict[str, Any] = found if isinstance(found, dict) else {}
    region = str(report.get("region", ""))
    if report.get("kind") != sanitization.KIND:
        valid, reason = False, "not a sanitization certificate"
    elif region not in catalog.region_names():
        valid, reason = False, f"unknown region {region[:40]!r}"
    else:
        result = signing.verify(document, signing.public_key_b64(region))
        valid, reason = result.valid, result.reason
    return {"report": report, "valid": valid, "reason": reason}


@router.get("/console/sanitization", name="console.sanitization")
def certificates_page(
    request: Request,
    ctx: Ctx = Depends(access.reads("clusters:read")),
    cursor: str = Query("", max_length=61, pattern=f"^$|{schemas.CURSOR_PATTERN}"),
) -> Response:
    """Every certificate of the tenant's clusters (destroyed ones too), oldest first, each verified."""
    rows, nxt = ctx.scope.page(evidence.SanitizationCertificate, filters={}, cursor=cursor or None, limit=PAGE)
    certs = [{"id": r.id, **checked(dict(r.document))} for r in rows]
    return render.page(
        request, "admin_sanitization.html", certificates=certs, next_cursor=nxt, title="Sanitization certificates"
    )


@router.get("/console/sanitization/{certificate_id}.json", name="console.sanitization_certificate")
def certificate(certificate_id: str, ctx: Ctx = Depends(access.reads("clusters:read"))) -> Response:
    """One signed certificate as a file, for ``velyrix verify sanitization FILE``."""
    row = ctx.scope.get(evidence.SanitizationCertificate, certificate_id, "sanitization certificate")
    if not row.document:
        raise errors.NotFoundError(kind="sanitization certificate", name=certificate_id)
    subject = row.document.get("report", {}).get("subject", {})
    name = re.sub(r"[^A-Za-z0-9_.-]", "_", f"{subject.get('kind', 'subject')}-{subject.get('name', row.id)}")
    body = json.dumps(row.document, indent=2, sort_keys=True).encode()
    disposition = f'attachment; filename="{name}.json"'
    return Response(body, media_type="application/json", headers={"content-disposition": disposition})
