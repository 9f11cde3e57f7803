"""Policy files and the sacctmgr diff, without a Slurm (the live state is given as data)."""

from __future__ import annotations

from pathlib import Path

import pytest

from velyrix import errors
from velyrix.ops.scheduler import converging, policies

POLICY = Path(__file__).parent / "data" / "policy.hcl"


def test_policy_file_loads_teams_cost_centers_users_and_qos():
    p = policies.load(POLICY)
    assert p.cluster == "twin"
    assert p.teams["llm"].gpu_limit == 16 and p.teams["llm"].cost_center == "research"
    assert p.qos["high"].preempt == ("low",)
    assert p.user_teams()["daemon"] == ["llm", "vision"]


def test_policy_errors_name_file_line_and_closest_name():
    text = 'cost_center "research" {\n  shares = 1\n}\nteam "llm" {\n  cost_center = "reserch"\n  sharez = 2\n}\n'
    with pytest.raises(errors.SpecError) as exc:
        policies.loads(text, "p.hcl")
    msg = exc.value.message
    assert "p.hcl:5:3: unknown cost center 'reserch'" in msg and "did you mean 'research'?" in msg
    assert "p.hcl:6:3: unknown attribute 'sharez' in team 'llm'" in msg and "did you mean 'shares'?" in msg


def test_policy_rejects_wrong_types_and_unknown_qos():
    text = 'team "a" {\n  gpu_limit = "many"\n  qos = ["hihg"]\n}\nqos "high" {\n  priority = 1\n}\n'
    with pytest.raises(errors.SpecError) as exc:
        policies.loads(text, "p.hcl")
    assert "p.hcl:2:3: gpu_limit in team 'a' has a wrong value 'many'" in exc.value.message
    assert "did you mean 'high'?" in exc.value.message


def _fresh() -> converging.State:
    """What a new slurmdbd holds: the root account with root in it, and the normal QOS."""
    st = converging.State()
    st.qos["normal"] = {"Priority": "0", "GrpTRES": "", "MaxTRESPerUser": "", "MaxTRESPerJob": "", "Preempt": ""}
    st.accounts["root"] = {
        "Parent": "",
        "Fairshare": "1",
        "GrpTRES": "",
        "Priority": "",
        "QOS": "normal",
        "DefaultQOS": "",
    }
    st.assocs[("root", "root")] = {"Fairshare": "1"}
    st.default_account["root"] = "root"
    return st


def test_plan_adds_qos_before_accounts_parents_before_children_and_default_account_first():
    changes = converging.plan(policies.load(POLICY), _fresh())
    described = [c.describe() for c in changes]
    kinds = [c.kind for c in changes if c.op == "add"]
    assert kinds == sorted(kinds, key=["qos", "account", "user"].index)
    order = [c.name for c in changes if c.kind == "account"]
    assert order.index("research") < order.index("llm") and order.index("product") < order.index("search")
    daemon = [c for c in changes if c.kind == "user" and c.name.startswith("daemon ")]
    assert daemon[0].name == "daemon in vision" and "DefaultAccount=vision" in daemon[0].argv
    assert all("DefaultAccount" not in a for c in daemon[1:] for a in c.argv)
    assert "+ account llm  parent=research  fairshare=3  grptres=gres/gpu=16" in described
    assert "~ qos high  preempt: (none) -> low" in described


def test_plan_is_empty_when_live_matches_and_shows_modifications_and_deletions():
    policy = policies.load(POLICY)
    live = converging.desired(policy)
    live.accounts["root"] = _fresh().accounts["root"]
    live.assocs[("root", "root")] = {"Fairshare": "1"}
    live.qos["normal"] = _fresh().qos["normal"]
    assert converging.plan(policy, live) == []
    live.accounts["llm"] = {**live.accounts["llm"], "GrpTRES": "gres/gpu=8", "Fairshare": "1"}
    live.accounts["old"] = {
        "Parent": "product",
        "Fairshare": "1",
        "GrpTRES": "",
        "Priority": "",
        "QOS": "",
        "DefaultQOS": "",
    }
    live.assocs[("bin", "old")] = {"Fairshare": "1"}
    described = [c.describe() for c in converging.plan(policy, live)]
    assert described == [
        "~ account llm  fairshare: 1 -> 3, grptres: gres/gpu=8 -> gres/gpu=16",
        "- user bin in old",
        "- account old",
    ]
