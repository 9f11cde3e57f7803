"""The cluster page's live status on a real uvicorn: the stream (``/console/clusters/{id}/stream``) sends
the status fragment at start and again when the signed acceptance report appears, so that the link to
the report shows in the open page (``templates/cluster_status.html``) without a reload; the first
fragment of a cluster that has one carries it already."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

from tests.console.conftest import Tenant, _tenant
from tests.identity.conftest import Served, home, served  # noqa: F401  (fixtures)
from velyrix.controlplane.identity import sessions

LINK = 'id="acceptance"'


@pytest.fixture
def acme(served: Served) -> Tenant:  # noqa: F811
    """Tenant acme (a session per role) and its cluster ``acme-train``, Validating, with no report yet."""
    from velyrix.controlplane.db import models

    with served.app.state.sessionmaker() as s:
        tenant = _tenant(s, "acme")
        cluster = models.Cluster(
            tenant_id=tenant.id,
            name="acme-train",
            region="us-east-1",
            node_type="hgx-h200-8g",
            node_count=2,
            spec={},
            plan={},
            phase="Validating",
        )
        s.add(cluster)
        s.commit()
        tenant.cluster_id = cluster.id
    return tenant


def _statuses(served: Served, tenant: Tenant) -> Iterator[str]:  # noqa: F811
    """The ``status`` events' fragments of the cluster's stream, as the viewer's browser reads them."""
    cookies = {sessions.COOKIE: tenant.sessions["viewer"]}
    url = f"{served.url}/console/clusters/{tenant.cluster_id}/stream"
    with httpx.Client(cookies=cookies, timeout=30) as client, client.stream("GET", url) as answer:
        assert answer.status_code == 200 and answer.headers["content-type"].startswith("text/event-stream")
        name, data = "", []
        for line in answer.iter_lines():
            if line.startswith("event: "):
                name = line.removeprefix("event: ")
            elif line.startswith("data: "):
                data.append(line.removeprefix("data: "))
            elif not line:
                if name == "status":
                    yield "\n".join(data)
                name, data = "", []


def _report(served: Served, tenant: Tenant) -> None:  # noqa: F811
    """The signed acceptance report of the cluster, as the reconciler's validation writes it."""
    from velyrix.controlplane.db import models

    report = {"report": {"kind": "acceptance", "cluster": {"id": tenant.cluster_id, "name": "acme-train"}}}
    with served.app.state.sessionmaker() as s:
        s.add(
            models.AcceptanceReport(
                tenant_id=tenant.id, cluster_id=tenant.cluster_id, region="us-east-1", passed=True, report=report
            )
        )
        s.commit()


def test_the_acceptance_link_arrives_over_the_stream(served: Served, acme: Tenant) -> None:  # noqa: F811
    page = httpx.get(
        f"{served.url}/console/clusters/{acme.cluster_id}", cookies={sessions.COOKIE: acme.sessions["viewer"]}
    )
    assert page.status_code == 200 and LINK not in page.text  # no report yet
    stream = _statuses(served, acme)
    first = next(stream)
    assert 'id="phase"' in first and "Validating" in first and LINK not in first
    _report(served, acme)  # the cluster's row itself does not change
    second = next(stream)  # within the client's read timeout
    assert LINK in second and f"/console/clusters/{acme.cluster_id}/acceptance.json" in second
    stream.close()
    again = _statuses(served, acme)
    assert LINK in next(again)  # a page opened now has it from the first fragment
    again.close()
    page = httpx.get(
        f"{served.url}/console/clusters/{acme.cluster_id}", cookies={sessions.COOKIE: acme.sessions["viewer"]}
    )
    assert LINK in page.text
