"""``/v1/identity-providers``: a tenant's single sign-on configuration (OIDC issuer and client, or a SAML
IdP's metadata), the e-mail domains allowed to log in, and how claims and groups map to tenant roles (and,
for the provider's own tenant only, ``VELYRIX_PROVIDER_TENANT``, to the provider roles operator and auditor)."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from fastapi import APIRouter, Depends
from pydantic import BaseModel, ConfigDict, Field, field_validator

from velyrix import errors
from velyrix.controlplane.api import schemas
from velyrix.controlplane.api.context import Ctx, require
from velyrix.controlplane.auth import roles
from velyrix.controlplane.db import models
from velyrix.controlplane.db.models.identity import IdentityProvider
from velyrix.controlplane.identity import login, provider_staff, saml_checks

router = APIRouter(prefix="/v1/identity-providers", tags=["identity"], responses=schemas.PROBLEM_RESPONSES)
_NAME = r"^[a-z][a-z0-9-]{0,62}$"


_ROLE = schemas.one_of(roles.TENANT_ROLES)
_MAPPED = schemas.one_of([*roles.TENANT_ROLES, *roles.PROVIDER_ROLES])
"""A map's values: tenant roles, or provider roles in the provider's own tenant (else 403
``identity_provider_role_refused``, ``create``)."""
_NEEDS = {"oidc": "client_id", "saml": "saml_metadata"}
"""The field each kind needs non-empty (``create`` checks it; the schema says it per kind)."""


class ProviderIn(BaseModel):
    model_config = ConfigDict(
        extra="forbid",
        json_schema_extra=schemas.variants(
            "kind", {k: {f: {"type": "string", "minLength": 1}} for k, f in _NEEDS.items()}, required=True
        ),
    )
    name: str = Field(pattern=_NAME, description="short name, e.g. okta")
    kind: Literal["oidc", "saml"]
    issuer: str = Field(min_length=1, max_length=500, description="OIDC issuer URL or the SAML IdP's entity id")
    client_id: str = Field("", max_length=200)
    client_secret: str = Field("", max_length=500, description="OIDC confidential client secret (never returned)")
    saml_metadata: str = Field(
        "",
        max_length=200_000,
        description="SAML IdP metadata XML: an EntityDescriptor of the entity `issuer` with an IDPSSODescriptor, its"
        " signing certificate and an HTTP-Redirect SingleSignOnService (else 422 invalid_input)",
    )
    allowed_domains: list[str] = Field(default_factory=list, max_length=50)
    role_claim: str = Field("", max_length=100)
    role_map: dict[str, Annotated[str, Field(json_schema_extra=_MAPPED)]] = Field(default_factory=dict, max_length=50)
    groups_claim: str = Field("groups", max_length=100)
    group_map: dict[str, Annotated[str, Field(json_schema_extra=_MAPPED)]] = Field(
        default_factory=dict,
        max_length=200,
        description="group name to role; operator and auditor only in the provider's own tenant (else 403"
        " identity_provider_role_refused)",
    )
    default_role: str = Field("viewer", max_length=32, json_schema_extra=_ROLE)

    @field_validator("default_role")
    @classmethod
    def _role(cls, value: str) -> str:
        if value not in roles.TENANT_ROLES:
            raise ValueError(f"unknown tenant role {value!r}; valid: {', '.join(roles.TENANT_ROLES)}")
        return value

    @field_validator("role_map", "group_map")
    @classmethod
    def _roles(cls, value: dict[str, str]) -> dict[str, str]:
        valid = [*roles.TENANT_ROLES, *roles.PROVIDER_ROLES]
        bad = sorted(set(value.values()) - set(valid))
        if bad:
            raise ValueError(f"unknown role {bad[0]!r}; valid: {', '.join(valid)}")
        return value


class ProviderOut(BaseModel):
    id: str
    tenant_id: str
    name: str
    kind: str
    issuer: str
    client_id: str
    allowed_domains: list[str]
    role_claim: str
    role_map: dict[str, str]
    groups_claim: str
    group_map: dict[str, str]
    default_role: str


def out(p: IdentityProvider) -> dict[str, Any]:
    return {f: getattr(p, f) for f in ProviderOut.model_fields}


@router.post("", name="identity_providers.create", status_code=201, response_model=ProviderOut)
def create(body: ProviderIn, ctx: Ctx = Depends(require("tenants:write"))) -> dict[str, Any]:
    """Configure single sign-on for the caller's tenant (owners)."""
    if ctx.principal.tenant_id is None:
        raise errors.PermissionDeniedError("identity providers belong to a tenant", scope="tenants:write")
    if body.kind == "oidc" and not body.client_id:
        raise errors.InvalidInputError("an OIDC provider needs client_id", hint="the client registered at the issuer")
    if body.kind == "saml" and not body.saml_metadata:
        raise errors.InvalidInputError("a SAML provider needs saml_metadata", hint="the IdP's metadata XML")
    if body.kind == "saml":
        saml_checks.check_metadata(body.saml_metadata, body.issuer)
    _check_provider_roles(ctx, body)
    if ctx.scope.exists(IdentityProvider, name=body.name):
        raise errors.ConflictError(f"identity provider '{body.name}' exists", hint="pick another name")
    row = ctx.scope.add(IdentityProvider(tenant_id=ctx.principal.tenant_id, **body.model_dump()))
    ctx.scope.flush()
    ctx.audit(f"identity-providers/{row.id}", status_code=201, detail={"kind": row.kind, "issuer": row.issuer})
    ctx.commit()
    return out(row)


def _check_provider_roles(ctx: Ctx, body: ProviderIn) -> None:
    """403 ``identity_provider_role_refused`` when a map yields a provider role outside the provider's own
    tenant: only its single sign-on may make provider staff (``provider_staff.is_provider_tenant``)."""
    mapped = sorted({*body.role_map.values(), *body.group_map.values()} & set(roles.PROVIDER_ROLES))
    if not mapped or ctx.principal.tenant_id is None:
        return
    tenant = ctx.scope.get(models.Tenant, ctx.principal.tenant_id, "tenant")
    if not provider_staff.is_provider_name(tenant.name):
        raise errors.IdentityError(
            f"only the provider's own tenant may map users to the provider role {mapped[0]!r}",
            reason="provider_role_refused",
            status=403,
            hint="map to a tenant role: " + ", ".join(roles.TENANT_ROLES),
        )


@router.get("", name="identity_providers.list", response_model=schemas.Page[ProviderOut])
def list_providers(
    ctx: Ctx = Depends(require("tenants:read")),
    cursor: str | None = Depends(schemas.cursor_param),
    limit: int = Depends(schemas.limit_param),
) -> dict[str, Any]:
    rows, nxt = ctx.scope.page(IdentityProvider, cursor=cursor, limit=limit)
    return {"items": [out(r) for r in rows], "next_cursor": nxt}


@router.delete("/{provider_id}", name="identity_providers.delete", status_code=204)
def delete(provider_id: str, ctx: Ctx = Depends(require("tenants:write"))) -> None:
    row = ctx.scope.get(IdentityProvider, provider_id, "identity provider")
    login.forget_provider(ctx.scope, row)
    ctx.audit(f"identity-providers/{row.id}", status_code=204)
    ctx.commit()
