"""What every console form does with a refusal: the model's errors placed beside the form's fields, and
the refusal recorded as the API records its own (``problems.problem``: a denied audit event under the
console route's name, nothing committed)."""

from __future__ import annotations

from collections.abc import Collection

import pydantic
from fastapi import Request

from velyrix.controlplane.api import problems


def field_errors(exc: pydantic.ValidationError, fields: Collection[str], default: str = "form") -> dict[str, str]:
    """The model's error messages by form field, the first per field; an error of no field in ``fields``
    (a model-level rule, or a field the form does not show) is put under ``default``."""
    found: dict[str, str] = {}
    for err in exc.errors():
        field = str(err["loc"][0]) if err["loc"] else default
        found.setdefault(field if field in fields else default, err["msg"])
    return found


def refuse(request: Request, status: int, code: str, fields: dict[str, str]) -> None:
    """Record the refusal (``status``, stable ``code``) with each field's message, as the API records its own."""
    problems.problem(request, status, code, "; ".join(f"{k}: {v}" for k, v in sorted(fields.items())))
