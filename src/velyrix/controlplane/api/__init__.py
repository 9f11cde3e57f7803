"""The HTTP API: ``create_app()`` builds the FastAPI application (one router per resource under /v1)."""

from velyrix.controlplane.api.app import create_app

__all__ = ["create_app"]
