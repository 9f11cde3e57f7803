"""The control plane is the state: the clusters of the tenant (live, not being deleted) keyed by their
resource address, compared with the configuration as Terraform compares state and configuration.

- ``managed(client)``: the state; ``fingerprint(state)`` names its content (ids and declared specs,
  not the phases that move on their own), so a saved plan is refused once the state moved.
- ``changes(...)``: creations, in-place updates, replacements and destructions (resources in the state
  that the configuration no longer declares), honouring ``ignore_changes``, ``prevent_destroy`` and
  ``-target``; creations and updates in ``depends_on`` order, destructions first.
- ``save`` / ``read_saved``: ``velyrix plan -out FILE`` and ``velyrix apply FILE``.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from velyrix import errors
from velyrix.cli import common
from velyrix.declarations import models

SAVED_FORMAT = "velyrix-plan"
SAVED_VERSION = 1
IMMUTABLE = ("name", "region", "node_type")
"""Arguments an existing cluster cannot change (the API refuses them): a change replaces the cluster."""
MASK = "(sensitive value)"
SIGNS = {"create": "+", "update": "~", "replace": "-/+", "delete": "-", "noop": " "}

Diff = Callable[[dict[str, Any], dict[str, Any] | None], tuple[str, list[tuple[str, Any, Any]]]]


@dataclass
class Change:
    """One planned action on one resource address."""

    address: str
    action: str
    """``create``, ``update``, ``replace``, ``delete`` or ``noop``."""
    body: dict[str, Any] | None = None
    live: dict[str, Any] | None = None
    fields: list[tuple[str, Any, Any]] = field(default_factory=list)
    depends_on: tuple[str, ...] = ()
    sensitive: tuple[str, ...] = ()
    """Fields shown as ``(sensitive value)``."""

    def _shown(self, name: str, value: Any) -> Any:
        return MASK if name in self.sensitive and value is not None else value

    def to_dict(self) -> dict[str, Any]:
        return {
            "address": self.address,
            "action": self.action,
            "body": self.body,
            "live_id": self.live["id"] if self.live else None,
            "fields": [{"name": f, "before": self._shown(f, a), "after": self._shown(f, b)} for f, a, b in self.fields],
            "depends_on": list(self.depends_on),
        }


def has_endpoint() -> bool:
    """Whether a control plane is configured (``velyrix login`` or ``VELYRIX_ENDPOINT``/``VELYRIX_API_KEY``)."""
    from velyrix import settings

    configured = settings.load().client
    if configured.endpoint and configured.api_key:
        return True
    return common.credentials_path().exists()  # not the HTTP client's module (ssl): plan offline needs none


def address_of(cluster: dict[str, Any]) -> str:
    return str((cluster.get("spec") or {}).get("address") or f"velyrix_cluster.{cluster['name']}")


def managed(client: Any) -> dict[str, dict[str, Any]]:
    """The state: every cluster of the tenant that exists and is not being deleted, by address."""
    out: dict[str, dict[str, Any]] = {}
    for c in client.list_all("/v1/clusters"):
        if c.get("desired_state") == "absent" or c["status"]["phase"] in ("Deleted", "Deleting"):
            continue
        out[address_of(c)] = c
    return out


def fingerprint(state: dict[str, dict[str, Any]]) -> str:
    """SHA-256 of the state's clusters (address, id, declared spec); phases and counters left out."""
    items = sorted((addr, c["id"], c.get("spec") or {}) for addr, c in state.items())
    return hashlib.sha256(json.dumps(items, sort_keys=True, default=str).encode()).hexdigest()


def matches(address: str, targets: Sequence[str]) -> bool:
    """Whether ``address`` is selected by ``-target`` (a resource selects all its instances)."""
    if not targets:
        return True
    return any(address == t or address.startswith(t + "[") for t in targets)


def changes(
    spec_file: models.SpecFile, state: dict[str, dict[str, Any]], diff: Diff, targets: Sequence[str] = ()
) -> list[Change]:
    """The actions that bring ``state`` to ``spec_file`` (restricted to ``targets`` when given)."""
    from velyrix.controlplane import specs

    by_name = {c["name"]: addr for addr, c in state.items()}
    claimed: set[str] = set()
    planned: list[Change] = []
    for spec in spec_file.clusters:
        life = spec_file.lifecycles.get(spec.address, models.Lifecycle())
        body = specs.to_body(spec)
        key = spec.address if spec.address in state else by_name.get(spec.name)
        live = state.get(key) if key else None
        if key:
            claimed.add(key)
        change = _change(spec.address, body, live, life, diff)
        change.sensitive = spec_file.sensitive_arguments.get(spec.address, ())
        planned.append(change)
    for addr, live in state.items():
        if addr not in claimed:
            planned.append(Change(addr, "delete", None, live))
    selected = [c for c in planned if matches(c.address, targets)]
    return _ordered(selected)


def _change(
    address: str, body: dict[str, Any], live: dict[str, Any] | None, life: models.Lifecycle, diff: Diff
) -> Change:
    if live is None:
        action, fields = diff(body, None)
        return Change(address, action, body, None, fields, life.depends_on)
    moved = [(f, live.get(f), body.get(f)) for f in IMMUTABLE if live.get(f) != body.get(f)]
    if moved:
        if life.prevent_destroy:
            raise errors.InvalidInputError(
                f"{address} has lifecycle.prevent_destroy set, but this plan would replace it "
                f"({', '.join(f for f, *_ in moved)} changed)",
                hint="keep name, region and node_type, or remove prevent_destroy first",
            )
        return Change(address, "replace", body, live, moved, life.depends_on)
    body = _ignoring(body, live, life.ignore_changes)
    action, fields = diff(body, live)
    return Change(address, action, body, live, fields, life.depends_on)


def _ignoring(body: dict[str, Any], live: dict[str, Any], ignored: Sequence[str]) -> dict[str, Any]:
    """``body`` with the live values of the arguments listed in ``ignore_changes``."""
    if not ignored:
        return body
    spec = live.get("spec") or {}
    names = [k for k in body if k not in IMMUTABLE and k != "address"] if "all" in ignored else list(ignored)
    out = dict(body)
    for name in names:
        if name in spec:
            out[name] = spec[name]
        elif name == "node_count":
            out[name] = live.get("node_count", body.get(name))
    return out


def _ordered(planned: list[Change]) -> list[Change]:
    """Destructions first, then the rest with every resource after the ones it depends on."""
    deletes = [c for c in planned if c.action == "delete"]
    rest = [c for c in planned if c.action != "delete"]
    done: set[str] = set()
    out: list[Change] = []
    pending = list(rest)
    while pending:
        ready = [c for c in pending if all(d in done or not _declared(d, pending) for d in c.depends_on)]
        if not ready:
            ready = pending[:1]  # a cycle: keep declaration order
        for c in ready:
            out.append(c)
            done.add(c.address)
            done.add(c.address.split("[", 1)[0])
            pending.remove(c)
    return deletes + out


def _declared(dep: str, pending: list[Change]) -> bool:
    return any(c.address == dep or c.address.startswith(dep + "[") for c in pending)


def check_destroy(spec_file: models.SpecFile, addresses: Sequence[str]) -> None:
    """``velyrix destroy`` refuses resources whose lifecycle sets ``prevent_destroy``."""
    guarded = [a for a in addresses if spec_file.lifecycles.get(a, models.Lifecycle()).prevent_destroy]
    if guarded:
        raise errors.InvalidInputError(
            f"{', '.join(guarded)} {'has' if len(guarded) == 1 else 'have'} lifecycle.prevent_destroy set",
            hint="remove prevent_destroy from the lifecycle block to destroy it",
        )


def counts(planned: Sequence[Change]) -> tuple[int, int, int]:
    """(to add, to change, to destroy) as Terraform counts them (a replacement adds and destroys)."""
    add = sum(1 for c in planned if c.action in ("create", "replace"))
    change = sum(1 for c in planned if c.action == "update")
    destroy = sum(1 for c in planned if c.action in ("delete", "replace"))
    return add, change, destroy


# --- saved plans -----------------------------------------------------------------------------------


def save(path: Path, planned: Sequence[Change], state_id: str, endpoint: str, configuration: str) -> None:
    """Write a saved plan (mode 0600: it holds the full cluster specs)."""
    data = {
        "format": SAVED_FORMAT,
        "version": SAVED_VERSION,
        "endpoint": endpoint,
        "configuration": configuration,
        "state_fingerprint": state_id,
        "changes": [c.to_dict() for c in planned],
    }
    tmp = path.with_name(path.name + ".tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as fh:
        json.dump(data, fh, indent=2, default=str)
    os.replace(tmp, path)


def read_saved(path: Path) -> dict[str, Any] | None:
    """The saved plan in ``path``, or None when ``path`` is not one (a configuration file)."""
    try:
        if path.is_dir() or path.stat().st_size > 50_000_000:
            return None
        with path.open("rb") as fh:
            if fh.read(1).strip() not in (b"{", b""):
                return None
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict) or data.get("format") != SAVED_FORMAT:
        return None
    if data.get("version") != SAVED_VERSION or not isinstance(data.get("changes"), list):
        raise errors.InvalidInputError(f"{path} is a saved plan of an unknown version", hint="run velyrix plan -out")
    return data


def from_saved(data: dict[str, Any], state: dict[str, dict[str, Any]]) -> list[Change]:
    """The changes of a saved plan, bound to the live clusters of ``state``."""
    by_id = {c["id"]: c for c in state.values()}
    out = []
    for item in data["changes"]:
        fields = [(f["name"], f["before"], f["after"]) for f in item.get("fields", [])]
        live = by_id.get(item.get("live_id") or "")
        out.append(
            Change(item["address"], item["action"], item.get("body"), live, fields, tuple(item.get("depends_on") or ()))
        )
    return out


def check_saved(data: dict[str, Any], state: dict[str, dict[str, Any]], endpoint: str) -> None:
    """Refuse a saved plan made against another control plane or a state that has moved since."""
    if data.get("endpoint") != endpoint:
        raise errors.InvalidInputError(
            f"the saved plan was made against {data.get('endpoint')}, not {endpoint}",
            hint="log in to that control plane, or plan again here",
        )
    if data.get("state_fingerprint") != fingerprint(state):
        raise errors.InvalidInputError(
            "the state changed since this plan was saved (clusters were created, updated or destroyed)",
            hint="run velyrix plan -out FILE again and apply the new plan",
        )
