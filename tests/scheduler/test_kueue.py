"""Kueue manifests from the policy, validated against vendored Kueue CRD and Kubernetes schemas."""

from __future__ import annotations

import copy
from pathlib import Path

import jsonschema
import pytest
import yaml

from velyrix.ops.scheduler import clusters, kueue, policies

HERE = Path(__file__).parent
SCHEMAS = HERE / "schemas"


def _strict(schema: dict) -> dict:
    """Unknown fields are errors (``kubectl --validate=strict``): close every object that lists properties."""
    s = copy.deepcopy(schema)

    def walk(node: object) -> None:
        if isinstance(node, dict):
            if "properties" in node and "additionalProperties" not in node:
                node["additionalProperties"] = False
            for v in node.values():
                walk(v)
        elif isinstance(node, list):
            for v in node:
                walk(v)

    walk(s)
    return s


def _validator(kind: str, api: str = "v1beta2") -> jsonschema.Draft7Validator:
    if kind == "Node":
        core = yaml.safe_load((SCHEMAS / "k8s-core-v1.yaml").read_text())
        schema = {**core["Node"], "definitions": core["definitions"]}
    else:
        schema = yaml.safe_load((SCHEMAS / f"kueue-{api}-{kind.lower()}.yaml").read_text())
    schema = _strict(schema)
    if "metadata" in schema.get("properties", {}) and kind != "Node":
        schema["properties"]["metadata"] = {
            "type": "object",
            "required": ["name"],
            "properties": {"name": {"type": "string"}},
        }
    return jsonschema.Draft7Validator(schema)


def _manifests(api: str = "v1beta2") -> list[dict]:
    policy = policies.load(HERE / "data" / "policy.hcl")
    return kueue.render(policy, clusters.twin(), drained={"twin-003": "health"}, api=api)


def _cel_rules(cq: dict) -> list[str]:
    """The ClusterQueue CEL rules of the v1beta2 CRD that bear on our output (jsonschema cannot run CEL)."""
    spec, out = cq["spec"], []
    for rg in spec["resourceGroups"]:
        if not all(len(f["resources"]) == len(rg["coveredResources"]) for f in rg["flavors"]):
            out.append("flavors must have the same number of resources as the coveredResources")
        if "cohortName" not in spec and any("borrowingLimit" in r for f in rg["flavors"] for r in f["resources"]):
            out.append("borrowingLimit must be nil when cohort is empty")
    return out


@pytest.mark.parametrize("api", ["v1beta2", "v1beta1"])
def test_every_manifest_validates_against_its_schema(api: str):
    docs = _manifests(api)
    assert sorted({d["kind"] for d in docs}) == ["ClusterQueue", "LocalQueue", "Node", "ResourceFlavor"]
    for d in docs:
        if d["kind"] != "Node":
            assert d["apiVersion"] == f"kueue.x-k8s.io/{api}"
        errors = sorted(_validator(d["kind"], api).iter_errors(d), key=str)
        assert not errors, f"{d['kind']} {d['metadata']['name']}: {errors[0].message}"
        if d["kind"] == "ClusterQueue" and api == "v1beta2":
            assert _cel_rules(d) == []
    # The YAML round-trips to the same objects.
    assert list(yaml.safe_load_all(kueue.to_yaml(docs))) == docs


def test_quotas_cohorts_and_weights_follow_the_policy():
    cqs = {d["metadata"]["name"]: d["spec"] for d in _manifests() if d["kind"] == "ClusterQueue"}
    assert cqs["llm"]["cohortName"] == "research" and cqs["search"]["cohortName"] == "product"
    assert all("cohort" not in cq for cq in cqs.values())  # v1beta2 rejects spec.cohort
    llm = cqs["llm"]["resourceGroups"][0]["flavors"][0]["resources"][0]
    # llm: 3/4 of research's 60% of the cluster's 32 GPUs = 14.4 -> 14 (largest remainder), limit 16.
    assert llm == {"name": "nvidia.com/gpu", "nominalQuota": 14, "borrowingLimit": 2}
    assert cqs["vision"]["fairSharing"]["weight"] == 1 and cqs["search"]["fairSharing"]["weight"] == 2
    nominal = {n: cq["resourceGroups"][0]["flavors"][0]["resources"][0]["nominalQuota"] for n, cq in cqs.items()}
    # every GPU of the cluster is in some queue: 14.4 + 4.8 + 12.8 -> 14 + 5 + 13 = 32
    assert nominal == {"llm": 14, "vision": 5, "search": 13} and sum(nominal.values()) == 32
    # quota unused by a team is lent within its cohort: no lendingLimit anywhere
    assert not any(
        "lendingLimit" in r for cq in cqs.values() for r in cq["resourceGroups"][0]["flavors"][0]["resources"]
    )


def test_v1beta1_only_by_request_and_with_its_cohort_field():
    cqs = [d for d in _manifests("v1beta1") if d["kind"] == "ClusterQueue"]
    assert {cq["spec"]["cohort"] for cq in cqs} == {"research", "product"}
    with pytest.raises(Exception, match="Kueue API version"):
        _manifests("v1alpha1")


def test_resource_flavors_select_gpu_feature_discovery_product_names():
    flavors = [d for d in _manifests() if d["kind"] == "ResourceFlavor"]
    assert flavors and all(f["spec"]["nodeLabels"]["nvidia.com/gpu.product"] == "NVIDIA-H200" for f in flavors)


def test_a_capped_team_leaves_its_quota_to_the_others():
    assert kueue.apportion(512, [0.5, 0.3, 0.2], [64, None, None]) == [64, 269, 179]
    assert sum(kueue.apportion(512, [0.5, 0.3, 0.2], [64, None, None])) == 512
    assert kueue.apportion(10, [1, 1, 1], [None, None, None]) == [4, 3, 3]
    assert kueue.apportion(10, [1, 1], [2, 3]) == [2, 3]  # every team at its limit: 5 GPUs in no queue


def test_validation_catches_a_wrong_manifest():
    cq = next(d for d in _manifests() if d["kind"] == "ClusterQueue")
    bad = copy.deepcopy(cq)
    bad["spec"]["queueingStrategy"] = "Random"
    bad["spec"]["resourceGroups"][0]["flavors"][0]["quota"] = 3
    msgs = [e.message for e in _validator("ClusterQueue").iter_errors(bad)]
    assert any("Random" in m for m in msgs) and any("quota" in m for m in msgs)
    taint = next(d for d in _manifests() if d["kind"] == "Node")
    taint["spec"]["taints"][0]["effect"] = "Sometimes"
    with pytest.raises(jsonschema.ValidationError):
        _validator("Node").validate(taint)
