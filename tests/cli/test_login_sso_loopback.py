"""``velyrix login --sso``'s loopback listener (``cli/login_sso.py``) on a real 127.0.0.1 port: it keeps the
one-time code of the control plane's redirect to ``/callback`` and answers anything else, such as the
browser's ``/favicon.ico`` request after the page or a second visit, with 404, leaving the code alone (a
late request used to replace the code with nothing, and the CLI then said no sign-in had happened)."""

from __future__ import annotations

import http.server
import threading
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from velyrix.cli import login_sso


@pytest.fixture
def listener() -> Iterator[tuple[Any, str]]:
    catcher: Any = type("Catcher", (login_sso._Catcher,), {"code": None, "done": threading.Event()})
    server = http.server.HTTPServer(("127.0.0.1", 0), catcher)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield catcher, f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def test_the_code_survives_the_browsers_later_requests(listener: tuple[Any, str]) -> None:
    catcher, url = listener
    assert httpx.get(f"{url}/favicon.ico").status_code == 404 and not catcher.done.is_set()
    assert httpx.get(f"{url}{login_sso.CALLBACK_PATH}").status_code == 404  # no code: still waiting
    page = httpx.get(f"{url}{login_sso.CALLBACK_PATH}", params={"code": "one-time-code"})
    assert page.status_code == 200 and "id='done'" in page.text and catcher.done.is_set()
    assert httpx.get(f"{url}/favicon.ico").status_code == 404
    assert httpx.get(f"{url}{login_sso.CALLBACK_PATH}", params={"code": "another"}).status_code == 404
    assert catcher.code == "one-time-code"
