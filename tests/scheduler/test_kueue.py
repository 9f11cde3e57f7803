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


def _validator(kind: str) -> jsonschema.Draft7Validator:
    if kind == "Node":
        core = yaml.safe_load((SCHEMAS / "k8s-core-v1.yaml").read_text())
        schema = {**core["Node"], "definitions": core["definitions"]}
    else:
        schema = yaml.safe_load((SCHEMAS / f"kueue-v1beta1-{kind.lower()}.yaml").read_text())
    schema = _strict(schema)
    if "metadata" in schema.get("properties", {}) and kind != "Node":
        schema["properties"]["metadata"] = {
            "type": "object",
            "required": ["name"],
            "properties": {"name": {"type": "string"}},
        }
    return jsonschema.Draft7Validator(schema)


def _manifests() -> list[dict]:
    policy = policies.load(HERE / "data" / "policy.hcl")
    return kueue.render(policy, clusters.twin(), drained={"twin-003": "health"})


def test_every_manifest_validates_against_its_schema():
    docs = _manifests()
    assert sorted({d["kind"] for d in docs}) == ["ClusterQueue", "LocalQueue", "Node", "ResourceFlavor"]
    for d in docs:
        errors = sorted(_validator(d["kind"]).iter_errors(d), key=str)
        assert not errors, f"{d['kind']} {d['metadata']['name']}: {errors[0].message}"
    # The YAML round-trips to the same objects.
    assert list(yaml.safe_load_all(kueue.to_yaml(docs))) == docs


def test_quotas_cohorts_and_weights_follow_the_policy():
    cqs = {d["metadata"]["name"]: d["spec"] for d in _manifests() if d["kind"] == "ClusterQueue"}
    assert cqs["llm"]["cohort"] == "research" and cqs["search"]["cohort"] == "product"
    llm = cqs["llm"]["resourceGroups"][0]["flavors"][0]["resources"][0]
    # llm: 3/4 of research's shares, research 60% of the cluster's 32 GPUs -> 14, capped at 16 by its limit.
    assert llm == {"name": "nvidia.com/gpu", "nominalQuota": 14, "borrowingLimit": 2}
    assert cqs["vision"]["fairSharing"]["weight"] == 1 and cqs["search"]["fairSharing"]["weight"] == 2
    nominal = sum(cq["resourceGroups"][0]["flavors"][0]["resources"][0]["nominalQuota"] for cq in cqs.values())
    assert nominal <= 32


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
