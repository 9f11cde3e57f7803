"""``lifecycle`` (prevent_destroy, ignore_changes) and ``depends_on`` as the loader reads them; what
apply and destroy do with them is in tests/reconcile/test_state_apply.py."""

from __future__ import annotations

from tests.declarations.terraform.helpers import cluster, load, problems


def test_lifecycle_is_read_per_instance() -> None:
    body = "  lifecycle {\n    prevent_destroy = true\n    ignore_changes = [node_count, storage]\n  }"
    spec = load(cluster(body=body))
    life = spec.lifecycles["velyrix_cluster.training"]
    assert life.prevent_destroy and life.ignore_changes == ("node_count", "storage")


def test_lifecycle_errors() -> None:
    out = problems(
        'variable "p" {\n  default = true\n}\n' + cluster(body="  lifecycle {\n    prevent_destroy = var.p\n  }")
    )
    assert "prevent_destroy must be the literal true or false" in out[0]
    out = problems(cluster(body="  lifecycle {\n    ignore_changes = [node_cnt]\n  }"))
    assert "did you mean 'node_count'" in out[0]
    out = problems(cluster(body="  lifecycle {\n    prevent_destroi = true\n  }"))
    assert "did you mean 'prevent_destroy'" in out[0]


def test_depends_on_names_declared_resources() -> None:
    spec = load(cluster("a", name='"a"') + cluster("b", name='"b"', body="  depends_on = [velyrix_cluster.a]"))
    assert spec.lifecycles["velyrix_cluster.b"].depends_on == ("velyrix_cluster.a",)
    out = problems(cluster("a", name='"a"') + cluster("b", name='"b"', body="  depends_on = [velyrix_cluster.c]"))
    assert "undeclared resource velyrix_cluster.c" in out[0] and "main.tf:16:17:" in out[0]
