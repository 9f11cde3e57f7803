"""What the tenant admin pages show, for each tenant of the console suite's ``world``: a P1 incident of its
cluster with the NOC's acknowledgement and a note, a signed sanitization certificate of a released node,
an OIDC provider (with a client secret that no page may show), a SCIM token and a user provisioned over
SCIM. ``seed`` returns the ids and names (``Tenant.admin``) the leak test looks for."""

from __future__ import annotations

import datetime as dt
from typing import Any

CLIENT_SECRET = "never-shown-client-secret-"


def seed(s: Any, tenant: Any) -> dict[str, str]:
    from velyrix.controlplane.auth import principals
    from velyrix.controlplane.db import models
    from velyrix.controlplane.db.models.identity import IdentityProvider, User
    from velyrix.controlplane.evidence import sanitization
    from velyrix.fleet import clock
    from velyrix.ops.noc import incidents

    cluster = s.get(models.Cluster, tenant.cluster_id)
    now = clock.now()
    incident, _ = incidents.open_incident(
        s,
        key=f"capacity:{cluster.id}",
        priority="P1",
        title=f"{tenant.name}-train lost 2 nodes",
        tenant_id=tenant.id,
        cluster_id=cluster.id,
        source="control-plane",
        at=now - dt.timedelta(minutes=20),
    )
    incidents.act(s, incident, "ack", actor="noc@provider", text="", at=now - dt.timedelta(minutes=12))
    note = f"{tenant.name}: replacing the nodes from the spare pool"
    incidents.act(s, incident, "note", actor="noc@provider", text=note, at=now - dt.timedelta(minutes=10))
    node = s.query(models.Node).filter_by(cluster_id=cluster.id).order_by(models.Node.id).first()
    result = {
        "method": "purge",
        "media": [{"device": "nvme0n1", "technique": "nvme-sanitize-crypto-erase"}],
        "tool": "nvme-cli",
        "verification": {"method": "read-back sample", "passed": True},
    }
    cert_id = sanitization.issue_node(s, cluster, node, result, "reconciler")
    idp = IdentityProvider(
        tenant_id=tenant.id,
        name=f"{tenant.name}-okta",
        kind="oidc",
        issuer=f"https://{tenant.name}.idp.example",
        client_id=f"{tenant.name}-client-id",
        client_secret=CLIENT_SECRET + tenant.name,
        allowed_domains=[f"{tenant.name}.example"],
        group_map={"gpu-admins": "admin"},
        default_role="viewer",
    )
    s.add(idp)
    scim_key, _ = principals.issue_key(s, tenant_id=tenant.id, name=f"{tenant.name}-scim-token", role="scim")
    user = User(
        tenant_id=tenant.id,
        user_name=f"provisioned@{tenant.name}.example",
        display_name=f"{tenant.name.title()} Provisioned",
        external_id=f"{tenant.name}-ext-1",
        role="member",
        scim={"userName": f"provisioned@{tenant.name}.example"},
    )
    s.add(user)
    s.flush()
    return {
        "incident_id": incident.id,
        "incident_title": incident.title,
        "incident_note": note,
        "certificate_id": cert_id,
        "provider_id": idp.id,
        "provider_name": idp.name,
        "provider_issuer": idp.issuer,
        "client_id": idp.client_id,
        "client_secret": idp.client_secret,
        "scim_key_id": scim_key.id,
        "scim_key_name": scim_key.name,
        "user_id": user.id,
        "user_name": user.user_name,
    }


def step_up(app: Any, secret: str) -> None:
    """Record a fresh step-up in the browser session of ``secret``, as ``/auth/mfa/step-up`` does after a
    security key's assertion (tests/identity/test_mfa_api.py drives that assertion itself)."""
    import sqlalchemy as sa

    from velyrix.controlplane.db.models.identity import UserSession
    from velyrix.controlplane.identity import mfa, sessions

    with app.state.sessionmaker() as s:
        row = s.scalars(sa.select(UserSession).where(UserSession.secret_sha256 == sessions.digest(secret))).one()
        mfa.mark(s, row.id, step_up=True)
        s.commit()


def provider(app: Any, tenant_id: str, name: str) -> str:
    """A new OIDC identity provider of the tenant (for a test that removes one); its id."""
    from velyrix.controlplane.db.models.identity import IdentityProvider

    with app.state.sessionmaker() as s:
        row = IdentityProvider(
            tenant_id=tenant_id, name=name, kind="oidc", issuer="https://gone.example", client_id="c"
        )
        s.add(row)
        s.commit()
        return str(row.id)
