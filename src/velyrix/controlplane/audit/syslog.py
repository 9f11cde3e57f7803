"""Audit-log leaves as syslog messages: RFC 5424 with an OCSF JSON body or a CEF body (ArcSight Common
Event Format, revision 25), framed by octet counting for TLS transport (RFC 5425 section 4.3:
``MSG-LEN SP SYSLOG-MSG``).

Every message carries the leaf index as its sequence number twice: in the structured data element
``[velyrix@32473 seq="N" event="aud_..."]`` (32473 is the private enterprise number that RFC 5612
reserves for documentation; a deployment with its own number sets it in ``ENTERPRISE``) and in the body
(OCSF ``metadata.sequence``, CEF ``cn1``). Facility 13 is RFC 5424's "log audit".
"""

from __future__ import annotations

import json
import re
from typing import Any

from velyrix.controlplane.audit import ocsf

FACILITY_LOG_AUDIT = 13
ENTERPRISE = 32473
APP_NAME = "velyrix"
FORMATS = ("ocsf", "cef")
_SYSLOG_SEVERITY = {1: 6, 2: 5, 3: 4, 4: 3}  # OCSF severity_id -> syslog severity (info, notice, warning, error)
_HOST = re.compile(r"[^\x21-\x7e]")


def _sd_escape(value: str) -> str:
    """An SD-PARAM value (RFC 5424 section 6.3.3): ``"``, ``\\`` and ``]`` escaped."""
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("]", "\\]")


def _cef_header(value: str) -> str:
    return value.replace("\\", "\\\\").replace("|", "\\|").replace("\r", " ").replace("\n", " ")


def _cef_value(value: Any) -> str:
    text = "" if value is None else str(value)
    return text.replace("\\", "\\\\").replace("=", "\\=").replace("\r", "\\r").replace("\n", "\\n")


def cef_line(entry: dict[str, Any], product_version: str) -> str:
    """The CEF body of one leaf (``CEF:0|Velyrix|Velyrix|version|class|name|severity|extensions``)."""
    event = ocsf.to_ocsf(entry, product_version)
    raw = entry["event"]
    extensions = {
        "rt": event["time"],
        "externalId": raw["id"],
        "cn1Label": "seq",
        "cn1": int(entry["index"]),
        "suser": raw["actor"],
        "suid": raw.get("key_id"),
        "src": event["src_endpoint"].get("ip"),
        "act": raw["action"],
        "outcome": raw["outcome"],
        "request": event["http_request"]["url"]["path"],
        "requestMethod": event["http_request"]["http_method"],
        "cs1Label": "tenant",
        "cs1": raw.get("tenant_id"),
        "cs2Label": "target",
        "cs2": raw["target"],
        "cs3Label": "error_code",
        "cs3": raw.get("error_code"),
        "cn2Label": "status_code",
        "cn2": raw["status_code"],
    }
    ext = " ".join(f"{k}={_cef_value(v)}" for k, v in extensions.items() if v not in (None, ""))
    severity = {1: 3, 2: 5, 3: 6, 4: 8}[event["severity_id"]]  # CEF severity 0-10
    header = [
        "CEF:0",
        "Velyrix",
        "Velyrix",
        _cef_header(product_version),
        str(event["type_uid"]),
        _cef_header(f"{event['class_name']}: {raw['action']}"),
        str(severity),
    ]
    return "|".join(header) + "|" + ext


def message(entry: dict[str, Any], fmt: str, hostname: str, product_version: str) -> bytes:
    """One RFC 5424 message (no framing) for the leaf ``entry``, body in ``fmt`` (``ocsf`` or ``cef``)."""
    event = ocsf.to_ocsf(entry, product_version)
    pri = FACILITY_LOG_AUDIT * 8 + _SYSLOG_SEVERITY[event["severity_id"]]
    at = entry["event"]["at"]  # RFC 3339 UTC with microseconds (log.iso)
    host = _HOST.sub("", hostname)[:255] or "-"
    sd = f'[velyrix@{ENTERPRISE} seq="{int(entry["index"])}" event="{_sd_escape(str(entry["event"]["id"]))}"]'
    msgid = f"ocsf-{event['class_uid']}"
    if fmt == "ocsf":
        body = json.dumps(event, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    else:
        body = cef_line(entry, product_version)
    return f"<{pri}>1 {at} {host} {APP_NAME} - {msgid} {sd} {body}".encode()


def frame(msg: bytes) -> bytes:
    """Octet-counting framing (RFC 5425 section 4.3): the message's length in bytes, a space, the message."""
    return str(len(msg)).encode() + b" " + msg
