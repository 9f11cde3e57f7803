"""SCIM 2.0 resources of a tenant (RFC 7643) on the ``users`` and ``scim_groups`` tables, validated,
patched and filtered with scim2-models: a resource is stored as the SCIM attributes the client wrote,
beside the columns Velyrix reads (userName, active, externalId, role). Deactivating a user (``active``
false, or DELETE) ends their sessions and revokes their keys in the same transaction; group membership
sets members' roles through the tenant's identity providers' ``group_map``."""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa
from scim2_models import Context, Group, User
from sqlalchemy import orm

from velyrix import errors
from velyrix.controlplane.db import models
from velyrix.controlplane.db.models.identity import IdentityProvider, MfaCredential, ScimGroup, UserSession
from velyrix.controlplane.db.models.identity import User as UserRow
from velyrix.controlplane.identity import keyuse, oidc, provider_staff, sessions

MAX_RESULTS = 200
MAX_MEMBERS = 1000


def scim_error(status: int, detail: str, scim_type: str | None = None) -> errors.IdentityError:
    """An error answered as a SCIM Error message (``identity_scim_<scimType or status>``)."""
    exc = errors.IdentityError(detail, reason="scim_" + (scim_type or str(status)), status=status)
    exc.fields["scim_type"] = scim_type
    return exc


def meta(kind: str, row: Any, base: str) -> dict[str, Any]:
    return {
        "resourceType": kind,
        "created": row.created_at.isoformat(),
        "lastModified": row.updated_at.isoformat(),
        "location": f"{base}/{kind}s/{row.id}",
        "version": f'W/"{row.version}"',
    }


def user_doc(row: UserRow, base: str) -> dict[str, Any]:
    stored = {k: v for k, v in row.scim.items() if k != "_groups"}
    doc = {**stored, "id": row.id, "userName": stored.get("userName", row.user_name)}
    if stored.get("active") is None:  # not written: shown as absent (and the user may log in)
        doc.pop("active", None)
    elif not row.active:
        doc["active"] = False
    if row.external_id is not None:
        doc["externalId"] = row.external_id
    doc["meta"] = meta("User", row, base)
    if _memberships(row):
        doc["groups"] = _memberships(row)
    doc["schemas"] = ["urn:ietf:params:scim:schemas:core:2.0:User"]
    return doc


def _memberships(row: UserRow) -> list[dict[str, Any]]:
    return [g for g in row.scim.get("_groups", []) if isinstance(g, dict)]


def group_doc(row: ScimGroup, base: str) -> dict[str, Any]:
    doc: dict[str, Any] = {"schemas": ["urn:ietf:params:scim:schemas:core:2.0:Group"], "id": row.id}
    doc["displayName"] = row.display_name
    if row.external_id is not None:
        doc["externalId"] = row.external_id
    doc["members"] = [dict(m) for m in row.members]
    doc["meta"] = meta("Group", row, base)
    return doc


def parse(model: type[Any], body: Any, ctx: Context) -> Any:
    """``body`` as ``model`` in the request context ``ctx``; 400 ``invalidValue``/``invalidSyntax`` otherwise."""
    if not isinstance(body, dict):
        raise scim_error(400, "the body must be a JSON object", "invalidSyntax")
    try:
        return model.model_validate(body, scim_ctx=ctx)
    except Exception as exc:  # pydantic ValidationError or scim2-models' own exceptions
        raise scim_error(400, f"invalid {model.__name__}: {str(exc)[:500]}", "invalidValue") from exc


def dumped(obj: Any) -> dict[str, Any]:
    """The attributes of a validated resource to store (no id, meta or schemas)."""
    data: dict[str, Any] = obj.model_dump(scim_ctx=Context.DEFAULT)
    for key in ("id", "meta", "schemas", "groups", "password"):  # sign-in is SSO only: no password kept
        data.pop(key, None)
    return data


def write_user(session: orm.Session, row: UserRow, user: Any) -> None:
    """Store a validated SCIM ``User`` on ``row``; 409 ``uniqueness`` when another user has its userName."""
    name = str(user.user_name or "").strip()
    if not name or len(name) > 254:
        raise scim_error(400, "userName is required (at most 254 characters)", "invalidValue")
    clash = session.scalar(
        sa.select(UserRow.id).where(
            UserRow.tenant_id == row.tenant_id, sa.func.lower(UserRow.user_name) == name.lower(), UserRow.id != row.id
        )
    )
    if clash is not None:
        raise scim_error(409, f"userName {name!r} is taken in this tenant", "uniqueness")
    was_active = row.active if row.id and row.active is not None else True
    memberships = row.scim.get("_groups", []) if row.scim else []
    data = dumped(user)
    row.user_name = name.lower() if "@" in name else name
    row.scim = {**data, "userName": name, "_groups": memberships}
    row.external_id = user.external_id
    row.active = user.active is not False
    row.display_name = str(user.display_name or name)[:200]
    session.add(row)
    session.flush()
    if was_active and not row.active:
        deactivate(session, row)


def deactivate(session: orm.Session, row: UserRow) -> None:
    """End every session of the user and revoke the keys made by or for them."""
    sessions.end_all(session, row.id, "user_deactivated")
    ids = keyuse.keys_of_user(session, row.id)
    if ids:
        session.execute(
            sa.update(models.ApiKey)
            .where(models.ApiKey.id.in_(ids), models.ApiKey.revoked_at.is_(None))
            .values(revoked_at=models.utcnow())
        )


def as_user(row: UserRow, base: str) -> Any:
    return User.model_validate(user_doc(row, base), scim_ctx=Context.DEFAULT)


def as_group(row: ScimGroup, base: str) -> Any:
    return Group.model_validate(group_doc(row, base), scim_ctx=Context.DEFAULT)


def write_group(session: orm.Session, row: ScimGroup, group: Any, base: str) -> None:
    """Store a validated SCIM ``Group``: members must be users of the tenant (400 otherwise); their
    roles follow the new memberships."""
    name = str(group.display_name or "").strip()
    if not name or len(name) > 200:
        raise scim_error(400, "displayName is required (at most 200 characters)", "invalidValue")
    clash = session.scalar(
        sa.select(ScimGroup.id).where(
            ScimGroup.tenant_id == row.tenant_id, ScimGroup.display_name == name, ScimGroup.id != row.id
        )
    )
    if clash is not None:
        raise scim_error(409, f"group {name!r} exists in this tenant", "uniqueness")
    members = list(group.members or [])
    if len(members) > MAX_MEMBERS:
        raise scim_error(400, f"at most {MAX_MEMBERS} members per request", "tooMany")
    ids = [str(m.value) for m in members if m.value]
    shown = {str(m.value): m.display for m in members if m.value}
    found = {
        u.id: u
        for u in session.scalars(sa.select(UserRow).where(UserRow.tenant_id == row.tenant_id, UserRow.id.in_(ids)))
    }
    missing = sorted(set(ids) - set(found))
    if missing:
        raise scim_error(400, f"member {missing[0]!r} is not a user of this tenant", "invalidValue")
    before = {m["value"] for m in row.members or []}
    row.display_name = name
    row.external_id = group.external_id
    session.add(row)
    row.members = [
        {"value": i, "display": shown.get(i) or found[i].display_name, "$ref": f"{base}/Users/{i}", "type": "User"}
        for i in dict.fromkeys(ids)
    ]
    session.flush()
    for user_id in before | set(ids):
        refresh_roles(session, row.tenant_id, user_id, base)


def refresh_roles(session: orm.Session, tenant_id: str, user_id: str, base: str) -> None:
    """The user's groups (``groups`` of the resource) and role from the tenant's ``group_map``."""
    user = session.get(UserRow, user_id)
    if user is None:
        return
    groups = list(session.scalars(sa.select(ScimGroup).where(ScimGroup.tenant_id == tenant_id).order_by(ScimGroup.id)))
    mine = [g for g in groups if any(m.get("value") == user_id for m in g.members)]
    user.scim = {
        **user.scim,
        "_groups": [{"value": g.id, "display": g.display_name, "$ref": f"{base}/Groups/{g.id}"} for g in mine],
    }
    user.groups = [g.display_name for g in mine]
    for idp in session.scalars(sa.select(IdentityProvider).where(IdentityProvider.tenant_id == tenant_id)):
        if idp.group_map:
            staff = provider_staff.is_provider_tenant(session, tenant_id)
            user.role = oidc.role_for(idp, None, user.groups, provider_roles=staff)
            break
    session.flush()


def check_version(row: Any, if_match: str | None) -> None:
    """412 when ``If-Match`` names another version of ``row`` (``W/"<version>"`` or ``*``)."""
    if if_match is None:
        return
    tags = [t.strip().removeprefix("W/") for t in if_match.split(",")]
    if "*" not in tags and f'"{row.version}"' not in tags:
        raise scim_error(412, "the resource changed since you read it (ETag mismatch)")


def db(scope: Any) -> orm.Session:
    """The session of a ``scoping.Scope`` (the SCIM routes hold one)."""
    session: orm.Session = scope.session
    return session


def rows(scope: Any, table: Any) -> list[Any]:
    """Every user or group of the scope's tenant, in creation order."""
    stmt = sa.select(table).where(table.tenant_id == scope.principal.tenant_id).order_by(table.id)
    return list(db(scope).scalars(stmt))


def get(scope: Any, table: Any, resource_id: str) -> Any:
    """The scope's tenant's user or group ``resource_id``, or None."""
    row = db(scope).get(table, resource_id)
    return row if row is not None and row.tenant_id == scope.principal.tenant_id else None


def delete(scope: Any, row: Any, base: str) -> None:
    """Delete a user (deactivated first: sessions ended, keys revoked; out of its groups; its second
    factors and sessions gone) or a group (its members' roles follow)."""
    session = db(scope)
    if isinstance(row, UserRow):
        deactivate(session, row)
        for group in session.scalars(sa.select(ScimGroup).where(ScimGroup.tenant_id == row.tenant_id)):
            if any(m.get("value") == row.id for m in group.members):
                group.members = [m for m in group.members if m.get("value") != row.id]
        session.execute(sa.delete(MfaCredential).where(MfaCredential.user_id == row.id))
        session.execute(sa.delete(UserSession).where(UserSession.user_id == row.id))
        session.delete(row)
        return
    members = [m.get("value") for m in row.members]
    session.delete(row)
    session.flush()
    for user_id in members:
        refresh_roles(session, row.tenant_id, user_id, base)
