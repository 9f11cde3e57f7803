"""schemathesis against /openapi.json, in-process through the ASGI transport, on SQLite and
PostgreSQL: 50 generated requests per operation and mode (data that fits the schema, and data that
does not), no 5xx, every answer within the schema (status code, content type, headers, body), and data
that fits the schema accepted (ST202: 2xx, or 401/403/404/409 as documented, never 422).

Each request carries a key that has the operation's scope (tenant owner, or the provider's operator
for provider-only operations), so that generated data reaches the handlers instead of stopping at 403.
"""

from __future__ import annotations

import uuid
from typing import Any

import pytest
import schemathesis
from hypothesis import HealthCheck, assume, given, settings
from hypothesis.errors import Unsatisfiable
from schemathesis.generation.modes import GenerationMode
from schemathesis.specs.openapi.checks import negative_data_rejection

from tests.controlplane.conftest import World, auth
from velyrix import catalog
from velyrix.controlplane.auth import roles
from velyrix.ops.service import ROUTERS

EXAMPLES_PER_OPERATION = 50
OPERATIONS = [
    (m, r.path, getattr(r.dependant.call, "__name__", ""))
    for router in ROUTERS
    for r in router.routes
    for m in sorted(getattr(r, "methods", ()))
]


def _scope_of(path: str, method: str) -> str | None:
    for router in ROUTERS:
        for r in router.routes:
            if getattr(r, "path", None) == path and method in getattr(r, "methods", ()):
                deps = r.dependant.dependencies  # type: ignore[attr-defined]
                return next((d.call.required_scope for d in deps if hasattr(d.call, "required_scope")), None)
    return None


def _fits_workload_rules(body: Any) -> bool:
    """Whether a cluster body keeps the workload rules that its schema states in words only
    (``velyrix.controlplane.specs.WORKLOAD_CROSS_FIELD_RULES``), computed here on their own."""
    workload = body.get("workload") if isinstance(body, dict) else None
    if not workload:
        return True
    gpus = body["node_count"] * catalog.node_type(body["node_type"]).gpus_per_node
    tp, pp, dp = workload.get("tp", 1), workload.get("pp", 1), workload.get("dp")
    layers, hidden, heads = workload.get("layers"), workload.get("hidden"), workload.get("heads")
    kv_heads = workload.get("kv_heads") or heads
    return (
        gpus % (tp * pp * (dp or 1)) == 0
        and (layers is None or pp <= layers)
        and (heads is None or hidden is None or heads <= hidden)
        and (heads is None or heads % kv_heads == 0)
    )


def _is_connectivity_hcl(body: Any) -> bool:
    """Whether the body's ``hcl`` declares connectivity resources without a problem."""
    from velyrix import errors
    from velyrix.declarations import connectivity

    try:
        connectivity.loads(body["hcl"], "request body", known_clusters=[])
    except (errors.VelyrixError, KeyError, TypeError):
        return False
    return True


class _Keys:
    """A client that follows the Idempotency-Key draft: a key names one request; a new body gets a new key
    (reusing one for another body is refused with 422, as tests/controlplane/test_idempotency_and_etags.py shows)."""

    def __init__(self) -> None:
        self.bodies: dict[str, Any] = {}

    def fresh(self, case: Any) -> None:
        key = (case.headers or {}).get("Idempotency-Key")
        if key is None:
            return
        if self.bodies.setdefault(key, case.body) != case.body:
            case.headers["Idempotency-Key"] = key = str(uuid.uuid4())
            self.bodies[key] = case.body


@pytest.fixture(scope="module")
def keys() -> _Keys:
    return _Keys()


@pytest.fixture(scope="module")
def api_schema(app: Any) -> Any:
    schema = schemathesis.openapi.from_asgi("/openapi.json", app)
    schema.config.generation.update(allow_x00=False)  # NUL is refused everywhere (docs/api-limits.md)
    return schema


@pytest.mark.parametrize("mode", [GenerationMode.POSITIVE, GenerationMode.NEGATIVE], ids=["fits", "breaks"])
@pytest.mark.parametrize(("method", "path", "_name"), OPERATIONS, ids=[f"{m} {p}" for m, p, _ in OPERATIONS])
def test_api_answers_generated_requests_within_its_schema(
    api_schema: Any, world: World, keys: _Keys, method: str, path: str, _name: str, mode: GenerationMode
) -> None:
    scope = _scope_of(path, method)
    headers = auth(
        world.a.keys["owner"] if scope is None or scope in roles.TENANT_ROLES["owner"] else world.provider["operator"]
    )
    operation = api_schema[path][method]
    calls = []

    # Every check runs, ST202 (data that fits is accepted) and ST204 (undeclared methods: 405 with Allow)
    # included, except negative_data_rejection (it counts requests as schema-breaking for lacking the
    # Authorization header that this test always adds). Data that fits is what a careful client sends: it
    # keeps the workload rules the schema states in words, and a new body gets a new Idempotency-Key.
    @given(case=operation.as_strategy(mode))
    @settings(
        max_examples=EXAMPLES_PER_OPERATION,
        deadline=None,
        derandomize=True,
        database=None,
        suppress_health_check=list(HealthCheck),
    )
    def run(case: Any) -> None:
        if mode is GenerationMode.POSITIVE:
            assume(path != "/v1/clusters" or method != "POST" or _fits_workload_rules(case.body))
            # a SAML provider's metadata must be its IdP's metadata XML (saml_checks.check_metadata), a rule
            # its schema states in words only: generated strings are never that
            saml = path == "/v1/identity-providers" and isinstance(case.body, dict) and case.body.get("kind") == "saml"
            assume(method != "POST" or not saml)
            # a cluster's connectivity is HCL (declarations/connectivity.py), a rule its schema states in
            # words only: generated text that is not such HCL is left out (the empty text, no objects, stays)
            assume(method != "PUT" or not path.endswith("/connectivity") or _is_connectivity_hcl(case.body))
            keys.fresh(case)
        calls.append(1)
        case.call_and_validate(headers=headers, excluded_checks=[negative_data_rejection])

    try:
        run()
    except Unsatisfiable:
        assert mode is GenerationMode.NEGATIVE, "schema-conforming data could not be generated"
        pytest.skip("no request can break this operation's schema")
    assert calls
