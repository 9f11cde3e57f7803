"""The API's validation edge: one pure-ASGI middleware that every request passes before routing and
authentication (docs/api-limits.md lists the limits).

- Request line: the path at most ``MAX_PATH_BYTES``, the query string at most ``MAX_QUERY_BYTES``
  (414); no NUL and no lone surrogate in the decoded path or query (422).
- Body: at most the route's limit (``body_limit``) or 413 *before* a byte is parsed, whatever the
  ``Content-Length`` says and with or without a key; a body that stops arriving short of its
  ``Content-Length`` answers 408 after ``BODY_TIMEOUT_S`` instead of holding the connection.
- JSON bodies: no duplicate keys, no NaN/Infinity (nor a literal that overflows to it, such as 1e400),
  integers within 64 bits, nesting at most ``MAX_DEPTH``, strings and keys
  without NUL and lone surrogates and at most ``MAX_STRING_CHARS`` / ``MAX_KEY_CHARS`` long.

What passes is what PostgreSQL and SQLite store and give back unchanged (PostgreSQL's text and jsonb
refuse NUL and surrogates; JSON has no NaN), so a stored value always reads back.
Refusals are problem+json through ``problems.problem`` (which also records the refused mutation's
audit event).
"""

from __future__ import annotations

import asyncio
import json
import math
import re
import urllib.parse
from collections.abc import Awaitable, Callable
from typing import Any

from starlette.requests import Request

from velyrix import errors
from velyrix.declarations import rules

MAX_PATH_BYTES = 2048
MAX_QUERY_BYTES = 4096
MAX_DEPTH = rules.MAX_NESTING
MAX_STRING_CHARS = rules.MAX_STRING_CHARS
MAX_KEY_CHARS = 256
MAX_INTEGER = 2**63 - 1
BODY_TIMEOUT_S = 10.0
DEFAULT_BODY_BYTES = 64 * 1024
"""The body limit of every route not named in ``BODY_LIMITS``."""

BODY_LIMITS: tuple[tuple[str, re.Pattern[str], int], ...] = (
    # A node agent's report: a NodeSample of up to 64 GPUs, 16 IB ports and 64 drives with their
    # counters is about 100 KiB (velyrix.agent.collectors.base.NodeSample.to_dict).
    ("POST", re.compile(r"^/v1/nodes/[^/]+/reports$"), 1024 * 1024),
    # SCIM provisioning: a Group with its members or a bulk-sized User (controlplane/identity/scim.py
    # MAX_BODY_BYTES, what ServiceProviderConfig advertises).
    ("POST", re.compile(r"^/scim/v2/"), 1024 * 1024),
    ("PUT", re.compile(r"^/scim/v2/"), 1024 * 1024),
    ("PATCH", re.compile(r"^/scim/v2/"), 1024 * 1024),
    # PagerDuty Events v2: an event is at most 512 KB (velyrix.ops.noc.pagerduty.MAX_EVENT_BYTES).
    ("POST", re.compile(r"^/v1/pagerduty/v2/enqueue$"), 512 * 1024),
)
"""(method, path pattern, bytes): routes whose body may exceed ``DEFAULT_BODY_BYTES``."""

_BAD_CHARS = rules.BAD_TEXT  # in path and query: what no column could store (NUL, lone surrogates)
_BAD_IN_STRINGS = rules.BAD_TEXT


class EdgeError(errors.VelyrixError):
    """A request refused at the edge (before routing); ``code`` and status vary by the rule broken."""

    def __init__(self, status: int, code: str, message: str, hint: str | None = None) -> None:
        super().__init__(message, hint=hint)
        self.code = code  # type: ignore[misc]
        self.http_status = status  # type: ignore[misc]


def body_limit(method: str, path: str) -> int:
    """The largest body in bytes ``method path`` accepts."""
    for m, pattern, limit in BODY_LIMITS:
        if m == method and pattern.match(path):
            return limit
    return DEFAULT_BODY_BYTES


def check_text(value: str, where: str, *, max_chars: int = MAX_STRING_CHARS) -> None:
    """``EdgeError`` (422) for a NUL, a lone surrogate or more than ``max_chars`` characters."""
    if len(value) > max_chars:
        raise EdgeError(422, "value_too_long", f"{where}: {len(value)} characters, more than {max_chars}")
    bad = _BAD_IN_STRINGS.search(value)
    if bad:
        char = f"U+{ord(bad.group()):04X}"
        raise EdgeError(
            422,
            "invalid_character",
            f"{where}: character {char} at offset {bad.start()} is not allowed",
            hint="text may not hold NUL or a lone UTF-16 surrogate",
        )


def _reject_constant(name: str) -> Any:
    raise EdgeError(422, "non_finite_number", f"body: {name} is not a JSON number", hint="send a finite number")


def _pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise EdgeError(422, "duplicate_key", f"body: key {json.dumps(key)} appears twice in one object")
        out[key] = value
    return out


def _number(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise EdgeError(
            422, "non_finite_number", f"body: number {text[:40]} is not finite", hint="send a finite number"
        )
    return value


def _integer(text: str) -> int:
    if len(text.lstrip("-")) > 19 or abs(int(text)) > MAX_INTEGER:
        raise EdgeError(
            422, "number_out_of_range", f"body: integer {text[:40]} is outside +-(2**63-1)", hint="a 64-bit integer"
        )
    return int(text)


def parse_strict(raw: bytes) -> Any:
    """The JSON value of ``raw`` under the edge's rules, else ``EdgeError`` (422)."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise EdgeError(422, "invalid_json", f"body: not UTF-8 at byte {exc.start}") from None
    try:
        value = json.loads(
            text, object_pairs_hook=_pairs, parse_constant=_reject_constant, parse_float=_number, parse_int=_integer
        )
    except RecursionError:
        raise EdgeError(422, "too_deep", f"body: nested deeper than {MAX_DEPTH} levels") from None
    except json.JSONDecodeError as exc:
        raise EdgeError(
            422, "invalid_json", f"body: invalid JSON at line {exc.lineno} column {exc.colno}: {exc.msg}"
        ) from None
    _walk(value)
    return value


def _walk(value: Any) -> None:
    """Depth and string rules over a parsed value (iterative: no recursion on hostile depth)."""
    todo: list[tuple[Any, int, str]] = [(value, 1, "body")]
    while todo:
        item, depth, where = todo.pop()
        if isinstance(item, str):
            check_text(item, where)
            continue
        if not isinstance(item, (dict, list)):
            continue
        if depth > MAX_DEPTH:
            raise EdgeError(422, "too_deep", f"{where}: nested deeper than {MAX_DEPTH} levels")
        if isinstance(item, dict):
            for key, sub in item.items():
                check_text(key, f"{where}: key", max_chars=MAX_KEY_CHARS)
                todo.append((sub, depth + 1, f"{where}.{key[:40]}"))
        else:
            todo.extend((sub, depth + 1, f"{where}[{i}]") for i, sub in enumerate(item))


def check_request_line(scope: dict[str, Any]) -> None:
    """Path and query string rules (``EdgeError``)."""
    raw_path = scope.get("raw_path") or scope["path"].encode("utf-8", "surrogatepass")
    if len(raw_path) > MAX_PATH_BYTES or len(scope.get("query_string", b"")) > MAX_QUERY_BYTES:
        raise EdgeError(
            414, "uri_too_long", f"path at most {MAX_PATH_BYTES} bytes, query at most {MAX_QUERY_BYTES} bytes"
        )
    bad = _BAD_CHARS.search(scope["path"])
    if bad:
        raise EdgeError(422, "invalid_character", f"path: character U+{ord(bad.group()):04X} is not allowed in a path")
    query = scope.get("query_string", b"").decode("latin-1")
    for name, value in urllib.parse.parse_qsl(query, keep_blank_values=True, errors="surrogateescape"):
        for text, what in ((name, "query parameter name"), (value, f"query parameter '{name[:40]}'")):
            found = _BAD_CHARS.search(text)
            if found:
                shown = f"U+{ord(found.group()):04X}"
                raise EdgeError(422, "invalid_character", f"{what}: character {shown} is not allowed")


class EdgeMiddleware:
    """Applies the edge's rules; a request that passes goes on with its body replayed from memory."""

    def __init__(self, app: Any, refuse: Callable[[Request, errors.VelyrixError], Awaitable[Any]]) -> None:
        self.app = app
        self.refuse = refuse  # renders the refusal (problem+json, audit); see problems.refuse

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        try:
            check_request_line(scope)
            # most GETs declare no body: nothing to wait for (``asyncio.wait_for`` costs a task)
            body = await self._read(scope, receive) if _has_body(scope) else None
            if body and _is_json(scope):
                parse_strict(body)
        except EdgeError as exc:
            response = await self.refuse(Request(scope), exc)
            await response(scope, _empty_receive, send)
            return
        await self.app(scope, receive if body is None else _replay(body, receive), send)

    async def _read(self, scope: dict[str, Any], receive: Any) -> bytes:
        limit = body_limit(scope["method"], scope["path"])
        headers = dict(scope.get("headers") or [])
        declared = headers.get(b"content-length")
        if declared is not None:
            if not declared.isdigit():
                raise EdgeError(400, "bad_request", "Content-Length is not a number")
            if int(declared) > limit:
                raise _too_large(limit)
        chunks: list[bytes] = []
        size = 0
        timeout = getattr(scope["app"].state, "body_timeout_s", BODY_TIMEOUT_S)
        while True:
            try:
                message = await asyncio.wait_for(receive(), timeout=timeout)
            except TimeoutError:
                raise EdgeError(
                    408,
                    "request_timeout",
                    f"the body stopped arriving for {timeout:g} s",
                    hint="send as many bytes as Content-Length says",
                ) from None
            if message["type"] == "http.disconnect":
                raise EdgeError(400, "bad_request", "the client went away before sending the whole body")
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > limit:
                raise _too_large(limit)
            chunks.append(chunk)
            if not message.get("more_body", False):
                return b"".join(chunks)


def _has_body(scope: dict[str, Any]) -> bool:
    """Whether the request declares a body: an HTTP/1.1 request without ``Content-Length`` and
    ``Transfer-Encoding`` has none (RFC 9112 section 6.3), and a ``Content-Length: 0`` an empty one."""
    for name, value in scope.get("headers") or ():
        if name == b"transfer-encoding" or (name == b"content-length" and value != b"0"):
            return True
    return False


def _too_large(limit: int) -> EdgeError:
    return EdgeError(
        413,
        "payload_too_large",
        f"request body larger than this route's limit of {limit} bytes",
        hint="docs/api-limits.md lists the limit of every route",
    )


def _is_json(scope: dict[str, Any]) -> bool:
    ctype = dict(scope.get("headers") or []).get(b"content-type", b"").split(b";")[0].strip().lower()
    return ctype in (b"application/json", b"") or ctype.endswith(b"+json")


async def _empty_receive() -> dict[str, Any]:
    return {"type": "http.request", "body": b"", "more_body": False}


def _replay(body: bytes, receive: Any) -> Callable[[], Awaitable[dict[str, Any]]]:
    sent = False

    async def replay() -> dict[str, Any]:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return dict(await receive())

    return replay
