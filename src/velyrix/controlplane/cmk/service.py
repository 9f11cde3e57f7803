"""Customer-managed keys: registration, each volume's data key, rotation, destruction and grants.

Inputs are ORM rows of ``velyrix.controlplane.db.models.keys`` and a session; every HSM or key-manager call
goes through the tenant's grant (its sealed credential). A data key is 32 random bytes (AES-256), wrapped by
the tenant's key bound to ``binding(volume)`` and then forgotten; it exists in clear only inside a call of
``volume_key`` and the storage request it serves. Nothing is written when a call to the tenant's key fails
(the caller's transaction rolls back).
"""

from __future__ import annotations

import hashlib
import os
from typing import Any, Protocol

import sqlalchemy as sa
from sqlalchemy import orm

from velyrix import settings
from velyrix.controlplane.cmk import errors, sealing
from velyrix.controlplane.db import models
from velyrix.controlplane.db.models.keys import CustomerKey, CustomerKeyGrant, VolumeDataKey
from velyrix.controlplane.scoping import Scope

DATA_KEY_BYTES = 32


class WrappingKey(Protocol):
    def wrap(self, data_key: bytes, aad: bytes) -> bytes: ...
    def unwrap(self, blob: bytes, aad: bytes) -> bytes: ...
    def destroy(self) -> str: ...


def check_allowed(provider: str, locator: dict[str, Any]) -> None:
    """Refuse a PKCS#11 module or KMIP endpoint the provider has not allowed (``CustomerKeySettings``)."""
    current = settings.load().cmk
    if provider == "pkcs11":
        allowed = [m for m in current.pkcs11_modules.split(":") if m]
        what = locator["module"]
        variable = "VELYRIX_CMK_PKCS11_MODULES"
    else:
        allowed = [e.strip() for e in current.kmip_endpoints.split(",") if e.strip()]
        what = f"{locator['host']}:{locator['port']}"
        variable = "VELYRIX_CMK_KMIP_ENDPOINTS"
    if what not in allowed:
        raise errors.EndpointNotAllowedError(
            f"{provider} {what!r} is not one this region connects to",
            hint=f"allowed: {', '.join(allowed) or '(none)'}; the provider lists them in {variable}",
        )


def wrapping_key(provider: str, locator: dict[str, Any], credential: dict[str, Any]) -> WrappingKey:
    """The tenant's key described by ``locator``, used with ``credential`` (PIN or KMIP client certificate)."""
    check_allowed(provider, locator)
    try:
        if provider == "pkcs11":
            from velyrix.controlplane.cmk.pkcs11_backend import Pkcs11Key

            return Pkcs11Key(locator["module"], locator["token_label"], locator["key_label"], credential["pin"])
        from velyrix.controlplane.cmk.kmip_backend import KmipKey

        return KmipKey(
            locator["host"],
            int(locator["port"]),
            locator["key_id"],
            locator["ca_pem"],
            credential["client_cert_pem"],
            credential["client_key_pem"],
        )
    except KeyError as missing:
        raise errors.KeyInvalidError(f"the {provider} key lacks {missing}") from None


def binding(tenant_id: str, volume_id: str) -> bytes:
    """The additional data a volume's wrapped data key is bound to (moving it to another volume fails)."""
    return f"velyrix-data-key:{tenant_id}:{volume_id}".encode()


def active_grant(session: orm.Session, key: CustomerKey) -> CustomerKeyGrant:
    grant = session.scalars(
        sa.select(CustomerKeyGrant)
        .where(CustomerKeyGrant.key_id == key.id)
        .order_by(CustomerKeyGrant.created_at.desc(), CustomerKeyGrant.id.desc())
        .limit(1)
    ).first()
    if key.state == "destroyed":
        raise errors.KeyDestroyedError(name=key.name, at=key.destroyed_at.isoformat() if key.destroyed_at else "?")
    if grant is None or grant.sealed_credential is None:
        at = grant.revoked_at.isoformat() if grant and grant.revoked_at else "?"
        raise errors.GrantRevokedError(name=key.name, at=at, hint="grant again: velyrix keys cmk grant KEY ...")
    return grant


def key_of(session: orm.Session, key: CustomerKey, locator: dict[str, Any] | None = None) -> WrappingKey:
    """The tenant's key under its active grant (``locator`` overrides where it lives, for rotation)."""
    grant = active_grant(session, key)
    return wrapping_key(key.provider, locator or key.locator, sealing.unseal(grant.sealed_credential or b"", grant.id))


def probe(wrapping: WrappingKey, tenant_id: str) -> None:
    """Wrap and unwrap a random key: the key exists, the credential opens it, and it round-trips."""
    sample = os.urandom(DATA_KEY_BYTES)
    aad = f"velyrix-probe:{tenant_id}".encode()
    if wrapping.unwrap(wrapping.wrap(sample, aad), aad) != sample:
        raise errors.KeyInvalidError("the key returned another value than it wrapped")


def register(
    scope: Scope, tenant_id: str, name: str, provider: str, locator: dict[str, Any], credential: dict[str, Any]
) -> CustomerKey:
    """A new customer key after a probe through ``credential``; the credential is stored sealed only."""
    probe(wrapping_key(provider, locator, credential), tenant_id)
    key = CustomerKey(tenant_id=tenant_id, name=name, provider=provider, locator=locator, state="active")
    scope.add(key)
    grant(scope, key, credential, probed=True)
    return key


def grant(scope: Scope, key: CustomerKey, credential: dict[str, Any], *, probed: bool = False) -> CustomerKeyGrant:
    """A new grant (the tenant's credential, sealed) replacing any standing one, after a probe through it
    unless ``probed`` (the probe runs before anything is written)."""
    if key.state == "destroyed":
        raise errors.KeyDestroyedError(name=key.name, at=key.destroyed_at.isoformat() if key.destroyed_at else "?")
    if not probed:
        probe(wrapping_key(key.provider, key.locator, credential), key.tenant_id)
    revoke_grants(scope, key)
    row = CustomerKeyGrant(tenant_id=key.tenant_id, key_id=key.id)
    row.sealed_credential = sealing.seal(credential, row.id)
    scope.add(row)
    return row


def revoke_grants(scope: Scope, key: CustomerKey) -> int:
    """Erase every sealed credential of ``key``; returns how many grants stood."""
    session, count = scope.session, 0
    for row in session.scalars(sa.select(CustomerKeyGrant).where(CustomerKeyGrant.key_id == key.id)):
        if row.sealed_credential is not None:
            row.sealed_credential, row.revoked_at = None, models.utcnow()
            count += 1
    session.flush()
    return count


def new_volume_key(scope: Scope, key: CustomerKey, tenant_id: str, volume_id: str) -> VolumeDataKey:
    """A fresh data key for the volume ``volume_id`` (not yet added), wrapped by ``key`` only. Nothing is
    written: the caller adds the row with its volume, so a refusal of the tenant's key leaves no trace."""
    data_key = os.urandom(DATA_KEY_BYTES)
    wrapped = key_of(scope.session, key).wrap(data_key, binding(tenant_id, volume_id))
    return VolumeDataKey(
        tenant_id=tenant_id, volume_id=volume_id, key_id=key.id, key_version=key.key_version, wrapped=wrapped
    )


def forget_volume(where: orm.Session | Scope, volume_id: str) -> None:
    """Delete a deleted volume's wrapped data key (nothing on the tier decrypts afterwards)."""
    session = where.session if isinstance(where, Scope) else where
    session.execute(sa.delete(VolumeDataKey).where(VolumeDataKey.volume_id == volume_id))


def volume_count(scope: Scope, key_id: str) -> int:
    """How many volumes' data keys ``key_id`` wraps."""
    stmt = sa.select(sa.func.count()).select_from(VolumeDataKey).where(VolumeDataKey.key_id == key_id)
    return int(scope.session.execute(stmt).scalar_one())


def data_key_row(session: orm.Session, volume_id: str) -> VolumeDataKey | None:
    return session.scalars(sa.select(VolumeDataKey).where(VolumeDataKey.volume_id == volume_id)).first()


def volume_key(scope: Scope, volume: models.Volume) -> tuple[CustomerKey, bytes]:
    """The volume's customer key and its data key in clear (unwrapped by the tenant's key, under its grant).
    Reads only: nothing is written, whatever the tenant's key answers."""
    session = scope.session
    row = data_key_row(session, volume.id)
    if row is None:
        raise errors.NoCustomerKeyError(name=volume.name, hint="create the volume with --cmk KEY (cmk_id)")
    key = session.get(CustomerKey, row.key_id)
    assert key is not None
    return key, key_of(session, key).unwrap(row.wrapped, binding(volume.tenant_id, volume.id))


def rotate(scope: Scope, key: CustomerKey, new_ref: dict[str, Any]) -> dict[str, Any]:
    """Rewrap every data key of ``key`` with the tenant's new key ``new_ref`` (``key_label`` or ``key_id``);
    the volumes' data are not touched. Returns the evidence (counts, old and new references)."""
    session = scope.session
    new_locator = {**key.locator, **new_ref}
    old, new = key_of(session, key), key_of(session, key, new_locator)
    probe(new, key.tenant_id)
    rows = list(session.scalars(sa.select(VolumeDataKey).where(VolumeDataKey.key_id == key.id)))
    now = models.utcnow()
    for row in rows:
        aad = binding(row.tenant_id, row.volume_id)
        row.wrapped = new.wrap(old.unwrap(row.wrapped, aad), aad)
        row.key_version, row.rewrapped_at = key.key_version + 1, now
    evidence = {"rewrapped": len(rows), "from": _ref(key.locator), "to": _ref(new_locator)}
    key.locator, key.key_version, key.rotated_at = new_locator, key.key_version + 1, now
    session.flush()
    return evidence


def destroy(scope: Scope, key: CustomerKey) -> dict[str, Any]:
    """Destroy the tenant's key in its HSM or key manager (crypto-shredding every volume under it), then
    erase the grants. Returns the evidence: the HSM's answer afterwards, and each wrapped key's SHA-256."""
    session = scope.session
    answer = key_of(session, key).destroy()
    rows = list(session.scalars(sa.select(VolumeDataKey).where(VolumeDataKey.key_id == key.id)))
    key.state, key.destroyed_at = "destroyed", models.utcnow()
    revoke_grants(scope, key)
    session.flush()
    return {
        "key": _ref(key.locator),
        "hsm_answer_after_destroy": answer,
        "volumes_shredded": {r.volume_id: hashlib.sha256(r.wrapped).hexdigest() for r in rows},
    }


def _ref(locator: dict[str, Any]) -> str:
    if "key_label" in locator:
        return f"pkcs11:token={locator['token_label']};object={locator['key_label']}"
    return f"kmip://{locator['host']}:{locator['port']}/{locator['key_id']}"


def out(key: Any, volumes: int | None = None) -> dict[str, Any]:
    """The API form of a customer key (no secret: no credential ever leaves the server)."""
    public = {k: v for k, v in key.locator.items() if k != "ca_pem"}
    return {
        "id": key.id,
        "tenant_id": key.tenant_id,
        "name": key.name,
        "provider": key.provider,
        "reference": _ref(key.locator),
        "locator": public,
        "key_version": key.key_version,
        "state": key.state,
        "created_at": key.created_at,
        "rotated_at": key.rotated_at,
        "destroyed_at": key.destroyed_at,
        "volumes": volumes,
    }
