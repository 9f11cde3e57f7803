"""The region's signed firmware baseline follows a completed rollout: the rolled-out component (and the ones
that follow it, ``versions.companions``) at the new version in the manifest of
``velyrix.controlplane.evidence.firmware``, re-signed with the region's firmware key, with an audit event.
A node provisioned afterwards is checked against the new version; one left on the old version is drift.

Components the manifest does not pin (e.g. CUDA in the node image) leave it as it is. The image digests of
the changed components come from the driver's vendor images (``firmware_image(component, version)``); the
others keep their signed digests.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from typing import Any

from sqlalchemy import orm

from velyrix import errors
from velyrix.catalog import versions
from velyrix.controlplane import audit
from velyrix.controlplane.auth import principals
from velyrix.controlplane.db.models import rollouts as models_rollouts
from velyrix.controlplane.evidence import firmware

ACTION = "firmware.baseline"


def follow(
    session: orm.Session,
    rollout: models_rollouts.Rollout,
    component: str,
    version: str,
    image: Callable[[str, str], bytes] | None,
) -> dict[str, Any]:
    """Move the region's manifest to ``component`` ``version`` (re-signed, audited in ``session``; the caller
    commits). Returns what changed (``installed_key -> [old, new]``) or why nothing did."""
    try:
        manifest = firmware.load(rollout.region)
    except errors.InvalidInputError as exc:
        return {"changed": {}, "why": exc.message}
    components = dict(manifest.components)
    changed: dict[str, list[str]] = {}
    for name in (component, *versions.companions(component)):
        key = versions.component(name).installed_key
        if key in components and components[key][0] != version:
            if image is None:
                return {"changed": {}, "why": "the driver ships no firmware images to sign"}
            changed[key] = [components[key][0], version]
            components[key] = (version, hashlib.sha256(image(key, version)).hexdigest())
    if not changed:
        return {"changed": {}, "why": f"the baseline already pins {component} {version} (or not at all)"}
    path = firmware.publish_signed(rollout.region, components)
    who = principals.Principal(
        key_id=rollout.id[:32], name=f"rollout:{rollout.name}", tenant_id=None, role="provider", scopes=frozenset()
    )
    info = audit.RequestInfo(f"{rollout.id}/baseline", None, "ROLLOUT", f"/v1/rollouts/{rollout.id}")
    detail = {"region": rollout.region, "changed": changed, "manifest": str(path)}
    audit.record(session, info, who, action=ACTION, target=f"firmware/{rollout.region}", detail=detail)
    return {"changed": changed, "manifest": str(path)}
