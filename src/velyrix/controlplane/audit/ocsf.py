"""Audit events as OCSF 1.3.0 events (Open Cybersecurity Schema Framework, schema.ocsf.io, version 1.3.0).

Input: one leaf of the audit log as ``log.entries`` returns it (``index`` and ``event``, the canonical
fields of ``log.FIELDS``). Output: a JSON-ready dict of one OCSF class. The class follows the action:

- ``auth.*`` and ``sessions.*`` (console sign-in, sign-out, CLI tokens), and any refusal with HTTP 401:
  Authentication (3002), activity Logon 1 / Logoff 2 / Authentication Ticket 3.
- ``api_keys.*``, ``nodes.rotate_token``, ``scim.*`` (keys, node tokens, users): Account Change (3001),
  activity Create 1 / Password Change 3 (a rotated secret) / Disable 5 (a revoked key) / Delete 6.
- ``tenants.*``, ``identity_providers.*``: Entity Management (3004), activity Create 1 / Read 2 /
  Update 3 / Delete 4.
- ``physical.*`` (badge readers and cage doors, ``controlplane/physical.py``): OCSF 1.3.0 has no
  physical-access class; a badge read is an Authentication (3002, Logon, auth protocol "Other" named
  ``badge``) at the door (``dst_endpoint``), a door's own event (opened, forced, held open) is an
  Authentication of activity Other (99) with the door event's name.
- everything else (clusters, volumes, nodes, the audit log's checkpoints, node reports): API Activity
  (6003), activity Create 1 / Read 2 / Update 3 / Delete 4 / Other 99.

Every event carries ``metadata.sequence``: the leaf index in the audit log, which is also the SIEM
export's sequence number (``export.py``), and ``metadata.uid``: the audit event's id.
"""

from __future__ import annotations

import datetime as dt
import ipaddress
from typing import Any

OCSF_VERSION = "1.3.0"
PRODUCT = {"name": "Velyrix", "vendor_name": "Velyrix"}

CLASSES: dict[int, tuple[str, int, str]] = {
    3001: ("Account Change", 3, "Identity & Access Management"),
    3002: ("Authentication", 3, "Identity & Access Management"),
    3004: ("Entity Management", 3, "Identity & Access Management"),
    6003: ("API Activity", 6, "Application Activity"),
}
"""class_uid -> (class name, category_uid, category name), OCSF 1.3.0."""

_CRUD = {1: "Create", 2: "Read", 3: "Update", 4: "Delete", 99: "Other"}
_ACTIVITY_NAMES: dict[int, dict[int, str]] = {
    3001: {1: "Create", 3: "Password Change", 5: "Disable", 6: "Delete", 99: "Other"},
    3002: {1: "Logon", 2: "Logoff", 3: "Authentication Ticket", 99: "Other"},
    3004: _CRUD,
    6003: _CRUD,
}
_VERBS = {
    "create": 1,
    "get": 2,
    "list": 2,
    "update": 3,
    "replace": 3,
    "patch": 3,
    "delete": 4,
    "destroy": 4,
    "revoke": 5,
    "rotate": 3,
    "rotate_token": 3,
}
_SEVERITY = {"success": (1, "Informational"), "replayed": (1, "Informational"), "denied": (3, "Medium")}
_DOOR_ALARMS = frozenset({"door_forced", "door_held_open"})


def _verb(action: str) -> str:
    return action.rsplit(".", 1)[-1]


def classify(action: str, status_code: int) -> tuple[int, int]:
    """(class_uid, activity_id) of an audit ``action`` answered with ``status_code``."""
    head, verb = action.split(".", 1)[0], _verb(action)
    if head == "physical":
        return 3002, (1 if verb.startswith("access_") else 99)
    if head in ("auth", "sessions") or status_code == 401:
        return 3002, {"login": 1, "logout": 2, "end": 2, "cli_token": 3}.get(verb, 1 if status_code == 401 else 99)
    if head in ("api_keys", "scim") or action == "nodes.rotate_token":
        activity = {"create": 1, "revoke": 5, "rotate": 3, "rotate_token": 3, "delete": 6}.get(verb, 99)
        return 3001, activity
    crud = _VERBS.get(verb, 99)
    crud = crud if crud in _CRUD else 99
    return (3004 if head in ("tenants", "identity_providers") else 6003), crud


def _millis(at: str) -> int:
    parsed = dt.datetime.fromisoformat(at.replace("Z", "+00:00"))
    return int(parsed.timestamp() * 1000)


def _endpoint(address: str | None) -> dict[str, str]:
    if not address:
        return {}
    try:
        return {"ip": str(ipaddress.ip_address(address))}
    except ValueError:
        return {"hostname": address}


def _severity(event: dict[str, Any]) -> tuple[int, str]:
    if _verb(event["action"]) in _DOOR_ALARMS:
        return 4, "High"
    return _SEVERITY.get(event["outcome"], (2, "Low"))


def _class_fields(class_uid: int, event: dict[str, Any]) -> dict[str, Any]:
    detail = event.get("detail") or {}
    user = {"name": event["actor"], **({"uid": event["key_id"]} if event.get("key_id") else {})}
    if class_uid == 3002 and event["action"].startswith("physical."):
        door = {"name": str(detail.get("door", "")), "location": {"desc": str(detail.get("site", ""))}}
        person = {"name": str(detail.get("person") or "unknown"), "uid": str(detail.get("badge_id") or "")}
        return {"user": person, "dst_endpoint": door, "auth_protocol_id": 99, "auth_protocol": "badge"}
    if class_uid == 3002:
        return {"user": user, "dst_endpoint": {"svc_name": "velyrix"}, "auth_protocol_id": 0}
    if class_uid == 3001:
        return {"user": {"uid": event["target"]}}
    if class_uid == 3004:
        return {"entity": {"uid": event["target"], "type": event["action"].split(".", 1)[0]}}
    return {"resources": [{"uid": event["target"], "type": event["action"].split(".", 1)[0]}]}


def to_ocsf(entry: dict[str, Any], product_version: str) -> dict[str, Any]:
    """The OCSF event of one audit-log leaf (``entry["event"]`` not None)."""
    event, index = entry["event"], int(entry["index"])
    class_uid, activity_id = classify(event["action"], int(event["status_code"]))
    class_name, category_uid, category_name = CLASSES[class_uid]
    severity_id, severity = _severity(event)
    detail = dict(event.get("detail") or {})
    ok = event["outcome"] in ("success", "replayed")
    out: dict[str, Any] = {
        "class_uid": class_uid,
        "class_name": class_name,
        "category_uid": category_uid,
        "category_name": category_name,
        "activity_id": activity_id,
        "activity_name": _ACTIVITY_NAMES[class_uid].get(activity_id, _verb(event["action"])),
        "type_uid": class_uid * 100 + activity_id,
        "time": _millis(event["at"]),
        "severity_id": severity_id,
        "severity": severity,
        "status_id": 1 if ok else 2,
        "status": "Success" if ok else "Failure",
        "status_code": str(event["status_code"]),
        "message": f"{event['action']} {event['target']}: {event['outcome']}",
        "metadata": {
            "version": OCSF_VERSION,
            "product": {**PRODUCT, "version": product_version},
            "uid": event["id"],
            "sequence": index,
            "correlation_uid": event["request_id"],
            "log_name": "velyrix-audit",
            **({"tenant_uid": event["tenant_id"]} if event.get("tenant_id") else {}),
        },
        "actor": {"user": {"name": event["actor"], **({"uid": event["key_id"]} if event.get("key_id") else {})}},
        "src_endpoint": _endpoint(event.get("source_address")),
        "api": {
            "operation": event["action"],
            "request": {"uid": event["request_id"]},
            "response": {
                "code": int(event["status_code"]),
                **({"error": event["error_code"]} if event.get("error_code") else {}),
            },
        },
        "http_request": {"http_method": str(detail.pop("method", "")), "url": {"path": str(detail.pop("path", ""))}},
        "unmapped": {"outcome": event["outcome"], "target": event["target"], "detail": detail},
    }
    if event.get("error_code"):
        out["status_detail"] = event["error_code"]
    if activity_id == 99:
        out["activity_name"] = _verb(event["action"]).replace("_", " ")
    return out | _class_fields(class_uid, event)
