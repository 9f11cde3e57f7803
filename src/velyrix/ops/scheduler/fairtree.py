"""Fair Tree, our own implementation: every user association's fair-share factor from shares and usage.

The algorithm of Slurm's priority/multifactor plugin (Fair Tree, default since 19.05; REFERENCE §4):
level fair-share ``LF = S / U`` with ``S`` the association's shares over its siblings' and ``U`` its
usage over its parent's (0 shares: LF 0; no usage: LF infinite). Siblings are ranked by LF (users before
accounts on a tie), the tree is walked depth-first, and each user gets ``rank / user_count``, the first
user visited getting 1.0. Tied users share a rank; a user tied with an account shares the rank of the
account's best user; tied sibling accounts have their children merged before sorting.

Uses: a what-if for a policy (``from_policy``: shares declared, usage from accounting), and a check
of a live cluster (``from_sshare``: ``sshare -a -l -P``), which tests compare with Slurm's own factors.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from velyrix.ops.scheduler import policies


@dataclass
class Assoc:
    """One association: an account (``user`` None) or a user within an account."""

    account: str
    user: str | None = None
    shares: float = 1.0
    usage: float = 0.0
    """Raw usage (Slurm: billing-weighted seconds; here GPU-seconds). Accounts: their children's sum."""
    children: list[Assoc] = field(default_factory=list)
    level_fs: float = math.nan
    factor: float | None = None
    """Fair-share factor (users only), in (0, 1]."""

    @property
    def key(self) -> tuple[str, str]:
        return (self.account, self.user or "")

    def walk(self) -> list[Assoc]:
        """This association and every descendant, depth first."""
        out = [self]
        for c in self.children:
            out.extend(c.walk())
        return out


def sum_usage(node: Assoc) -> float:
    """Set every account's usage to the sum of its children's (users keep theirs); returns the total."""
    if node.user is None and node.children:
        node.usage = sum(sum_usage(c) for c in node.children)
    return node.usage


def compute(root: Assoc) -> dict[tuple[str, str], float]:
    """Fair-share factor of every user association: ``{(account, user): factor}``; sets ``level_fs``."""
    users = [a for a in root.walk() if a.user is not None]
    count = len(users)
    if count == 0:
        return {}
    state = {"rank": count, "rnt": count}
    _level(root.children, root, state, count, account_tied=False)
    return {a.key: a.factor for a in users if a.factor is not None}


def _lf(a: Assoc, parent_usage: float, level_shares: float) -> float:
    s = a.shares / level_shares if level_shares else 0.0
    u = a.usage / parent_usage if parent_usage else 0.0
    if s == 0:
        return 0.0
    return math.inf if u == 0 else s / u


def _level(siblings: list[Assoc], parent: Assoc, state: dict[str, int], count: int, account_tied: bool) -> None:
    # Each child's LF uses its own parent's usage and its own siblings' shares (merged lists keep them).
    for a in siblings:
        owner = getattr(a, "_parent", parent)
        level_shares = sum(c.shares for c in owner.children)
        a.level_fs = _lf(a, owner.usage, level_shares)
    ordered = sorted(siblings, key=lambda a: (-a.level_fs, 0 if a.user is not None else 1))
    prev: float | None = None
    i = 0
    while i < len(ordered):
        a = ordered[i]
        tied = True if (i == 0 and account_tied) else (prev is not None and prev == a.level_fs)
        if a.user is not None:
            if not tied:
                state["rank"] = state["rnt"]
            a.factor = state["rank"] / count
            state["rnt"] -= 1
            i += 1
        else:
            group = [a]
            while (
                i + len(group) < len(ordered)
                and ordered[i + len(group)].user is None
                and ordered[i + len(group)].level_fs == a.level_fs
            ):
                group.append(ordered[i + len(group)])
            merged = []
            for acct in group:
                for c in acct.children:
                    c._parent = acct  # type: ignore[attr-defined]
                    merged.append(c)
            _level(merged, a, state, count, tied)
            i += len(group)
        prev = a.level_fs


def from_sshare(rows: list[dict[str, str]]) -> Assoc:
    """The association tree of ``sshare -a -l -P`` rows (indentation of Account gives the depth)."""
    root: Assoc | None = None
    stack: list[tuple[int, Assoc]] = []
    for r in rows:
        raw_acct = r.get("Account", "")
        depth = len(raw_acct) - len(raw_acct.lstrip(" "))
        user = r.get("User", "").strip() or None
        shares_text = r.get("RawShares", "1").strip()
        node = Assoc(
            account=raw_acct.strip(),
            user=user,
            shares=float(shares_text) if shares_text.replace(".", "", 1).isdigit() else 1.0,
            usage=float(r.get("RawUsage", "0") or 0),
        )
        if root is None:
            root = node
            stack = [(depth, node)]
            continue
        while stack and stack[-1][0] >= depth and not (stack[-1][1].user is None and stack[-1][0] < depth):
            stack.pop()
        parent = stack[-1][1] if stack else root
        parent.children.append(node)
        if user is None:
            stack.append((depth, node))
    if root is None:
        raise ValueError("sshare printed no associations")
    return root


def from_policy(
    policy: policies.Policy,
    usage: dict[tuple[str, str], float],
    extra_users: dict[tuple[str, str], float] | None = None,
) -> Assoc:
    """The tree a policy declares, with ``usage[(team, user)]`` (any unit) per user association.

    ``extra_users``: associations outside the policy that Slurm also counts, (account, user) → shares
    (e.g. ``("root", "root")``).
    """
    root = Assoc("root")
    accounts: dict[str, Assoc] = {"root": root}
    for c in policy.cost_centers.values():
        accounts[c.name] = Assoc(c.name, shares=c.shares)
        root.children.append(accounts[c.name])
    for t in policy.teams.values():
        accounts[t.name] = Assoc(t.name, shares=t.shares)
        accounts[t.cost_center or "root"].children.append(accounts[t.name])
    for t in policy.teams.values():
        for u in t.users:
            shares = policy.users.get(u, policies.User(u)).shares
            accounts[t.name].children.append(Assoc(t.name, u, shares=shares, usage=usage.get((t.name, u), 0.0)))
    for (acct, user), extra_shares in (extra_users or {}).items():
        accounts[acct].children.append(Assoc(acct, user, shares=extra_shares, usage=usage.get((acct, user), 0.0)))
    sum_usage(root)
    return root
