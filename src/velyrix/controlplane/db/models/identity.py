"""Tables of identity (migration ``0008``): API-key details (description, last use), users and their
browser sessions, per-tenant identity providers (OIDC, SAML) and the pending logins through them, MFA
(WebAuthn credentials, TOTP secrets, hashed recovery codes) and SCIM groups.

Secrets are never stored: sessions, login states and recovery codes keep a SHA-256; a TOTP seed is the one
exception (the server must compute codes from it) and is kept only for tenants whose policy allows TOTP.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

import sqlalchemy as sa
from sqlalchemy.orm import Mapped, mapped_column

from velyrix.controlplane.db.models.base import Base, utcnow


class ApiKeyDetail(Base):
    """What a key carries beside its rights: a description, and when and from where it was last used
    (written at most once a minute per key: ``velyrix.controlplane.identity.keyuse``)."""

    __tablename__ = "api_key_details"
    tenancy = "global"

    key_id: Mapped[str] = mapped_column(sa.ForeignKey("api_keys.id"), primary_key=True)
    description: Mapped[str] = mapped_column(sa.String(500), default="")
    user_id: Mapped[str | None] = mapped_column(sa.String(32), index=True)
    """The user the key was made by or for (a browser session or ``velyrix login --sso``); revoked with
    the user's deactivation."""
    last_used_at: Mapped[dt.datetime | None] = mapped_column()
    last_used_address: Mapped[str | None] = mapped_column(sa.String(64))


class User(Base):
    """A person of a tenant, known through SSO (OIDC subject, SAML NameID) or SCIM provisioning."""

    __tablename__ = "users"
    __table_args__ = (sa.UniqueConstraint("tenant_id", "user_name", name="uq_users_tenant_user_name"),)
    id_prefix = "usr"

    id: Mapped[str] = mapped_column(sa.String(32), primary_key=True)
    tenant_id: Mapped[str] = mapped_column(sa.ForeignKey("tenants.id"), index=True)
    user_name: Mapped[str] = mapped_column(sa.String(254))
    """Lower-cased e-mail address or SCIM userName; unique per tenant."""
    display_name: Mapped[str] = mapped_column(sa.String(200), default="")
    external_id: Mapped[str | None] = mapped_column(sa.String(200))
    subject: Mapped[str | None] = mapped_column(sa.String(400), index=True)
    """``<issuer>|<sub>`` of the identity provider that last logged the user in."""
    role: Mapped[str] = mapped_column(sa.String(32), default="viewer")
    groups: Mapped[list[Any]] = mapped_column(default=list)
    active: Mapped[bool] = mapped_column(default=True)
    scim: Mapped[dict[str, Any]] = mapped_column(default=dict)
    """The SCIM attributes last written (name, emails, ...), returned as given."""
    created_at: Mapped[dt.datetime] = mapped_column(default=utcnow)
    updated_at: Mapped[dt.datetime] = mapped_column(default=utcnow, onupdate=utcnow)
    version: Mapped[int] = mapped_column(default=1)

    __mapper_args__ = {"version_id_col": version}


class UserSession(Base):
    """A browser session: the cookie holds the secret, the table its SHA-256. Ends at ``expires_at``
    (absolute), after ``idle_timeout_s`` without a request, at logout, or when the user is deactivated."""

    __tablename__ = "user_sessions"
    id_prefix = "ses"
    tenancy = "global"

    id: Mapped[str] = mapped_column(sa.String(32), primary_key=True)
    secret_sha256: Mapped[str] = mapped_column(sa.String(64), unique=True)
    user_id: Mapped[str] = mapped_column(sa.ForeignKey("users.id"), index=True)
    tenant_id: Mapped[str] = mapped_column(sa.String(32), index=True)
    method: Mapped[str] = mapped_column(sa.String(16))
    """``oidc`` or ``saml``."""
    created_at: Mapped[dt.datetime] = mapped_column(default=utcnow)
    last_seen_at: Mapped[dt.datetime] = mapped_column(default=utcnow)
    expires_at: Mapped[dt.datetime] = mapped_column()
    mfa_at: Mapped[dt.datetime | None] = mapped_column()
    """When the user last proved a second factor in this session (at login, or a step-up)."""
    step_up_at: Mapped[dt.datetime | None] = mapped_column()
    """When the user last made a WebAuthn assertion for a sensitive action (migration ``0014``)."""
    ended_at: Mapped[dt.datetime | None] = mapped_column()
    end_reason: Mapped[str | None] = mapped_column(sa.String(32))


class IdentityProvider(Base):
    """One tenant's SSO configuration: an OIDC issuer and client, or a SAML IdP; the domains whose users
    may log in, and how claims and groups become a tenant role."""

    __tablename__ = "identity_providers"
    __table_args__ = (sa.UniqueConstraint("tenant_id", "name", name="uq_identity_providers_tenant_name"),)
    id_prefix = "idp"

    id: Mapped[str] = mapped_column(sa.String(32), primary_key=True)
    tenant_id: Mapped[str] = mapped_column(sa.ForeignKey("tenants.id"), index=True)
    name: Mapped[str] = mapped_column(sa.String(63))
    kind: Mapped[str] = mapped_column(sa.String(8))
    """``oidc`` or ``saml``."""
    issuer: Mapped[str] = mapped_column(sa.String(500))
    """OIDC issuer URL, or the SAML IdP's entity id."""
    client_id: Mapped[str] = mapped_column(sa.String(200), default="")
    client_secret: Mapped[str] = mapped_column(sa.String(500), default="")
    saml_metadata: Mapped[str] = mapped_column(sa.Text, default="")
    """The SAML IdP's metadata XML (its signing certificate and SSO endpoint)."""
    allowed_domains: Mapped[list[Any]] = mapped_column(default=list)
    role_claim: Mapped[str] = mapped_column(sa.String(100), default="")
    role_map: Mapped[dict[str, Any]] = mapped_column(default=dict)
    groups_claim: Mapped[str] = mapped_column(sa.String(100), default="groups")
    group_map: Mapped[dict[str, Any]] = mapped_column(default=dict)
    default_role: Mapped[str] = mapped_column(sa.String(32), default="viewer")
    created_at: Mapped[dt.datetime] = mapped_column(default=utcnow)


class LoginFlow(Base):
    """A login started and not yet finished: the ``state`` (its SHA-256), OIDC nonce and PKCE verifier, or
    the SAML request id; single use, ten minutes."""

    __tablename__ = "login_flows"
    id_prefix = "lgn"
    tenancy = "global"

    id: Mapped[str] = mapped_column(sa.String(32), primary_key=True)
    state_sha256: Mapped[str] = mapped_column(sa.String(64), unique=True)
    provider_id: Mapped[str] = mapped_column(sa.ForeignKey("identity_providers.id"))
    tenant_id: Mapped[str] = mapped_column(sa.String(32))
    nonce: Mapped[str] = mapped_column(sa.String(200), default="")
    code_verifier: Mapped[str] = mapped_column(sa.String(200), default="")
    cli_redirect: Mapped[str] = mapped_column(sa.String(200), default="")
    """``http://127.0.0.1:PORT/...`` of ``velyrix login --sso`` (loopback only), or empty for a browser."""
    cli_challenge: Mapped[str] = mapped_column(sa.String(200), default="")
    result: Mapped[dict[str, Any]] = mapped_column(default=dict)
    created_at: Mapped[dt.datetime] = mapped_column(default=utcnow)
    expires_at: Mapped[dt.datetime] = mapped_column()
    used_at: Mapped[dt.datetime | None] = mapped_column()


class SeenAssertion(Base):
    """A SAML assertion id already accepted (replay refused until it would have expired anyway)."""

    __tablename__ = "saml_seen_assertions"
    tenancy = "global"

    assertion_id: Mapped[str] = mapped_column(sa.String(200), primary_key=True)
    expires_at: Mapped[dt.datetime] = mapped_column()


class MfaCredential(Base):
    """A second factor of a user: a WebAuthn credential (public key, sign count) or a TOTP seed."""

    __tablename__ = "mfa_credentials"
    id_prefix = "mfa"
    tenancy = "global"

    id: Mapped[str] = mapped_column(sa.String(32), primary_key=True)
    user_id: Mapped[str] = mapped_column(sa.ForeignKey("users.id"), index=True)
    kind: Mapped[str] = mapped_column(sa.String(16))
    """``webauthn``, ``totp`` or ``recovery`` (one row per hashed recovery code)."""
    credential_id: Mapped[str] = mapped_column(sa.String(1400), default="")
    public_key: Mapped[str] = mapped_column(sa.Text, default="")
    sign_count: Mapped[int] = mapped_column(default=0)
    secret: Mapped[str] = mapped_column(sa.String(200), default="")
    """TOTP seed (base32), or a recovery code's SHA-256."""
    name: Mapped[str] = mapped_column(sa.String(200), default="")
    created_at: Mapped[dt.datetime] = mapped_column(default=utcnow)
    used_at: Mapped[dt.datetime | None] = mapped_column()


class TenantIdentityPolicy(Base):
    """A tenant's login policy: which second factors count, and the session timeouts (seconds)."""

    __tablename__ = "tenant_identity_policies"
    tenancy = "global"

    tenant_id: Mapped[str] = mapped_column(sa.ForeignKey("tenants.id"), primary_key=True)
    mfa_required: Mapped[bool] = mapped_column(default=True)
    totp_allowed: Mapped[bool] = mapped_column(default=False)
    idle_timeout_s: Mapped[int] = mapped_column(default=30 * 60)
    absolute_timeout_s: Mapped[int] = mapped_column(default=12 * 3600)
    step_up_s: Mapped[int] = mapped_column(default=300)
    """How long a step-up assertion covers sensitive actions (migration ``0014``)."""


class ScimGroup(Base):
    """A SCIM group of a tenant; its members' roles follow the identity provider's ``group_map``."""

    __tablename__ = "scim_groups"
    __table_args__ = (sa.UniqueConstraint("tenant_id", "display_name", name="uq_scim_groups_tenant_name"),)
    id_prefix = "grp"

    id: Mapped[str] = mapped_column(sa.String(32), primary_key=True)
    tenant_id: Mapped[str] = mapped_column(sa.ForeignKey("tenants.id"), index=True)
    display_name: Mapped[str] = mapped_column(sa.String(200))
    external_id: Mapped[str | None] = mapped_column(sa.String(200))
    members: Mapped[list[Any]] = mapped_column(default=list)
    """User ids."""
    created_at: Mapped[dt.datetime] = mapped_column(default=utcnow)
    updated_at: Mapped[dt.datetime] = mapped_column(default=utcnow, onupdate=utcnow)
    version: Mapped[int] = mapped_column(default=1)

    __mapper_args__ = {"version_id_col": version}
