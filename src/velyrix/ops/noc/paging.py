"""Outgoing pages: ``email:ADDRESS`` (SMTP), ``webhook:URL`` (JSON POST) and ``pagerduty:URL`` (a PagerDuty
Events v2 ``trigger`` to any URL, e.g. https://events.pagerduty.com/v2/enqueue or a relay). A ``Pager``
is the callable ``velyrix.ops.noc.incidents.sweep`` hands each due page to."""

from __future__ import annotations

import smtplib
from dataclasses import dataclass
from email.message import EmailMessage
from typing import Any

import httpx

from velyrix import errors

PD_SEVERITY = {"P1": "critical", "P2": "error", "P3": "warning", "P4": "info"}
"""Incident priority -> PagerDuty Events v2 ``payload.severity``."""


def pagerduty_event(routing_key: str, content: dict[str, Any]) -> dict[str, Any]:
    """A PagerDuty Events v2 trigger for one page (``dedup_key`` = the incident number)."""
    return {
        "routing_key": routing_key,
        "event_action": "trigger",
        "dedup_key": content["incident"],
        "payload": {
            "summary": f"{content['incident']} {content['priority']}: {content['title']}"[:1024],
            "source": "velyrix",
            "severity": PD_SEVERITY.get(content["priority"], "info"),
            "custom_details": content,
        },
    }


@dataclass
class Pager:
    """Sends pages; ``smtp_host``/``smtp_port`` for email, ``routing_key`` for PagerDuty-format pages."""

    smtp_host: str = "127.0.0.1"
    smtp_port: int = 25
    sender: str = "noc@velyrix.example"
    routing_key: str = "velyrix"
    timeout_s: float = 10.0

    def __call__(self, target: str, content: dict[str, Any]) -> None:
        kind, _, where = target.partition(":")
        if kind == "email":
            self._email(where, content)
        elif kind == "webhook":
            httpx.post(where, json=content, timeout=self.timeout_s).raise_for_status()
        elif kind == "pagerduty":
            body = pagerduty_event(self.routing_key, content)
            httpx.post(where, json=body, timeout=self.timeout_s).raise_for_status()
        else:
            raise errors.UnknownNameError("page target kind", kind, ("email", "webhook", "pagerduty"))

    def _email(self, address: str, content: dict[str, Any]) -> None:
        msg = EmailMessage()
        msg["From"], msg["To"] = self.sender, address
        msg["Subject"] = f"[{content['priority']}] {content['incident']}: {content['title']}"[:200]
        msg.set_content("\n".join(f"{k}: {v}" for k, v in content.items()))
        with smtplib.SMTP(self.smtp_host, self.smtp_port, timeout=self.timeout_s) as smtp:
            smtp.send_message(msg)
