"""``/v1/customer-keys``: a tenant's key-encryption keys in its own HSM (PKCS#11) or key manager (KMIP).

Register (after a probe wrap/unwrap through the tenant's credential), list, read, rotate (every volume's
data key rewrapped, no data touched), destroy (crypto-shredding, with the HSM's answer as evidence), and
the grant: ``PUT .../grant`` grants again with a credential, ``DELETE .../grant`` revokes it. Tenant keys
only: provider staff have no ``cmk:*`` scope. No credential is ever returned.
"""

from __future__ import annotations

import datetime as dt
from typing import Any, Literal

from fastapi import APIRouter, Depends
from pydantic import BaseModel, ConfigDict, Field, model_validator

from velyrix import errors as verrors
from velyrix.controlplane.api import schemas
from velyrix.controlplane.api.context import Ctx, require
from velyrix.controlplane.cmk import errors, service
from velyrix.controlplane.db.models.keys import CustomerKey

RESPONSES = {
    **schemas.PROBLEM_RESPONSES,
    502: {"description": "The tenant's HSM or key manager could not be reached (cmk_unreachable)"},
}
router = APIRouter(prefix="/v1/customer-keys", tags=["customer-keys"], responses=RESPONSES)
PEM_MAX = 65536


class Pkcs11Locator(BaseModel):
    model_config = ConfigDict(extra="forbid")
    module: str = Field(max_length=1024, description="the PKCS#11 library, one the region allows")
    token_label: str = Field(min_length=1, max_length=32, description="CKA_LABEL of the token")
    key_label: str = Field(min_length=1, max_length=128, description="CKA_LABEL of the AES-256 key")


class KmipLocator(BaseModel):
    model_config = ConfigDict(extra="forbid")
    host: str = Field(pattern=r"^[A-Za-z0-9.:-]{1,253}$", description="the key manager, one the region allows")
    port: int = Field(5696, ge=1, le=65535)
    key_id: str = Field(min_length=1, max_length=128, description="Unique Identifier of the AES-256 key")
    ca_pem: str = Field(min_length=1, max_length=PEM_MAX, description="CA certificate of the key manager (PEM)")


class Credential(BaseModel):
    """The grant: a PKCS#11 user PIN, or the KMIP client certificate the tenant issued to Velyrix."""

    model_config = ConfigDict(extra="forbid")
    pin: str | None = Field(None, min_length=1, max_length=256)
    client_cert_pem: str | None = Field(None, max_length=PEM_MAX)
    client_key_pem: str | None = Field(None, max_length=PEM_MAX)

    def for_provider(self, provider: str) -> dict[str, Any]:
        if provider == "pkcs11" and self.pin:
            return {"pin": self.pin}
        if provider == "kmip" and self.client_cert_pem and self.client_key_pem:
            return {"client_cert_pem": self.client_cert_pem, "client_key_pem": self.client_key_pem}
        wanted = "pin" if provider == "pkcs11" else "client_cert_pem and client_key_pem"
        raise errors.KeyInvalidError(f"a {provider} grant needs {wanted}")


_SET: dict[str, Any] = {"type": "string", "minLength": 1}
_LOCATORS: dict[str, dict[str, Any]] = {
    "pkcs11": {
        "pkcs11": {"type": "object"},
        "kmip": {"type": "null"},
        "credential": {"required": ["pin"], "properties": {"pin": _SET}},
    },
    "kmip": {
        "kmip": {"type": "object"},
        "pkcs11": {"type": "null"},
        "credential": {
            "required": ["client_cert_pem", "client_key_pem"],
            "properties": {"client_cert_pem": _SET, "client_key_pem": _SET},
        },
    },
}
"""Per provider: its locator object is required, the other one absent, and the grant it needs (what
``_one_locator`` and ``Credential.for_provider`` check; the schema says the same)."""


class CustomerKeyCreate(BaseModel):
    model_config = ConfigDict(
        extra="forbid",
        json_schema_extra={
            "oneOf": [
                {
                    "properties": {"provider": {"const": provider}, **props},
                    "required": ["provider", provider, "credential"],
                }
                for provider, props in _LOCATORS.items()
            ]
        },
    )
    name: str = Field(pattern=r"^[a-z][a-z0-9-]{0,62}$")
    provider: Literal["pkcs11", "kmip"]
    pkcs11: Pkcs11Locator | None = None
    kmip: KmipLocator | None = None
    credential: Credential

    @model_validator(mode="after")
    def _one_locator(self) -> CustomerKeyCreate:
        if (self.pkcs11 is None) == (self.kmip is None) or getattr(self, self.provider) is None:
            raise ValueError(f"give exactly the '{self.provider}' object for provider {self.provider}")
        return self


class CustomerKeyRotate(BaseModel):
    model_config = ConfigDict(extra="forbid")
    key_label: str | None = Field(None, min_length=1, max_length=128, description="PKCS#11: the new key's label")
    key_id: str | None = Field(None, min_length=1, max_length=128, description="KMIP: the new key's identifier")


class GrantBody(BaseModel):
    model_config = ConfigDict(extra="forbid")
    credential: Credential


class CustomerKeyOut(BaseModel):
    id: str
    tenant_id: str
    name: str
    provider: str
    reference: str
    locator: dict[str, Any]
    key_version: int
    state: str
    created_at: dt.datetime
    rotated_at: dt.datetime | None
    destroyed_at: dt.datetime | None
    volumes: int | None = Field(None, description="volumes whose data key this key wraps")


def _volumes(ctx: Ctx, key_id: str) -> int:
    return service.volume_count(ctx.scope, key_id)


@router.post("", name="customer_keys.create", status_code=201, response_model=CustomerKeyOut)
def create_key(body: CustomerKeyCreate, ctx: Ctx = Depends(require("cmk:admin"))) -> dict[str, Any]:
    """Register a key that lives in the tenant's HSM or key manager; refused unless a probe round-trips."""
    if ctx.scope.exists(CustomerKey, name=body.name):
        raise verrors.ConflictError(f"a customer key named '{body.name}' exists in this tenant")
    locator = (body.pkcs11 or body.kmip).model_dump()  # type: ignore[union-attr]
    credential = body.credential.for_provider(body.provider)
    assert ctx.principal.tenant_id is not None  # cmk:* scopes are tenant scopes only
    key = service.register(ctx.scope, ctx.principal.tenant_id, body.name, body.provider, locator, credential)
    ctx.audit(f"customer-keys/{key.id}", status_code=201, detail={"reference": service.out(key)["reference"]})
    ctx.commit()
    return service.out(key, 0)


@router.get("", name="customer_keys.list", response_model=schemas.Page[CustomerKeyOut])
def list_keys(
    ctx: Ctx = Depends(require("cmk:read")),
    cursor: str | None = Depends(schemas.cursor_param),
    limit: int = Depends(schemas.limit_param),
) -> dict[str, Any]:
    rows, nxt = ctx.scope.page(CustomerKey, filters={}, cursor=cursor, limit=limit)
    return {"items": [service.out(r, _volumes(ctx, r.id)) for r in rows], "next_cursor": nxt}


@router.get("/{cmk_id}", name="customer_keys.get", response_model=CustomerKeyOut)
def get_key(cmk_id: str, ctx: Ctx = Depends(require("cmk:read"))) -> dict[str, Any]:
    key = ctx.scope.get(CustomerKey, cmk_id, "customer key")
    return service.out(key, _volumes(ctx, key.id))


@router.post("/{cmk_id}/rotate", name="customer_keys.rotate", response_model=CustomerKeyOut)
def rotate_key(cmk_id: str, body: CustomerKeyRotate, ctx: Ctx = Depends(require("cmk:admin"))) -> dict[str, Any]:
    """Rewrap every volume's data key with the tenant's new key (data untouched); all or nothing."""
    key = ctx.scope.get(CustomerKey, cmk_id, "customer key")
    field = "key_label" if key.provider == "pkcs11" else "key_id"
    new_ref = getattr(body, field)
    if not new_ref:
        raise errors.KeyInvalidError(f"a {key.provider} key rotates to a new {field}")
    evidence = service.rotate(ctx.scope, key, {field: new_ref})
    ctx.audit(f"customer-keys/{key.id}", detail=evidence)
    ctx.commit()
    return service.out(key, _volumes(ctx, key.id))


@router.post("/{cmk_id}/destroy", name="customer_keys.destroy", response_model=CustomerKeyOut)
def destroy_key(cmk_id: str, ctx: Ctx = Depends(require("cmk:admin"))) -> dict[str, Any]:
    """Destroy the key in the tenant's HSM or key manager: every volume under it becomes unreadable."""
    key = ctx.scope.get(CustomerKey, cmk_id, "customer key")
    evidence = service.destroy(ctx.scope, key)
    ctx.audit(f"customer-keys/{key.id}", detail=evidence)
    ctx.commit()
    return service.out(key, _volumes(ctx, key.id))


@router.put("/{cmk_id}/grant", name="customer_keys.grant", response_model=CustomerKeyOut)
def grant_key(cmk_id: str, body: GrantBody, ctx: Ctx = Depends(require("cmk:admin"))) -> dict[str, Any]:
    """Grant again (a new PIN or client certificate), after a probe through it."""
    key = ctx.scope.get(CustomerKey, cmk_id, "customer key")
    row = service.grant(ctx.scope, key, body.credential.for_provider(key.provider))
    ctx.audit(f"customer-keys/{key.id}", detail={"grant": row.id})
    ctx.commit()
    return service.out(key, _volumes(ctx, key.id))


@router.delete("/{cmk_id}/grant", name="customer_keys.revoke_grant", response_model=CustomerKeyOut)
def revoke_grant(cmk_id: str, ctx: Ctx = Depends(require("cmk:admin"))) -> dict[str, Any]:
    """Revoke Velyrix's grant: the sealed credential is erased; nothing under the key can be read."""
    key = ctx.scope.get(CustomerKey, cmk_id, "customer key")
    revoked = service.revoke_grants(ctx.scope, key)
    ctx.audit(f"customer-keys/{key.id}", detail={"grants_revoked": revoked})
    ctx.commit()
    return service.out(key, _volumes(ctx, key.id))
