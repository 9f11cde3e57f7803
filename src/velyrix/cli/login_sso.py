"""``velyrix login --sso``: single sign-on from the terminal through the browser (RFC 8252 loopback
redirect). The CLI listens on ``127.0.0.1:<free port>``, opens (or prints) the tenant's sign-in URL, and
gets back a one-time code, which it exchanges together with its PKCE verifier for an API key of the
user's role (twelve hours, revoked with the user)."""

from __future__ import annotations

import base64
import hashlib
import http.server
import secrets
import threading
import urllib.parse
from typing import Any

from velyrix import errors

TIMEOUT_S = 300.0
CALLBACK_PATH = "/callback"
"""Where the control plane sends the browser back with the one-time code (``redirect`` below)."""


class _Catcher(http.server.BaseHTTPRequestHandler):
    code: str | None = None
    done = threading.Event()

    def do_GET(self) -> None:
        """The control plane's redirect to ``/callback?code=...`` once; anything else (the browser's
        ``/favicon.ico`` after the page, a second visit) is 404 and leaves the code alone."""
        parts = urllib.parse.urlsplit(self.path)
        code = next(iter(urllib.parse.parse_qs(parts.query).get("code", [])), None)
        if parts.path != CALLBACK_PATH or not code or type(self).done.is_set():
            self.send_error(404)
            return
        type(self).code = code
        self.send_response(200)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.end_headers()
        self.wfile.write(b"<!doctype html><title>Velyrix</title><p id='done'>Signed in: back to the terminal.</p>")
        type(self).done.set()

    def log_message(self, *args: Any) -> None:
        return


def sso_login(endpoint: str, tenant: str, *, ca_bundle: str | None, open_browser: bool, say: Any) -> dict[str, Any]:
    """Run the loopback flow; returns the control plane's answer (``api_key``, ``user``, ``role``...)."""
    import httpx

    from velyrix.cli import client

    verifier = secrets.token_urlsafe(48)
    challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).rstrip(b"=").decode()
    catcher: Any = type("Catcher", (_Catcher,), {"code": None, "done": threading.Event()})
    server = http.server.HTTPServer(("127.0.0.1", 0), catcher)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    redirect = f"http://127.0.0.1:{server.server_address[1]}{CALLBACK_PATH}"
    query = urllib.parse.urlencode({"cli_redirect": redirect, "cli_challenge": challenge})
    url = f"{endpoint.rstrip('/')}/auth/{urllib.parse.quote(tenant)}/login?{query}"
    say(f"Sign in at: {url}")
    if open_browser:
        import webbrowser

        webbrowser.open(url)
    try:
        if not catcher.done.wait(TIMEOUT_S) or not catcher.code:
            raise errors.InvalidInputError("no sign-in within 5 minutes", hint="run velyrix login --sso again")
    finally:
        server.shutdown()
        server.server_close()
    with httpx.Client(verify=client.verify_context(ca_bundle), timeout=30.0) as web:
        resp = web.post(
            f"{endpoint.rstrip('/')}/auth/cli/token", json={"code": catcher.code, "code_verifier": verifier}
        )
    if resp.status_code != 200:
        raise client._remote_error(resp)
    answer: dict[str, Any] = resp.json()
    return answer
