"""TLS for ``velyrix server`` and ``velyrix up``: TLS 1.3 only unless TLS 1.2 is asked for explicitly, and
HSTS on every answer sent over TLS (browsers then never fall back to plain HTTP for the host).

``serve`` runs uvicorn with ``--tls-cert``/``--tls-key``; a certificate or key that cannot be loaded is an
input error (exit 2) before anything listens.
"""

from __future__ import annotations

import ssl
from collections.abc import Callable
from pathlib import Path
from typing import Any

from velyrix import errors

HSTS = b"max-age=31536000; includeSubDomains"
"""One year, the value RFC 6797 section 11.2 and browsers' preload lists expect of a host that serves
only HTTPS."""
VERSIONS = {"1.3": ssl.TLSVersion.TLSv1_3, "1.2": ssl.TLSVersion.TLSv1_2}


class HstsMiddleware:
    """Adds ``Strict-Transport-Security`` to every HTTP answer of an ``https`` request (pure ASGI)."""

    def __init__(self, app: Any) -> None:
        self.app = app

    def __getattr__(self, name: str) -> Any:  # app.state etc. stay reachable through the wrapper
        return getattr(self.app, name)

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http" or scope.get("scheme") != "https":
            await self.app(scope, receive, send)
            return

        async def with_hsts(message: dict[str, Any]) -> None:
            if message["type"] == "http.response.start":
                message["headers"] = [*message.get("headers", []), (b"strict-transport-security", HSTS)]
            await send(message)

        await self.app(scope, receive, with_hsts)


class MinimumVersion:
    """uvicorn ``ssl_context_factory``: the default server context with a TLS version floor. A class (not
    a closure) so that it pickles into ``--workers`` processes."""

    def __init__(self, version: str) -> None:
        self.version = version

    def __call__(self, config: Any, default: Callable[[], ssl.SSLContext]) -> ssl.SSLContext:
        context = default()
        context.minimum_version = VERSIONS[self.version]
        return context


def server_context(cert: Path, key: Path, min_version: str = "1.3") -> ssl.SSLContext:
    """A server context for ``cert``/``key`` (PEM) with ``min_version`` as floor; ``InvalidInputError``
    when the files cannot be read or do not match, or the version is not 1.2 or 1.3."""
    if min_version not in VERSIONS:
        raise errors.UnknownNameError("TLS version", min_version, VERSIONS)
    for flag, path in (("--tls-cert", cert), ("--tls-key", key)):
        if not path.is_file():
            raise errors.InvalidInputError(f"{flag} {path}: no such file", hint="a PEM file, e.g. from certbot")
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.minimum_version = VERSIONS[min_version]
    try:
        context.load_cert_chain(str(cert), str(key))
    except (ssl.SSLError, ValueError) as exc:
        raise errors.InvalidInputError(
            f"cannot use --tls-cert {cert} with --tls-key {key}: {exc}",
            hint="both PEM; the key must be the certificate's (openssl x509 -noout -pubkey)",
        ) from exc
    return context


def uvicorn_options(cert: Path | None, key: Path | None, min_version: str) -> dict[str, Any]:
    """The uvicorn keyword arguments for serving with ``cert``/``key`` (empty without TLS). Both or
    neither must be given; the pair is checked here (``server_context``)."""
    if cert is None and key is None:
        return {}
    if cert is None or key is None:
        raise errors.InvalidInputError(
            "--tls-cert and --tls-key go together", hint="pass both: --tls-cert server.pem --tls-key server.key"
        )
    server_context(cert, key, min_version)
    return {
        "ssl_certfile": str(cert),
        "ssl_keyfile": str(key),
        "ssl_context_factory": MinimumVersion(min_version),
    }
