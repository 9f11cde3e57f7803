"""``Idempotency-Key`` on POST: the first answer is stored with the created resource (same
transaction); a retry with the same key and body gets the stored answer and creates nothing; the same
key with another body is refused (422). Keys are per tenant (provider keys share ``provider``)."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from typing import Any

from fastapi.encoders import jsonable_encoder
from fastapi.responses import JSONResponse
from pydantic import BaseModel
from sqlalchemy import exc as sa_exc

from velyrix import errors
from velyrix.controlplane.api.context import Ctx
from velyrix.controlplane.db import models

HEADER = "Idempotency-Key"
MAX_KEY_LEN = 255


class IdempotencyKeyReusedError(errors.VelyrixError):
    code = "idempotency_key_reused"
    http_status = 422
    template = "Idempotency-Key '{key}' was used before with a different request"


def _owner(ctx: Ctx) -> str:
    return ctx.principal.tenant_id or "provider"


def _find(ctx: Ctx, key: str) -> models.IdempotencyRecord | None:
    session = ctx.scope.session
    rows = session.query(models.IdempotencyRecord).filter_by(owner=_owner(ctx), key=key).limit(1).all()
    return rows[0] if rows else None


class SecretNotReplayableError(errors.ConflictError):
    code = "secret_not_replayable"
    template = "{message}"


def _replay(ctx: Ctx, record: models.IdempotencyRecord, body_sha256: str) -> JSONResponse:
    if record.body_sha256 != body_sha256 or record.path != ctx.request.url.path:
        raise IdempotencyKeyReusedError(key=record.key, hint="use a new Idempotency-Key for a new request")
    target = str(record.response.get("id", record.path))
    if record.response.get("_redacted"):
        raise SecretNotReplayableError(
            f"the first request with this Idempotency-Key created {target}; its secret is shown only once "
            "and is not stored",
            hint=f"revoke {target} and create a new key",
            id=target,
        )
    ctx.audit(target, status_code=record.status_code, outcome="replayed")
    ctx.commit()
    return JSONResponse(record.response, status_code=record.status_code, headers={"Idempotent-Replayed": "true"})


def create(
    ctx: Ctx,
    key: str | None,
    body: Any,
    make: Callable[[], tuple[dict[str, Any], int]],
    model: type[BaseModel],
    secret_fields: tuple[str, ...] = (),
) -> JSONResponse:
    """Run ``make`` (which adds the resource and its audit event, returning ``(json, status)``) at
    most once per ``key``, and commit. Without a key, just runs and commits. The answer is serialized
    through ``model`` (the route's response model), as FastAPI does for the other routes.
    ``secret_fields`` are never stored: a retry of such a request is refused (409) instead of replayed."""
    if key is not None and not 1 <= len(key) <= MAX_KEY_LEN:
        raise errors.InvalidInputError(
            f"{HEADER} must be 1 to {MAX_KEY_LEN} characters", hint="use a UUID per logical request"
        )
    digest = hashlib.sha256(json.dumps(jsonable_encoder(body), sort_keys=True).encode()).hexdigest()
    if key is not None:
        found = _find(ctx, key)
        if found is not None:
            return _replay(ctx, found, digest)
    try:
        payload, status = make()
        payload = model.model_validate(payload).model_dump(mode="json")
        if key is not None:
            stored = {k: v for k, v in payload.items() if k not in secret_fields}
            if len(stored) < len(payload):
                stored["_redacted"] = True
            ctx.scope.session.add(
                models.IdempotencyRecord(
                    owner=_owner(ctx),
                    key=key,
                    method=ctx.request.method,
                    path=ctx.request.url.path,
                    body_sha256=digest,
                    status_code=status,
                    response=stored,
                )
            )
        ctx.commit()
    except (sa_exc.IntegrityError, errors.ConflictError):
        # A concurrent twin with the same key may have won the race: its resource stands, ours is
        # rolled back, and this request gets the twin's answer.
        ctx.scope.session.rollback()
        found = _find(ctx, key) if key is not None else None
        if found is None:
            raise
        return _replay(ctx, found, digest)
    return JSONResponse(payload, status_code=status)
