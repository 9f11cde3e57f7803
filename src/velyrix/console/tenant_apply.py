"""Apply from the console: the tenant pastes (or uploads) a ``velyrix_cluster`` declaration, sees its plan
with the monthly price, then applies it. The plan is the planner the API's create route runs
(``planners.plan.plan_cluster`` on the spec the HCL loader built, every problem at its line and column);
the apply is the API's own route function (``api.routes.clusters.create_cluster``) with the user's session
and the form's ``Idempotency-Key`` (made when the plan was shown), so a second submit of the same form
replays the first answer and creates nothing. Its audit event carries the console route's name
(``console.clusters.create``). Scope ``clusters:write``."""

from __future__ import annotations

import json
import uuid
from typing import Any

import pydantic
from fastapi import APIRouter, Depends, File, Form, Request, UploadFile
from fastapi.responses import RedirectResponse, Response

from velyrix import errors
from velyrix.console import access, render
from velyrix.controlplane import specs
from velyrix.controlplane.api import problems
from velyrix.controlplane.api.context import Ctx
from velyrix.controlplane.api.routes import clusters as cluster_routes
from velyrix.declarations import loader, models
from velyrix.planners import plan as planner

router = APIRouter(include_in_schema=False)
MAX_HCL = 65536
"""Characters of a declaration (the API's own limit on an HCL body: ``ops/billing/routes.py``)."""
FILENAME = "console.tf"
SEED = """provider "velyrix" { region = "us-east-1" }

resource "velyrix_cluster" "training" {
  name       = "acme-pretrain"
  node_type  = "hgx-h200-8g"
  node_count = 64
  fabric     = "infiniband-ndr"
  scheduler  = "slurm"
  storage {
    parallel_fs_tb = 800
    object_tb      = 2000
  }
  # 512 GPUs, one apply, validated on delivery
}
"""
"""The seed cluster of the product page (examples/acme-pretrain.tf; tests check they are the same)."""


def _form(request: Request, status: int, hcl: str, **values: Any) -> Response:
    return render.page(
        request,
        "apply.html",
        status,
        hcl=hcl,
        idempotency_key=values.pop("idempotency_key", "") or str(uuid.uuid4()),
        problems=values.pop("problems", []),
        plan=values.pop("plan", None),
        title="Apply a cluster",
    )


@router.get("/console/apply", name="console.apply")
def apply_page(request: Request, ctx: Ctx = Depends(access.reads("clusters:write"))) -> Response:
    """The declaration form, filled with the seed cluster."""
    return _form(request, 200, SEED)


def _text(hcl: str, upload: UploadFile | None) -> str:
    """The uploaded file's text when one was chosen, else the pasted ``hcl``; at most ``MAX_HCL``."""
    if upload is None or not upload.filename:
        return hcl
    data = upload.file.read(MAX_HCL * 4 + 1)
    text = data.decode("utf-8", errors="replace")
    if len(text) > MAX_HCL:
        raise errors.InvalidInputError(f"the declaration is over {MAX_HCL} characters", hint="upload a smaller file")
    return text


def _spec(text: str) -> models.ClusterSpec:
    """The one cluster of ``text``; ``SpecError`` with every problem at its line and column."""
    spec_file = loader.loads(text, FILENAME)
    if len(spec_file.clusters) != 1:
        found = f"{len(spec_file.clusters)} velyrix_cluster resources"
        raise errors.SpecError([errors.Diagnostic(FILENAME, 1, 1, found, expected="one velyrix_cluster per apply")])
    return spec_file.clusters[0]


def _problems(exc: errors.VelyrixError) -> list[dict[str, Any]]:
    if isinstance(exc, errors.SpecError):
        return [d.to_dict() | {"text": d.render()} for d in exc.diagnostics]
    return [{"line": None, "column": None, "text": exc.message, "hint": exc.hint}]


def _refused(request: Request, text: str, key: str, exc: errors.VelyrixError) -> Response:
    """The form again with the problems beside the declaration; recorded as the API records a refusal."""
    found = _problems(exc)
    problems.problem(request, exc.http_status, exc.code, "; ".join(p["text"] for p in found)[:2000])
    return _form(request, exc.http_status, text, idempotency_key=key, problems=found)


@router.post("/console/apply/plan", name="console.clusters.plan")
def plan(
    request: Request,
    ctx: Ctx = Depends(access.acts("clusters:write")),
    hcl: str = Form("", max_length=MAX_HCL),
    idempotency_key: str = Form("", max_length=255),
    upload: UploadFile | None = File(None),
) -> Response:
    """The plan of the declaration and its monthly price (USD), with the form to apply it."""
    try:
        text = _text(hcl, upload)
    except errors.VelyrixError as exc:
        return _refused(request, hcl, idempotency_key, exc)
    try:
        spec = _spec(text)
    except errors.VelyrixError as exc:
        return _refused(request, text, idempotency_key, exc)
    result = planner.plan_cluster(spec)
    return _form(request, 200, text, idempotency_key=idempotency_key, plan=result)


def _create(request: Request, ctx: Ctx, text: str, key: str) -> str:
    spec = _spec(text)
    try:
        body = specs.ClusterSpecBody.model_validate(specs.to_body(spec))
    except pydantic.ValidationError as exc:
        raise errors.InvalidInputError(str(exc.errors()[0]["msg"])) from None
    answer = cluster_routes.create_cluster(body, request, ctx, key or None)
    return str(json.loads(bytes(answer.body))["id"])


@router.post("/console/apply", name="console.clusters.create")
def apply(
    request: Request,
    ctx: Ctx = Depends(access.acts("clusters:write")),
    hcl: str = Form("", max_length=MAX_HCL),
    idempotency_key: str = Form("", max_length=255),
) -> Response:
    """Create the cluster through the API's create route; on to its page (phases live)."""
    try:
        cluster_id = _create(request, ctx, hcl, idempotency_key)
    except errors.VelyrixError as exc:
        return _refused(request, hcl, idempotency_key, exc)
    return RedirectResponse(f"{render.PREFIX}/clusters/{cluster_id}", status_code=303)
