"""``count`` with ``count.index``, ``for_each`` with ``each.key`` / ``each.value``, and ``dynamic`` blocks."""

from __future__ import annotations

from tests.declarations.terraform.helpers import cluster, load, problems


def test_count_makes_indexed_instances() -> None:
    spec = load(cluster(name='"acme-${count.index}"', body="  count = 3"))
    assert [c.address for c in spec.clusters] == [f"velyrix_cluster.training[{i}]" for i in range(3)]
    assert [c.name for c in spec.clusters] == ["acme-0", "acme-1", "acme-2"]
    assert load(cluster(body="  count = 0") + cluster("other", name='"b"')).clusters[0].name == "b"


def test_for_each_over_a_map_and_a_set() -> None:
    spec = load(cluster(name='"acme-${each.key}"', node_count="each.value", body="  for_each = { a = 2, b = 4 }"))
    assert [(c.address, c.name, c.node_count) for c in spec.clusters] == [
        ('velyrix_cluster.training["a"]', "acme-a", 2),
        ('velyrix_cluster.training["b"]', "acme-b", 4),
    ]
    spec = load(cluster(name='"acme-${each.value}"', body='  for_each = toset(["x", "y"])'))
    assert [c.name for c in spec.clusters] == ["acme-x", "acme-y"]


def test_count_errors() -> None:
    assert "count must be a whole number >= 0" in problems(cluster(body="  count = -1"))[0]
    out = problems(cluster(body="  count = 1\n  for_each = {}"))
    assert "count and for_each cannot both be set" in out[0]
    assert "unsupported reference 'count.index'" in problems(cluster(name='"a-${count.index}"'))[0]
    assert "for_each needs a map or a set of strings" in problems(cluster(body="  for_each = 3"))[0]


def test_instances_are_referenced_as_a_list_or_a_map() -> None:
    spec = load(
        cluster(name='"a-${count.index}"', node_count="2", body="  count = 2")
        + cluster("total", name='"sum"', node_count="sum(velyrix_cluster.training[*].node_count)")
    )
    assert spec.clusters[-1].node_count == 4


def test_dynamic_block_expands_with_its_iterator() -> None:
    body = (
        '  dynamic "storage" {\n    for_each = var.tiers\n    iterator = tier\n'
        "    content {\n      parallel_fs_tb = tier.value.pfs\n    }\n  }"
    )
    prelude = 'variable "tiers" {\n  type = list(object({ pfs = number }))\n  default = [{ pfs = 100 }]\n}\n'
    assert load(prelude + cluster(body=body)).clusters[0].storage.parallel_fs_tb == 100.0
    spec = load(prelude + cluster(body=body), variables={"tiers": "[]"})
    assert spec.clusters[0].storage.parallel_fs_tb == 0.0
    out = problems(cluster(body='  dynamic "storage" {\n    content {}\n  }'))
    assert "needs one label, for_each and one content block" in out[0]


def test_a_for_each_instance_keeps_its_address_through_the_api_body() -> None:
    """``velyrix apply`` sends a for_each instance as JSON with its address (``velyrix_cluster.x["a.b"]``);
    the API renders it to an HCL label with escaped quotes, which the loader decodes as Terraform does."""
    from velyrix.controlplane import specs

    spec = load(cluster(name='"acme-${each.value}"', body='  for_each = { "eu.a" = "one" }')).clusters[0]
    again = specs.validate(specs.ClusterSpecBody(**specs.to_body(spec)))
    assert (again.address, again.name) == ('velyrix_cluster.training["eu.a"]', "acme-one")
