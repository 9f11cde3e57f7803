"""``/docs`` works without the Internet: the Swagger UI page refers only to assets the control plane itself
serves (from the pinned ``swagger-ui-bundle`` package), and those assets are there. A real server on
loopback, fetched with a plain HTTP client as a browser would."""

from __future__ import annotations

import re
import threading
import time
from pathlib import Path
from urllib.parse import urljoin

import httpx
import uvicorn

from velyrix.controlplane.api import create_app
from velyrix.testing.postgres import free_port


def test_the_api_docs_load_every_asset_from_the_control_plane(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("VELYRIX_HOME", str(tmp_path))
    app = create_app(f"sqlite:///{tmp_path / 'velyrix.db'}")
    port = free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    while not server.started:
        time.sleep(0.02)
    base = f"http://127.0.0.1:{port}"
    try:
        with httpx.Client(base_url=base, timeout=10) as http:
            page = http.get("/docs")
            assert page.status_code == 200 and "SwaggerUIBundle" in page.text
            refs = re.findall(r"""(?:src|href)=['"]([^'"]+)['"]""", page.text)
            refs += re.findall(r"""url:\s*['"]([^'"]+)['"]""", page.text)
            assert refs, page.text
            for ref in refs:
                url = urljoin(f"{base}/docs", ref)
                assert url.startswith(base + "/"), f"/docs loads {ref} from outside the control plane"
                got = http.get(url)
                assert got.status_code == 200, (ref, got.status_code)
                assert len(got.content) > 100, ref
            js = http.get(next(r for r in refs if r.endswith("swagger-ui-bundle.js")))
            assert "SwaggerUIBundle" in js.text and "javascript" in js.headers["content-type"]
    finally:
        server.should_exit = True
        thread.join(5)
