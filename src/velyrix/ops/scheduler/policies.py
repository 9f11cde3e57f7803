"""Scheduler policy as code: an HCL file of cost centers, teams, users and QOS.

    cluster = "training"                 # Slurm cluster the policy applies to (optional)
    cost_center "research" { shares = 60 }
    team "llm" {
      cost_center = "research"           # parent account (root when absent)
      shares      = 40                   # fair-share shares among its siblings
      gpu_limit   = 16                   # GrpTRES=gres/gpu=16 on the team's account
      priority    = 10                   # association priority
      qos         = ["normal", "high"]   # allowed QOS; default_qos picks one
      default_qos = "normal"
      users       = ["alice", "bob"]     # a user may sit in several teams
    }
    qos "high" {
      priority          = 100
      preempt           = ["low"]            # jobs of these QOS get requeued for this one
      gpu_limit         = 32                 # GrpTRES on the QOS
      max_gpus_per_user = 16                 # MaxTRESPerUser
    }
    user "alice" {
      shares       = 2
      default_team = "llm"
    }

Errors name file:line:column, what was expected and the closest valid name. Teams and cost centers
become Slurm accounts (root → cost center → team); users become user associations under their teams.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from velyrix import errors
from velyrix.declarations import expressions, hcl

_INT, _STR, _STRS = "integer", "string", "list of strings"
SCHEMA: dict[str, dict[str, str]] = {
    "cost_center": {"shares": _INT, "gpu_limit": _INT, "description": _STR},
    "team": {
        "cost_center": _STR,
        "shares": _INT,
        "gpu_limit": _INT,
        "priority": _INT,
        "qos": _STRS,
        "default_qos": _STR,
        "users": _STRS,
        "description": _STR,
    },
    "qos": {
        "priority": _INT,
        "preempt": _STRS,
        "gpu_limit": _INT,
        "max_gpus_per_user": _INT,
        "max_gpus_per_job": _INT,
        "description": _STR,
    },
    "user": {"shares": _INT, "default_team": _STR},
}
TOP_ATTRIBUTES = {"cluster": _STR}
BUILTIN_QOS = "normal"


@dataclass(frozen=True)
class CostCenter:
    name: str
    shares: int = 1
    gpu_limit: int | None = None
    description: str = ""


@dataclass(frozen=True)
class Team:
    name: str
    cost_center: str | None = None
    shares: int = 1
    gpu_limit: int | None = None
    """GPUs the team's jobs may hold at once (GrpTRES gres/gpu); None: unlimited."""
    priority: int | None = None
    qos: tuple[str, ...] = ()
    default_qos: str | None = None
    users: tuple[str, ...] = ()
    description: str = ""


@dataclass(frozen=True)
class Qos:
    name: str
    priority: int = 0
    preempt: tuple[str, ...] = ()
    gpu_limit: int | None = None
    max_gpus_per_user: int | None = None
    max_gpus_per_job: int | None = None
    description: str = ""


@dataclass(frozen=True)
class User:
    name: str
    shares: int = 1
    default_team: str | None = None


@dataclass(frozen=True)
class Policy:
    """A whole policy file, validated. Dicts keep declaration order."""

    path: str
    cluster: str | None = None
    cost_centers: dict[str, CostCenter] = field(default_factory=dict)
    teams: dict[str, Team] = field(default_factory=dict)
    qos: dict[str, Qos] = field(default_factory=dict)
    users: dict[str, User] = field(default_factory=dict)

    def user_teams(self) -> dict[str, list[str]]:
        """User name → teams it belongs to, in declaration order."""
        out: dict[str, list[str]] = {}
        for t in self.teams.values():
            for u in t.users:
                out.setdefault(u, []).append(t.name)
        return out

    def team_cost_center(self) -> dict[str, str]:
        """Team → cost center (teams without one map to themselves)."""
        return {t.name: t.cost_center or t.name for t in self.teams.values()}


def load(path: str | Path) -> Policy:
    """Read and validate a policy file; ``errors.SpecError`` lists every problem with its position."""
    p = Path(path)
    try:
        text = p.read_text()
    except OSError as exc:
        raise errors.InvalidInputError(
            f"cannot read policy file {p}: {exc.strerror}", hint="give the path of an HCL policy file"
        ) from None
    return loads(text, str(p))


def loads(text: str, filename: str = "<policy>") -> Policy:
    """Validate policy ``text``; see ``load``."""
    root = hcl.parse(text, filename)
    diags: list[errors.Diagnostic] = []

    def err(line: int, col: int, message: str, expected: str | None = None, suggestion: str | None = None) -> None:
        diags.append(errors.Diagnostic(filename, line, col, message, expected, suggestion))

    top = _attributes(root.attributes, TOP_ATTRIBUTES, "the policy file", err)
    found: dict[str, dict[str, tuple[hcl.Block, dict[str, Any]]]] = {k: {} for k in SCHEMA}
    for block in root.blocks:
        if block.type not in SCHEMA:
            near = errors.closest(block.type, SCHEMA)
            err(
                block.line,
                block.column,
                f"unknown block type '{block.type}'",
                ", ".join(SCHEMA),
                near[0] if near else None,
            )
            continue
        if len(block.labels) != 1 or not block.labels[0]:
            err(block.line, block.column, f"block '{block.type}' needs exactly one name", f'{block.type} "NAME" {{ }}')
            continue
        name = block.labels[0]
        if name in found[block.type]:
            err(block.line, block.column, f"{block.type} '{name}' declared twice")
            continue
        for inner in block.blocks:
            err(
                inner.line,
                inner.column,
                f"unexpected block '{inner.type}' inside {block.type} '{name}'",
                "attributes only",
            )
        found[block.type][name] = (
            block,
            _attributes(block.attributes, SCHEMA[block.type], f"{block.type} '{name}'", err),
        )

    def ref(block: hcl.Block, attr: str, value: str | None, kind: str, valid: list[str]) -> None:
        if value is None or value in valid:
            return
        a = next((a for a in block.attributes if a.name == attr), None)
        line, col = (a.line, a.column) if a else (block.line, block.column)
        near = errors.closest(value, valid)
        err(
            line,
            col,
            f"unknown {kind} '{value}'",
            f"one of: {', '.join(valid) or '(none declared)'}",
            near[0] if near else None,
        )

    qos_names = list(found["qos"]) + ([BUILTIN_QOS] if BUILTIN_QOS not in found["qos"] else [])
    for name, (block, attrs) in found["team"].items():
        ref(block, "cost_center", attrs.get("cost_center"), "cost center", list(found["cost_center"]))
        for q in attrs.get("qos", ()):
            ref(block, "qos", q, "QOS", qos_names)
        ref(block, "default_qos", attrs.get("default_qos"), "QOS", list(attrs.get("qos") or qos_names))
        if name in found["cost_center"]:
            err(block.line, block.column, f"team '{name}' has the name of a cost center (both are Slurm accounts)")
    for _name, (block, attrs) in found["qos"].items():
        for q in attrs.get("preempt", ()):
            ref(block, "preempt", q, "QOS", qos_names)
    members = {u for _, (_, a) in found["team"].items() for u in a.get("users", ())}
    for name, (block, attrs) in found["user"].items():
        if name not in members:
            err(block.line, block.column, f"user '{name}' is in no team", "the user's name in some team's users")
        teams_of = [t for t, (_, a) in found["team"].items() if name in a.get("users", ())]
        ref(block, "default_team", attrs.get("default_team"), "team of this user", teams_of)
    if diags:
        raise errors.SpecError(diags)
    return Policy(
        path=filename,
        cluster=top.get("cluster"),
        cost_centers={n: CostCenter(n, **a) for n, (_, a) in found["cost_center"].items()},
        teams={n: Team(n, **_tuples(a)) for n, (_, a) in found["team"].items()},
        qos={n: Qos(n, **_tuples(a)) for n, (_, a) in found["qos"].items()},
        users={n: User(n, **a) for n, (_, a) in found["user"].items()},
    )


def _tuples(attrs: dict[str, Any]) -> dict[str, Any]:
    """Lists become tuples (the models are frozen)."""
    return {k: tuple(v) if isinstance(v, list) else v for k, v in attrs.items()}


def _attributes(attrs: list[hcl.Attribute], schema: dict[str, str], where: str, err: Any) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for a in attrs:
        if a.name not in schema:
            near = errors.closest(a.name, schema)
            err(
                a.line,
                a.column,
                f"unknown attribute '{a.name}' in {where}",
                ", ".join(schema),
                near[0] if near else None,
            )
            continue
        try:
            value = expressions.evaluate(a.expr, {})
        except expressions.ExpressionError as exc:
            err(exc.line, exc.column, exc.message, exc.expected, exc.suggestion)
            continue
        kind = schema[a.name]
        ok = (
            kind == _INT
            and isinstance(value, int)
            and not isinstance(value, bool)
            and value >= 0
            or kind == _STR
            and isinstance(value, str)
            or kind == _STRS
            and isinstance(value, list)
            and all(isinstance(v, str) for v in value)
        )
        if isinstance(value, float) and kind == _INT and value.is_integer() and value >= 0:
            value, ok = int(value), True
        if not ok:
            err(
                a.line,
                a.column,
                f"{a.name} in {where} has a wrong value {value!r}",
                "a non-negative " + kind if kind == _INT else kind,
            )
            continue
        out[a.name] = value
    return out
