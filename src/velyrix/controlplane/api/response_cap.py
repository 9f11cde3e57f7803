"""The response size cap (docs/api-limits.md): a list page whose JSON body would exceed
``MAX_RESPONSE_BYTES`` is cut to the items that fit, with ``next_cursor`` set to the last id kept, so a
client following cursors still gets every item exactly once. Responses under the cap (every response but
an oversized page) pass through untouched, without buffering. A single object is never cut: what the edge
admits bounds it (edge.py)."""

from __future__ import annotations

import json
from typing import Any

MAX_RESPONSE_BYTES = 4 * 1024 * 1024
"""4 MiB: a page of 200 (scoping.MAX_PAGE) objects averaging 20 KiB; larger pages are cut."""


def _dumps(value: Any) -> bytes:
    """The bytes FastAPI's JSONResponse would send for ``value`` (strict JSON, UTF-8, compact)."""
    return json.dumps(value, ensure_ascii=False, allow_nan=False, separators=(",", ":")).encode()


def cut_page(body: bytes, max_bytes: int) -> bytes | None:
    """``body`` cut under ``max_bytes`` when it is a page (``{"items": [{"id": ...}, ...], "next_cursor"}``)
    of more than one item; None when it is not a page or cannot be cut (its first item alone is too big)."""
    try:
        page = json.loads(body)
    except ValueError:
        return None
    if not isinstance(page, dict) or set(page) != {"items", "next_cursor"} or not isinstance(page["items"], list):
        return None
    items = page["items"]
    if len(items) < 2 or not all(isinstance(i, dict) and isinstance(i.get("id"), str) for i in items):
        return None
    room = max_bytes - len(_dumps({"items": [], "next_cursor": items[-1]["id"]}))
    kept = 0
    for item in items:
        room -= len(_dumps(item)) + 1  # the item and its comma
        if room < 0:
            break
        kept += 1
    if kept == 0:
        return None
    return _dumps({"items": items[:kept], "next_cursor": items[kept - 1]["id"]})


class ResponseCapMiddleware:
    """Cuts oversized list pages (``cut_page``); everything else goes out as the app sent it."""

    def __init__(self, app: Any, max_bytes: int = MAX_RESPONSE_BYTES) -> None:
        self.app = app
        self.max_bytes = max_bytes

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        held: list[dict[str, Any]] = []

        async def capped(message: dict[str, Any]) -> None:
            if message["type"] == "http.response.start" and self._over(message):
                held.append(message)
                return
            if not held:
                await send(message)
                return
            held.append(message)
            if message["type"] == "http.response.body" and not message.get("more_body", False):
                await self._flush(held, send)

        await self.app(scope, receive, capped)

    def _over(self, start: dict[str, Any]) -> bool:
        length = dict(start.get("headers") or []).get(b"content-length")
        return length is not None and length.isdigit() and int(length) > self.max_bytes

    async def _flush(self, held: list[dict[str, Any]], send: Any) -> None:
        start, body = held[0], b"".join(m.get("body", b"") for m in held[1:])
        cut = cut_page(body, self.max_bytes)
        if cut is not None:
            headers = [(k, v) for k, v in start.get("headers") or [] if k not in (b"content-length", b"etag")]
            start = {**start, "headers": [*headers, (b"content-length", str(len(cut)).encode())]}
            body = cut
        await send(start)
        await send({"type": "http.response.body", "body": body})
