"""Converge Slurm's accounting database to a policy with sacctmgr: read, diff, apply (idempotent).

``plan(policy, slurm)`` reads what sacctmgr holds now and returns the ``Change``s that make it match the
policy; ``apply(changes, slurm)`` runs them in dependency order (QOS, then accounts parents first, then
users; deletions in reverse). A second ``plan`` after ``apply`` is empty. Built-ins are left alone: the
``root`` account, the ``root`` user's association with it and the ``normal`` QOS.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from velyrix.ops.scheduler import commands, policies

ROOT = "root"


@dataclass(frozen=True)
class Change:
    """One sacctmgr step: ``op`` add|modify|delete on ``kind`` qos|account|user; ``fields``: name → (old, new)."""

    op: str
    kind: str
    name: str
    fields: dict[str, tuple[str, str]] = field(default_factory=dict)
    argv: tuple[str, ...] = ()

    def describe(self) -> str:
        """One readable line: ``+ qos high  priority=100``, ``~ account llm  fairshare: 1 -> 3``."""
        sign = {"add": "+", "modify": "~", "delete": "-"}[self.op]
        if self.op == "add":
            detail = "  ".join(f"{k.lower()}={new}" for k, (_, new) in self.fields.items() if new)
        elif self.op == "modify":
            detail = ", ".join(
                f"{k.lower()}: {old or '(none)'} -> {new or '(none)'}" for k, (old, new) in self.fields.items()
            )
        else:
            detail = ""
        return f"{sign} {self.kind} {self.name}" + (f"  {detail}" if detail else "")


@dataclass
class State:
    """What sacctmgr holds (or should hold), normalized to comparable strings."""

    qos: dict[str, dict[str, str]] = field(default_factory=dict)
    accounts: dict[str, dict[str, str]] = field(default_factory=dict)
    """account → Parent, Fairshare, GrpTRES, Priority, QOS, DefaultQOS."""
    assocs: dict[tuple[str, str], dict[str, str]] = field(default_factory=dict)
    """(user, account) → Fairshare."""
    default_account: dict[str, str] = field(default_factory=dict)


def _gpus(tres: str) -> str:
    """``gres/gpu=16`` out of a TRES string (empty when it sets no GPU limit)."""
    for part in tres.split(","):
        if part.startswith("gres/gpu="):
            return part
    return ""


def _tres(n: int | None) -> str:
    return f"gres/gpu={n}" if n is not None else ""


def _num(n: int | None) -> str:
    return str(n) if n is not None else ""


def read(slurm: commands.Slurm, cluster: str | None = None) -> State:
    """The live state, from ``sacctmgr show qos|assoc|user`` (parsable output)."""
    st = State()
    for ln in slurm.out(
        "sacctmgr", "-n", "-P", "show", "qos", "format=Name,Priority,GrpTRES,MaxTRESPU,MaxTRES,Preempt"
    ).splitlines():
        if not ln.strip():
            continue
        name, prio, grp, pu, pj, preempt = (ln.split("|") + [""] * 6)[:6]
        st.qos[name] = {
            "Priority": prio or "0",
            "GrpTRES": _gpus(grp),
            "MaxTRESPerUser": _gpus(pu),
            "MaxTRESPerJob": _gpus(pj),
            "Preempt": ",".join(sorted(p for p in preempt.split(",") if p)),
        }
    where = [f"cluster={cluster}"] if cluster else []
    for ln in slurm.out(
        "sacctmgr",
        "-n",
        "-P",
        "show",
        "assoc",
        *where,
        "format=Account,User,ParentName,Fairshare,GrpTRES,Priority,QOS,DefaultQOS",
    ).splitlines():
        if not ln.strip():
            continue
        acct, user, parent, share, grp, prio, qos, defq = (ln.split("|") + [""] * 8)[:8]
        if user:
            st.assocs[(user, acct)] = {"Fairshare": share}
        else:
            st.accounts[acct] = {
                "Parent": parent,
                "Fairshare": share,
                "GrpTRES": _gpus(grp),
                "Priority": prio,
                "QOS": ",".join(sorted(q for q in qos.split(",") if q)),
                "DefaultQOS": defq,
            }
    # A user's default account is per cluster (one slurmdbd may serve several): read this cluster's.
    users = ["withassoc", *where] if cluster else []
    for ln in slurm.out("sacctmgr", "-n", "-P", "show", "user", *users, "format=User,DefaultAccount").splitlines():
        if ln.strip():
            user, acct = (ln.split("|") + [""])[:2]
            st.default_account[user] = acct
    return st


def desired(policy: policies.Policy) -> State:
    """The state the policy declares, in the same normalized form as ``read``."""
    st = State()
    for q in policy.qos.values():
        st.qos[q.name] = {
            "Priority": str(q.priority),
            "GrpTRES": _tres(q.gpu_limit),
            "MaxTRESPerUser": _tres(q.max_gpus_per_user),
            "MaxTRESPerJob": _tres(q.max_gpus_per_job),
            "Preempt": ",".join(sorted(q.preempt)),
        }
    for c in policy.cost_centers.values():
        st.accounts[c.name] = {
            "Parent": ROOT,
            "Fairshare": str(c.shares),
            "GrpTRES": _tres(c.gpu_limit),
            "Priority": "",
            "QOS": "",
            "DefaultQOS": "",
        }
    for t in policy.teams.values():
        st.accounts[t.name] = {
            "Parent": t.cost_center or ROOT,
            "Fairshare": str(t.shares),
            "GrpTRES": _tres(t.gpu_limit),
            "Priority": _num(t.priority),
            "QOS": ",".join(sorted(t.qos)),
            "DefaultQOS": t.default_qos or "",
        }
    for user, teams in policy.user_teams().items():
        u = policy.users.get(user, policies.User(user))
        for team in teams:
            st.assocs[(user, team)] = {"Fairshare": str(u.shares)}
        st.default_account[user] = u.default_team or teams[0]
    return st


_CLEAR = {
    "GrpTRES": "gres/gpu=-1",
    "MaxTRESPerUser": "gres/gpu=-1",
    "MaxTRESPerJob": "gres/gpu=-1",
    "Priority": "-1",
    "Preempt": "''",
    "DefaultQOS": "''",
}


def _sets(fields: dict[str, tuple[str, str]]) -> list[str]:
    return [f"{k}={new if new else _CLEAR.get(k, '')}" for k, (_, new) in fields.items()]


def _delta(live: dict[str, str], want: dict[str, str], unmanaged_when_empty: tuple[str, ...] = ()) -> dict:
    out = {}
    for k, new in want.items():
        if not new and k in unmanaged_when_empty:
            continue  # inherited from the parent account when the policy says nothing
        if live.get(k, "") != new:
            out[k] = (live.get(k, ""), new)
    return out


def _depth(name: str, accounts: dict[str, dict[str, str]]) -> int:
    d, seen = 0, set()
    while name in accounts and name != ROOT and name not in seen:
        seen.add(name)
        name = accounts[name]["Parent"]
        d += 1
    return d


def plan(policy: policies.Policy, live: State) -> list[Change]:
    """Changes that take ``live`` to ``policy``, in the order ``apply`` must run them."""
    want = desired(policy)
    cl = [f"Cluster={policy.cluster}"] if policy.cluster else []
    where_cl = [f"cluster={policy.cluster}"] if policy.cluster else []
    out: list[Change] = []
    # New QOS first without Preempt (it may name QOS added after it), then their Preempt lists.
    for name, q in want.qos.items():
        if name not in live.qos:
            f = {k: ("", v) for k, v in q.items() if v}
            sets = _sets({k: v for k, v in f.items() if k != "Preempt"})
            out.append(Change("add", "qos", name, f, ("add", "qos", name, *sets)))
    for name, q in want.qos.items():
        if name not in live.qos and q["Preempt"]:
            out.append(
                Change(
                    "modify",
                    "qos",
                    name,
                    {"Preempt": ("", q["Preempt"])},
                    ("modify", "qos", "where", f"name={name}", "set", f"Preempt={q['Preempt']}"),
                )
            )
        elif name in live.qos and (d := _delta(live.qos[name], q)):
            out.append(Change("modify", "qos", name, d, ("modify", "qos", "where", f"name={name}", "set", *_sets(d))))
    for name in sorted(want.accounts, key=lambda n: _depth(n, want.accounts)):
        a = want.accounts[name]
        if name not in live.accounts:
            f = {k: ("", v) for k, v in a.items() if v}
            sets = [f"{k}={v}" for k, (_, v) in f.items()]
            out.append(Change("add", "account", name, f, ("add", "account", name, *cl, *sets)))
            continue
        d = _delta(live.accounts[name], a, unmanaged_when_empty=("QOS", "DefaultQOS"))
        if "Parent" in d:
            out.append(
                Change(
                    "modify",
                    "account",
                    name,
                    {"Parent": d.pop("Parent")},
                    ("modify", "account", "where", f"name={name}", *where_cl, "set", f"Parent={a['Parent']}"),
                )
            )
        if d:
            out.append(
                Change(
                    "modify",
                    "account",
                    name,
                    d,
                    ("modify", "account", "where", f"name={name}", *where_cl, "set", *_sets(d)),
                )
            )
    # A new user is created with its default account first (sacctmgr adds that association too).
    order = sorted(want.assocs, key=lambda ua: ua[0] in live.default_account or want.default_account[ua[0]] != ua[1])
    created: set[str] = set()
    for user, acct in order:
        u = want.assocs[(user, acct)]
        if (user, acct) not in live.assocs:
            f = {"Account": ("", acct), **{k: ("", v) for k, v in u.items()}}
            argv = ("add", "user", user, f"Account={acct}", *cl, f"Fairshare={u['Fairshare']}")
            if user not in live.default_account and user not in created:
                argv += (f"DefaultAccount={acct}",)
                created.add(user)
            out.append(Change("add", "user", f"{user} in {acct}", f, argv))
        elif d := _delta(live.assocs[(user, acct)], u):
            out.append(
                Change(
                    "modify",
                    "user",
                    f"{user} in {acct}",
                    d,
                    ("modify", "user", "where", f"name={user}", f"account={acct}", *where_cl, "set", *_sets(d)),
                )
            )
    for user, acct in want.default_account.items():
        if user in live.default_account and live.default_account[user] != acct:
            out.append(
                Change(
                    "modify",
                    "user",
                    user,
                    {"DefaultAccount": (live.default_account[user], acct)},
                    ("modify", "user", "where", f"name={user}", *where_cl, "set", f"DefaultAccount={acct}"),
                )
            )
    # Deletions: user associations, then accounts deepest first, then QOS.
    for user, acct in live.assocs:
        if (user, acct) not in want.assocs and not (acct == ROOT and user == ROOT):
            out.append(
                Change(
                    "delete",
                    "user",
                    f"{user} in {acct}",
                    {},
                    ("delete", "user", "where", f"name={user}", f"account={acct}", *where_cl),
                )
            )
    gone = [a for a in live.accounts if a != ROOT and a not in want.accounts]
    for name in sorted(gone, key=lambda n: -_depth(n, live.accounts)):
        out.append(Change("delete", "account", name, {}, ("delete", "account", "where", f"name={name}", *where_cl)))
    for name in live.qos:
        if name not in want.qos and name != policies.BUILTIN_QOS:
            out.append(Change("delete", "qos", name, {}, ("delete", "qos", "where", f"name={name}")))
    return _defaults_before_deletes(out)


def _defaults_before_deletes(changes: list[Change]) -> list[Change]:
    """A user's default account must move before the old one's association is deleted (sacctmgr refuses)."""
    defaults = [c for c in changes if c.kind == "user" and "DefaultAccount" in c.fields and c.op == "modify"]
    rest = [c for c in changes if c not in defaults]
    first_delete = next((i for i, c in enumerate(rest) if c.op == "delete"), len(rest))
    return rest[:first_delete] + defaults + rest[first_delete:]


def apply(changes: list[Change], slurm: commands.Slurm) -> None:
    """Run every change with ``sacctmgr -i`` (no confirmation prompt), in order."""
    for c in changes:
        slurm.out("sacctmgr", "-i", *c.argv)
