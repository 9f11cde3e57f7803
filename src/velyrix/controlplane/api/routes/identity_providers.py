"""``/v1/identity-providers``: a tenant's single sign-on configuration (OIDC issuer and client, or a SAML
IdP's metadata), the e-mail domains allowed to log in, and how claims and groups map to tenant roles."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from fastapi import APIRouter, Depends
from pydantic import BaseModel, ConfigDict, Field, field_validator

from velyrix import errors
from velyrix.controlplane.api import schemas
from velyrix.controlplane.api.context import Ctx, require
from velyrix.controlplane.auth import roles
from velyrix.controlplane.db.models.identity import IdentityProvider
from velyrix.controlplane.identity import login, saml_checks

router = APIRouter(prefix="/v1/identity-providers", tags=["identity"], responses=schemas.PROBLEM_RESPONSES)
_NAME = r"^[a-z][a-z0-9-]{0,62}$"


_ROLE = schemas.one_of(roles.TENANT_ROLES)
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
    role_map: dict[str, Annotated[str, Field(json_schema_extra=_ROLE)]] = Field(default_factory=dict, max_length=50)
    groups_claim: str = Field("groups", max_length=100)
    group_map: dict[str, Annotated[str, Field(json_schema_extra=_ROLE)]] = Field(default_factory=dict, max_length=200)
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
        bad = sorted(set(value.values()) - set(roles.TENANT_ROLES))
        if bad:
            raise ValueError(f"unknown tenant role {bad[0]!r}; valid: {', '.join(roles.TENANT_ROLES)}")
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
    if ctx.scope.exists(IdentityProvider, name=body.name):
        raise errors.ConflictError(f"identity provider '{body.name}' exists", hint="pick another name")
    row = ctx.scope.add(IdentityProvider(tenant_id=ctx.principal.tenant_id, **body.model_dump()))
    ctx.scope.flush()
    ctx.audit(f"identity-providers/{row.id}", status_code=201, detail={"kind": row.kind, "issuer": row.issuer})
    ctx.commit()
    return out(row)


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
