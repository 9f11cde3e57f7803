"""The API's interactive documentation (``/docs``, Swagger UI) served entirely by the control plane: its
JavaScript, CSS and icon come from the pinned ``swagger-ui-bundle`` package (Swagger UI's dist files,
Apache-2.0), mounted at ``/docs/assets``, so the page works on a network without the Internet.
"""

from __future__ import annotations

from fastapi import FastAPI
from fastapi.openapi.docs import get_swagger_ui_html, get_swagger_ui_oauth2_redirect_html
from fastapi.responses import HTMLResponse
from fastapi.staticfiles import StaticFiles

DOCS_URL = "/docs"
ASSETS_URL = "/docs/assets"
OAUTH2_REDIRECT_URL = "/docs/oauth2-redirect"


def install(app: FastAPI) -> None:
    """Serve ``/docs`` and its assets from the package (``app`` built with ``docs_url=None``)."""
    from swagger_ui_bundle import swagger_ui_path

    app.mount(ASSETS_URL, StaticFiles(directory=str(swagger_ui_path)), name="docs-assets")

    @app.get(DOCS_URL, include_in_schema=False)
    def swagger_ui() -> HTMLResponse:
        return get_swagger_ui_html(
            openapi_url=app.openapi_url or "/openapi.json",
            title=f"{app.title} - API documentation",
            oauth2_redirect_url=OAUTH2_REDIRECT_URL,
            swagger_js_url=f"{ASSETS_URL}/swagger-ui-bundle.js",
            swagger_css_url=f"{ASSETS_URL}/swagger-ui.css",
            swagger_favicon_url=f"{ASSETS_URL}/favicon-32x32.png",
        )

    @app.get(OAUTH2_REDIRECT_URL, include_in_schema=False)
    def oauth2_redirect() -> HTMLResponse:
        return get_swagger_ui_oauth2_redirect_html()
