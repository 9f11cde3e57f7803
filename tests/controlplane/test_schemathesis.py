"""schemathesis against /openapi.json, in-process through the ASGI transport, on SQLite and
PostgreSQL: 50 generated requests per operation and mode (data that fits the schema, and data that
does not), no 5xx, every answer within the schema (status code, content type, headers, body).

Each request carries a key that has the operation's scope (tenant owner, or the provider's operator
for provider-only operations), so that generated data reaches the handlers instead of stopping at 403.
"""

from __future__ import annotations

from typing import Any

import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from hypothesis.errors import Unsatisfiable
from schemathesis.generation.modes import GenerationMode
from schemathesis.specs.openapi.checks import negative_data_rejection, positive_data_acceptance

from tests.controlplane.conftest import World, auth
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


@pytest.fixture(scope="module")
def api_schema(app: Any) -> Any:
    schema = schemathesis.openapi.from_asgi("/openapi.json", app)
    schema.config.generation.update(allow_x00=False)  # NUL is refused everywhere (docs/api-limits.md)
    return schema


@pytest.mark.parametrize("mode", [GenerationMode.POSITIVE, GenerationMode.NEGATIVE], ids=["fits", "breaks"])
@pytest.mark.parametrize(("method", "path", "_name"), OPERATIONS, ids=[f"{m} {p}" for m, p, _ in OPERATIONS])
def test_api_answers_generated_requests_within_its_schema(
    api_schema: Any, world: World, method: str, path: str, _name: str, mode: GenerationMode
) -> None:
    scope = _scope_of(path, method)
    headers = auth(
        world.a.keys["owner"] if scope is None or scope in roles.TENANT_ROLES["owner"] else world.provider["operator"]
    )
    operation = api_schema[path][method]
    calls = []

    # Every check runs, ST204 (undeclared methods: 405 with Allow) included, except two:
    # positive_data_acceptance (ST202: a body that fits the JSON schema may still break a cross-field rule,
    # such as a node type's fabrics, a region's capacity or a tier's minimum size, which the catalog checks
    # rightly refuse with 422) and negative_data_rejection (it counts requests as schema-breaking for
    # lacking the Authorization header that this test always adds).
    @given(case=operation.as_strategy(mode))
    @settings(
        max_examples=EXAMPLES_PER_OPERATION,
        deadline=None,
        derandomize=True,
        database=None,
        suppress_health_check=list(HealthCheck),
    )
    def run(case: Any) -> None:
        calls.append(1)
        case.call_and_validate(headers=headers, excluded_checks=[positive_data_acceptance, negative_data_rejection])

    try:
        run()
    except Unsatisfiable:
        assert mode is GenerationMode.NEGATIVE, "schema-conforming data could not be generated"
        pytest.skip("no request can break this operation's schema")
    assert calls
