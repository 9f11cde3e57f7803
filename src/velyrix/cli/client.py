"""The one HTTP client of the control plane, used by ``login`` and by ``apply``/``status``/``destroy``.

Credentials live in ``$VELYRIX_HOME/credentials.json`` (mode 0600); ``VELYRIX_ENDPOINT`` and
``VELYRIX_API_KEY`` override them. Problem+json answers become ``errors.RemoteError`` (code, status,
message, hint of the server). POSTs carry an ``Idempotency-Key``, so their automatic retries after a
connection failure never create a twin.
"""

from __future__ import annotations

import json
import ssl
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from velyrix import errors, private_files, settings
from velyrix.cli.common import CREDENTIALS_FILE, credentials_path  # noqa: F401  (their home; used here and by login)

if TYPE_CHECKING:
    import httpx

RETRIES = 3


def save_credentials(endpoint: str, api_key: str, ca_bundle: str | None = None) -> Path:
    """Write endpoint, key (and the CA bundle that verifies the endpoint's certificate) to the
    credentials file, readable by the owner only (0600)."""
    path = credentials_path()
    private_files.private_dir(path.parent, tighten=True)
    stored = {"endpoint": endpoint.rstrip("/"), "api_key": api_key}
    if ca_bundle:
        stored["ca_bundle"] = str(Path(ca_bundle).resolve())
    data = json.dumps(stored).encode()
    try:
        private_files.write_private(path, data)  # atomic: a full disk keeps the previous login whole
    except OSError as exc:
        raise errors.VelyrixError(
            f"cannot save the credentials to {path}: {exc.strerror or exc}; the previous login is unchanged",
            hint="free some disk space and run velyrix login again",
        ) from None
    return path


def _read_credentials(path: Path) -> dict[str, Any]:
    """The stored login; a file that is not a JSON object is a clear error (exit 2), not a traceback."""
    try:
        stored = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError):
        stored = None
    if not isinstance(stored, dict):
        raise errors.NotLoggedInError(
            f"the credentials file {path} is unreadable or damaged",
            hint="run: velyrix login --endpoint http://HOST:PORT (it replaces the file)",
        )
    return stored


@dataclass
class Client:
    """A connection to one control plane with one API key."""

    endpoint: str
    api_key: str
    timeout_s: float = 30.0
    transport: Any = None
    """An httpx transport (tests pass ``httpx.ASGITransport(app)``)."""
    ca_bundle: str | None = None
    """PEM file of the CAs that may sign the endpoint's certificate (default: the system's trust store)."""

    @classmethod
    def from_login(cls) -> Client:
        """The client of the stored login (or of ``VELYRIX_ENDPOINT``/``VELYRIX_API_KEY``)."""
        client_settings = settings.load().client
        endpoint, key = client_settings.endpoint, client_settings.api_key
        ca_bundle = client_settings.ca_bundle or None
        path = credentials_path()
        if (not endpoint or not key or not ca_bundle) and path.exists():
            stored = _read_credentials(path)
            endpoint, key = endpoint or str(stored.get("endpoint") or ""), key or str(stored.get("api_key") or "")
            ca_bundle = ca_bundle or stored.get("ca_bundle")
        if not endpoint or not key:
            raise errors.NotLoggedInError(hint="run: velyrix login --endpoint http://HOST:PORT")
        return cls(endpoint=endpoint, api_key=key, ca_bundle=ca_bundle)

    def _http(self) -> httpx.Client:
        import httpx

        return httpx.Client(
            base_url=self.endpoint,
            timeout=self.timeout_s,
            transport=self.transport,
            verify=verify_context(self.ca_bundle),
            headers={"Authorization": f"Bearer {self.api_key}", "User-Agent": "velyrix-cli"},
        )

    def request(
        self,
        method: str,
        path: str,
        *,
        json_body: Any = None,
        params: dict[str, Any] | None = None,
        if_match: str | None = None,
    ) -> tuple[Any, dict[str, str]]:
        """Send one request; returns ``(json or None, headers)``; raises ``RemoteError`` on 4xx/5xx."""
        import httpx

        headers: dict[str, str] = {}
        if method == "POST":
            headers["Idempotency-Key"] = str(uuid.uuid4())
        if if_match:
            headers["If-Match"] = if_match
        last: Exception | None = None
        with self._http() as http:
            for _ in range(RETRIES if method in ("GET", "POST") else 1):
                try:
                    resp = http.request(method, path, json=json_body, params=params, headers=headers)
                    break
                except httpx.TransportError as exc:
                    if "CERTIFICATE_VERIFY_FAILED" in str(exc):
                        raise _untrusted(self.endpoint, exc, self.ca_bundle) from exc
                    last = exc
            else:
                raise errors.RemoteError(
                    f"cannot reach {self.endpoint}: {last}",
                    code="unreachable",
                    status=503,
                    hint="is `velyrix server` running? check the endpoint of `velyrix login`",
                )
        if resp.status_code >= 400:
            raise _remote_error(resp)
        body = resp.json() if resp.content else None
        return body, dict(resp.headers)

    def get(self, path: str, **params: Any) -> Any:
        return self.request("GET", path, params={k: v for k, v in params.items() if v is not None})[0]

    def post(self, path: str, body: Any) -> Any:
        return self.request("POST", path, json_body=body)[0]

    def list_all(self, path: str, **params: Any) -> list[Any]:
        """Every item of a paginated list (follows ``next_cursor``)."""
        items: list[Any] = []
        cursor = None
        while True:
            page = self.get(path, cursor=cursor, limit=200, **params)
            items.extend(page["items"])
            cursor = page.get("next_cursor")
            if not cursor:
                return items

    def find_cluster(self, name: str) -> dict[str, Any] | None:
        """The cluster called ``name`` in the key's tenant, or None."""
        items = self.get("/v1/clusters", name=name)["items"]
        return items[0] if items else None

    def apply_cluster(self, body: dict[str, Any]) -> dict[str, Any]:
        """Create the cluster, or update it (with If-Match) when one of that name exists."""
        current = self.find_cluster(body["name"])
        if current is None:
            return dict(self.post("/v1/clusters", body))
        etag = f'"{current["id"]}.v{current["version"]}"'
        return dict(self.request("PUT", f"/v1/clusters/{current['id']}", json_body=body, if_match=etag)[0])

    def destroy_cluster(self, name: str) -> dict[str, Any]:
        """Request the deletion of the cluster called ``name``."""
        current = self.find_cluster(name)
        if current is None:
            raise errors.NotFoundError(kind="cluster", name=name)
        return dict(self.request("DELETE", f"/v1/clusters/{current['id']}")[0])


def verify_context(ca_bundle: str | None) -> ssl.SSLContext:
    """The TLS context that checks the control plane's certificate and host name: the system's trust
    store, or only the CAs of ``ca_bundle`` (PEM). ``InvalidInputError`` when the bundle is unreadable."""
    try:
        return ssl.create_default_context(cafile=ca_bundle) if ca_bundle else ssl.create_default_context()
    except (OSError, ssl.SSLError) as exc:
        raise errors.InvalidInputError(
            f"cannot read the CA bundle {ca_bundle}: {exc}", hint="a PEM file of CA certificates (--ca-bundle)"
        ) from exc


def _untrusted(endpoint: str, exc: Exception, ca_bundle: str | None) -> errors.RemoteError:
    return errors.RemoteError(
        f"the certificate of {endpoint} is not trusted: {exc}",
        code="tls_untrusted",
        status=495,  # "SSL Certificate Error": the client refused the server's certificate
        hint="pass --ca-bundle FILE (the CA that signed the server's certificate) to velyrix login"
        if not ca_bundle
        else f"{ca_bundle} does not hold the CA of this certificate, or the host name does not match",
    )


def _remote_error(resp: httpx.Response) -> errors.RemoteError:
    try:
        problem = resp.json()
    except ValueError:
        problem = {}
    if not isinstance(problem, dict):
        problem = {}
    message = problem.get("detail") or f"HTTP {resp.status_code} from the control plane"
    return errors.RemoteError(
        str(message),
        code=str(problem.get("code", "http_error")),
        status=resp.status_code,
        hint=problem.get("hint"),
        request_id=problem.get("request_id"),
    )
