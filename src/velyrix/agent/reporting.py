"""Reporting a node's state to the control plane over HTTP, with a per-node credential.

Wire contract (the control plane implements the other side):
``POST {control_plane}/v1/nodes/{hostname}/reports`` with ``Authorization: Bearer <node token>`` and a
JSON body ``{"hostname", "collected_at_s", "up", "problems", "sample", "verdict"}``: ``sample`` is
``NodeSample.to_dict()``, the evidence (counters, XID events with their times); ``verdict`` is the agent's
whole verdict (``Verdict.to_dict()``, every reason typed) or null. The control plane re-evaluates the
evidence itself and acts on its own verdict (the agent's is a claim it records). Any 2xx means accepted.
Temporary failures (connection errors, timeouts,
429, 5xx) are retried with exponential backoff (``Retry-After`` honoured up to ``max_backoff_s``);
other 4xx answers are permanent and raise at once, and so does a server certificate that does not verify
(a wrong ``ca_bundle`` does not heal by retrying). The token is never logged, and never sent in clear text
to another host: ``http://`` is for loopback only (``velyrix up``, tests) unless ``allow_plaintext``.
"""

from __future__ import annotations

import functools
import ipaddress
import logging
import ssl
import time
from typing import Any

import httpx

from velyrix import errors
from velyrix.agent.collectors.base import NodeSample

log = logging.getLogger("velyrix.agent.reporting")

RETRY_STATUS = frozenset({408, 425, 429, 500, 502, 503, 504})


@functools.lru_cache(maxsize=64)
def is_loopback(url: str) -> bool:
    """Whether ``url``'s host is this machine (``localhost``, 127.0.0.0/8, ::1). Cached: ``velyrix up`` asks it
    once per twin node's reporter, always of the same URL."""
    host = httpx.URL(url).host
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


@functools.lru_cache(maxsize=8)
def tls_context(ca_bundle: str | None) -> ssl.SSLContext:
    """One verifying TLS context per CA bundle (``None``: the system's CAs), shared by every reporter of the
    process: loading the system's CAs takes about 0.2 s, and ``velyrix up`` runs one reporter per twin node."""
    return ssl.create_default_context(cafile=ca_bundle) if ca_bundle else ssl.create_default_context()


class Reporter:
    """Small HTTP client for node reports.

    ``url``: control-plane base URL (``https://`` for TLS, verified against the system's CAs or the PEM
    ``ca_bundle``); ``node_token``: this node's credential; ``attempts``: tries per
    report (>= 1); ``backoff_s``: first retry delay, doubled each time, capped at ``max_backoff_s``.
    """

    def __init__(
        self,
        url: str,
        node_token: str,
        *,
        attempts: int = 4,
        backoff_s: float = 0.5,
        max_backoff_s: float = 10.0,
        timeout_s: float = 5.0,
        client: httpx.Client | None = None,
        ca_bundle: str | None = None,
        allow_plaintext: bool = False,
    ):
        if not url.startswith(("http://", "https://")):
            raise errors.InvalidInputError(
                f"control plane URL {url!r} is not http(s)", hint="e.g. --control-plane https://velyrix.example.com"
            )
        if not node_token:
            raise errors.InvalidInputError(
                "a node token is required to report to the control plane",
                hint="pass --node-token (issued when the node was enrolled)",
            )
        if url.startswith("http://") and not allow_plaintext and not is_loopback(url):
            raise errors.InvalidInputError(
                f"control plane URL {url!r} is plain HTTP to another host: the node token and reports would "
                "travel unencrypted",
                hint="use https:// (with --ca-bundle for a private CA), or --allow-plaintext on a trusted network",
            )
        self.url = url.rstrip("/")
        self.attempts = max(1, attempts)
        self.backoff_s = backoff_s
        self.max_backoff_s = max_backoff_s
        # https URLs: the server's certificate is checked against the system's CAs, or ``ca_bundle`` (PEM)
        self.client = client or httpx.Client(timeout=timeout_s, verify=tls_context(ca_bundle))
        self._headers = {"Authorization": f"Bearer {node_token}", "User-Agent": "velyrix-agent"}

    def payload(self, sample: NodeSample) -> dict[str, Any]:
        """The JSON body for ``sample``."""
        return {
            "hostname": sample.hostname,
            "collected_at_s": sample.collected_at_s,
            "up": sample.up,
            "problems": sample.problems,
            "sample": sample.to_dict(),
            "verdict": sample.health_verdict,
        }

    def report(self, sample: NodeSample) -> dict[str, Any]:
        """Send one report; return the control plane's JSON answer ({} when it has no body).

        Raises ``AgentReportError`` after the last attempt, or at once on a permanent 4xx
        (``AuthenticationError`` on 401/403: the node token is wrong or revoked).
        """
        target = f"{self.url}/v1/nodes/{sample.hostname}/reports"
        body = self.payload(sample)
        delay = self.backoff_s
        reason = ""
        for attempt in range(1, self.attempts + 1):
            try:
                resp = self.client.post(target, json=body, headers=self._headers)
            except httpx.TransportError as exc:
                if "CERTIFICATE_VERIFY_FAILED" in str(exc):
                    raise errors.AgentReportError(
                        url=target,
                        reason=f"the control plane's certificate is not trusted ({exc})",
                        hint="pass --ca-bundle with the CA that signed the control plane's certificate",
                    ) from None
                reason = f"{type(exc).__name__}: {exc}"
            else:
                if resp.is_success:
                    try:
                        answer = resp.json() if resp.content else {}
                    except ValueError:
                        answer = {}
                    return answer if isinstance(answer, dict) else {"answer": answer}
                if resp.status_code in (401, 403):
                    raise errors.AuthenticationError(
                        f"the control plane refused this node's token (HTTP {resp.status_code})",
                        hint="re-enroll the node or pass the current --node-token",
                    )
                if resp.status_code not in RETRY_STATUS:
                    raise errors.AgentReportError(url=target, reason=f"HTTP {resp.status_code}: {resp.text[:200]}")
                reason = f"HTTP {resp.status_code}"
                retry_after = resp.headers.get("Retry-After", "")
                if retry_after.isdigit():
                    delay = float(retry_after)
            if attempt < self.attempts:
                wait = min(delay, self.max_backoff_s)
                log.info(
                    "report to %s failed (%s); retry %d/%d in %.1fs", target, reason, attempt, self.attempts - 1, wait
                )
                time.sleep(wait)
                delay *= 2
        raise errors.AgentReportError(url=target, reason=f"{reason} after {self.attempts} attempts")

    def close(self) -> None:
        self.client.close()
