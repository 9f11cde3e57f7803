"""Our Fair Tree on hand-made trees (the comparison with Slurm's sshare is in test_slurm_twin.py)."""

from __future__ import annotations

import math

from velyrix.ops.scheduler import fairtree, policies

A = fairtree.Assoc


def _tree() -> A:
    root = A(
        "root",
        children=[
            A("a", shares=1, children=[A("a", "u1", shares=1, usage=10), A("a", "u2", shares=1, usage=30)]),
            A("b", shares=1, children=[A("b", "u3", shares=1, usage=20)]),
        ],
    )
    fairtree.sum_usage(root)
    return root


def test_level_fairshare_is_shares_over_usage_among_siblings():
    root = _tree()
    f = fairtree.compute(root)
    a, b = root.children
    # a: S=0.5, U=40/60 -> 0.75; b: S=0.5, U=20/60 -> 1.5: b ranks first.
    assert math.isclose(a.level_fs, 0.75) and math.isclose(b.level_fs, 1.5)
    assert f == {("b", "u3"): 1.0, ("a", "u1"): 2 / 3, ("a", "u2"): 1 / 3}


def test_users_without_usage_rank_first_and_tied_users_share_a_rank():
    root = A(
        "root", children=[A("a", shares=1, children=[A("a", "x", usage=0), A("a", "y", usage=0), A("a", "z", usage=5)])]
    )
    fairtree.sum_usage(root)
    f = fairtree.compute(root)
    assert f[("a", "x")] == f[("a", "y")] == 1.0 and f[("a", "z")] == 1 / 3


def test_zero_shares_rank_last():
    root = A(
        "root",
        children=[
            A("a", shares=0, children=[A("a", "x", usage=1)]),
            A("b", shares=1, children=[A("b", "y", usage=100)]),
        ],
    )
    fairtree.sum_usage(root)
    f = fairtree.compute(root)
    assert f[("b", "y")] == 1.0 and f[("a", "x")] == 0.5


def test_policy_what_if_builds_the_declared_tree():
    text = (
        'cost_center "r" {\n  shares = 1\n}\nteam "t1" {\n  cost_center = "r"\n  users = ["u"]\n}\n'
        'team "t2" {\n  cost_center = "r"\n  shares = 3\n  users = ["v"]\n}\n'
    )
    pol = policies.loads(text)
    f = fairtree.compute(fairtree.from_policy(pol, {("t1", "u"): 10.0, ("t2", "v"): 10.0}))
    # Same usage, t2 holds 3/4 of the shares: its user comes first.
    assert f == {("t2", "v"): 1.0, ("t1", "u"): 0.5}


def test_sshare_rows_become_a_tree_by_indentation():
    rows = [
        {"Account": "root", "User": "", "RawShares": "", "RawUsage": "60"},
        {"Account": " root", "User": "root", "RawShares": "1", "RawUsage": "0"},
        {"Account": " a", "User": "", "RawShares": "1", "RawUsage": "40"},
        {"Account": "  a", "User": "u1", "RawShares": "1", "RawUsage": "10"},
        {"Account": "  c", "User": "", "RawShares": "2", "RawUsage": "30"},
        {"Account": "   c", "User": "u2", "RawShares": "1", "RawUsage": "30"},
        {"Account": " b", "User": "", "RawShares": "1", "RawUsage": "20"},
        {"Account": "  b", "User": "u3", "RawShares": "1", "RawUsage": "20"},
    ]
    root = fairtree.from_sshare(rows)
    assert [(c.account, c.user) for c in root.children] == [("root", "root"), ("a", None), ("b", None)]
    a = root.children[1]
    assert [(c.account, c.user) for c in a.children] == [("a", "u1"), ("c", None)]
    assert [(c.account, c.user) for c in a.children[1].children] == [("c", "u2")]


# Property-based: random two-level trees (accounts with users), any shares and usage.
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

_users = st.lists(st.tuples(st.integers(0, 5), st.floats(0, 1e6, allow_nan=False)), min_size=1, max_size=5)
_accounts = st.lists(st.tuples(st.integers(0, 5), _users), min_size=1, max_size=5)


def _random_tree(spec: list) -> A:
    root = A("root")
    for i, (shares, users) in enumerate(spec):
        acct = A(f"a{i}", shares=shares)
        acct.children = [A(f"a{i}", f"u{j}", shares=s, usage=u) for j, (s, u) in enumerate(users)]
        root.children.append(acct)
    fairtree.sum_usage(root)
    return root


@settings(max_examples=200, deadline=None)
@given(_accounts)
def test_every_user_gets_a_factor_in_0_1_and_the_best_gets_1(spec):
    root = _random_tree(spec)
    f = fairtree.compute(root)
    users = [a for a in root.walk() if a.user is not None]
    assert set(f) == {u.key for u in users}
    assert all(0 < v <= 1 for v in f.values()) and max(f.values()) == 1.0


@settings(max_examples=200, deadline=None)
@given(_accounts)
def test_within_an_account_a_higher_level_fairshare_never_ranks_lower(spec):
    root = _random_tree(spec)
    f = fairtree.compute(root)
    for acct in root.children:
        for a in acct.children:
            for b in acct.children:
                if a.level_fs > b.level_fs:
                    assert f[a.key] > f[b.key]
                elif a.level_fs == b.level_fs:
                    assert f[a.key] == f[b.key]


@given(
    st.dictionaries(
        st.from_regex(r"[a-z][a-z0-9_-]{0,10}", fullmatch=True),
        st.text(st.characters(blacklist_characters=";\n\r", blacklist_categories=("Cs",)), min_size=1, max_size=40)
        .map(str.strip)
        .filter(bool),
        max_size=4,
    )
)
def test_drain_reasons_of_any_holders_round_trip(parts):
    from velyrix.health import drains
    from velyrix.ops.scheduler import slurm_drains

    held = {src: drains.format_reason(src, why) for src, why in parts.items() if src != "admin"}
    assert slurm_drains.parse_reason(slurm_drains.join_reason(held)) == held
