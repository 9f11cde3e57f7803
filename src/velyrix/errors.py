"""One exception hierarchy for all of Velyrix.

Every error carries a message template, a stable machine-readable ``code``, the HTTP status the API
answers with, and a ``hint`` for the person who made the mistake. The CLI prints message and hint (exit
code 2 for user errors); the API renders them as problem+json in one place.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, ClassVar


def closest(name: str, candidates: Iterable[str], n: int = 1) -> list[str]:
    """Return up to ``n`` candidates closest to ``name`` (empty when nothing is close)."""
    pool = list(candidates)
    found = difflib.get_close_matches(name, pool, n=n, cutoff=0.5)
    if not found:
        lowered = {c.lower(): c for c in pool}
        found = [lowered[m] for m in difflib.get_close_matches(name.lower(), list(lowered), n=n, cutoff=0.4)]
    return found


class VelyrixError(Exception):
    """Base of every error Velyrix raises on purpose.

    Subclasses set ``code`` (stable, documented), ``http_status``, ``template`` (formatted with the
    keyword fields) and optionally ``hint``. ``user_error`` tells the CLI to exit 2 rather than 1.
    """

    code: ClassVar[str] = "internal_error"
    http_status: ClassVar[int] = 500
    template: ClassVar[str] = "{message}"
    user_error: ClassVar[bool] = True

    def __init__(self, message: str | None = None, *, hint: str | None = None, **fields: Any) -> None:
        self.fields = fields
        if message is None:
            try:
                message = self.template.format(**fields)
            except (KeyError, IndexError):
                message = self.template
        self.message = message
        self.hint = hint
        super().__init__(message)

    def to_dict(self) -> dict[str, Any]:
        """The error as plain data (used by ``--json`` output and the API's problem+json)."""
        out: dict[str, Any] = {"code": self.code, "message": self.message}
        if self.hint:
            out["hint"] = self.hint
        extra = {k: v for k, v in self.fields.items() if _jsonable(v)}
        if extra:
            out["fields"] = extra
        return out


def _jsonable(value: Any) -> bool:
    return isinstance(value, (str, int, float, bool, type(None), list, dict))


class UnknownNameError(VelyrixError):
    """A name (node type, fabric, region, tier...) that the catalog does not know."""

    code = "unknown_name"
    http_status = 422
    template = "unknown {kind} '{name}'"

    def __init__(self, kind: str, name: str, valid: Iterable[str]) -> None:
        valid = sorted(valid)
        suggestion = closest(name, valid)
        hint = f"did you mean '{suggestion[0]}'?" if suggestion else None
        hint = (hint + " " if hint else "") + f"valid: {', '.join(valid)}"
        super().__init__(hint=hint, kind=kind, name=name, valid=valid, suggestion=suggestion[0] if suggestion else None)
        self.suggestion = suggestion[0] if suggestion else None


class CatalogError(VelyrixError):
    """The catalog data itself is broken (a developer error in ``catalog/data``)."""

    code = "catalog_invalid"
    http_status = 500
    user_error = False


class InvalidInputError(VelyrixError):
    """A value a user gave is out of range or inconsistent."""

    code = "invalid_input"
    http_status = 422


@dataclass(frozen=True)
class Diagnostic:
    """One problem found in a spec file, with its position (1-based line and column)."""

    file: str
    line: int
    column: int
    message: str
    expected: str | None = None
    suggestion: str | None = None

    def render(self) -> str:
        """``file:line:column: message (expected ...; did you mean ...?)``."""
        text = f"{self.file}:{self.line}:{self.column}: {self.message}"
        extra = []
        if self.expected:
            extra.append(f"expected {self.expected}")
        if self.suggestion:
            extra.append(f"did you mean '{self.suggestion}'?")
        if extra:
            text += " (" + "; ".join(extra) + ")"
        return text

    def to_dict(self) -> dict[str, Any]:
        return {
            "file": self.file,
            "line": self.line,
            "column": self.column,
            "message": self.message,
            "expected": self.expected,
            "suggestion": self.suggestion,
        }


class SpecError(VelyrixError):
    """A spec file has one or more problems; all of them are reported at once."""

    code = "spec_invalid"
    http_status = 422

    def __init__(self, diagnostics: list[Diagnostic]) -> None:
        self.diagnostics = diagnostics
        noun = "error" if len(diagnostics) == 1 else "errors"
        message = f"{len(diagnostics)} {noun} in spec:\n" + "\n".join(d.render() for d in diagnostics)
        super().__init__(message, diagnostics=[d.to_dict() for d in diagnostics])


class CapacityError(VelyrixError):
    """A request that the region or the fabric cannot serve."""

    code = "insufficient_capacity"
    http_status = 409
    template = "{message}"


class TopologyInvalidError(VelyrixError):
    """A network topology failed verification on its graph (fabric_verify names the parts)."""

    code = "topology_invalid"
    http_status = 422
    template = "topology failed verification ({count} problems), first: {first}"


class NotFoundError(VelyrixError):
    code = "not_found"
    http_status = 404
    template = "{kind} '{name}' not found"


class AuthenticationError(VelyrixError):
    code = "unauthenticated"
    http_status = 401
    template = "missing, malformed, expired or revoked API key"


class PermissionDeniedError(VelyrixError):
    code = "forbidden"
    http_status = 403
    template = "this key lacks the scope '{scope}'"


class ConflictError(VelyrixError):
    code = "conflict"
    http_status = 409
    template = "{message}"


class PreconditionFailedError(VelyrixError):
    code = "precondition_failed"
    http_status = 412
    template = "the object changed since it was read (ETag mismatch); read it again and retry"


class ExternalToolError(VelyrixError):
    """A tool we drive (sacctmgr, promtool, ...) failed."""

    code = "external_tool_failed"
    http_status = 502
    user_error = False


class DrainOwnershipError(ConflictError):
    """A source tried to undrain a node that another source drained."""

    code = "drain_owned_by_other_source"
    http_status = 409
    template = "node '{node}' is drained by {holders}; '{source}' cannot undrain it"


class NvmlUnavailableError(VelyrixError):
    """NVML cannot be loaded or initialized on this machine (no NVIDIA driver or GPU)."""

    code = "nvml_unavailable"
    http_status = 503
    template = "NVML is not available here: {reason}"


class DcgmUnavailableError(VelyrixError):
    """NVIDIA DCGM's ``dcgmi`` is not installed (or not on PATH) where the DCGM prober was chosen."""

    code = "dcgm_unavailable"
    http_status = 503
    template = "dcgmi not found: install DCGM or choose --prober none"


class DcgmDiagError(VelyrixError):
    """``dcgmi diag`` ran but gave no usable result (timeout, crash, output that is not its JSON)."""

    code = "dcgm_diag_failed"
    http_status = 502
    template = "dcgmi diag -r {level} could not run: {reason}"


class AgentReportError(VelyrixError):
    """The node agent could not deliver a report to the control plane (after its retries)."""

    code = "agent_report_failed"
    http_status = 502
    user_error = False
    template = "report to {url} failed: {reason}"


class RemoteError(VelyrixError):
    """The control-plane API refused or failed a request; ``code`` and ``http_status`` are the server's."""

    code = "remote_error"
    http_status = 502
    template = "{message}"

    def __init__(self, message: str, *, code: str, status: int, hint: str | None = None, **fields: Any) -> None:
        super().__init__(message, hint=hint, **fields)
        self.code = code  # type: ignore[misc]
        self.http_status = status  # type: ignore[misc]
        self.user_error = 400 <= status < 500  # type: ignore[misc]


class NotLoggedInError(VelyrixError):
    """The CLI has no endpoint and key for the control plane."""

    code = "not_logged_in"
    http_status = 401
    template = "not logged in to a Velyrix control plane"


class BusyError(VelyrixError):
    """A concurrent change (another replica, the reconciler) won the race; the same request may succeed
    when retried (HTTP 503: clients with retries, such as the node agent, send it again)."""

    code = "busy"
    http_status = 503
    user_error = False
    template = "{what} changed concurrently; retry the request"


class IdentityError(VelyrixError):
    """A login, session, second factor or identity provider's answer was refused. ``reason`` makes the
    stable code (``identity_<reason>``, e.g. ``identity_token_expired``, ``identity_csrf_failed``)."""

    code = "identity_refused"
    http_status = 401
    template = "{message}"

    def __init__(self, message: str, *, reason: str, status: int = 401, hint: str | None = None, **fields: Any):
        super().__init__(message, hint=hint, reason=reason, **fields)
        self.code = f"identity_{reason}"  # type: ignore[misc]
        self.http_status = status  # type: ignore[misc]


class AccessError(VelyrixError):
    """Root, BMC or provider access to a node was refused (operating modes, jump host, break-glass:
    ``controlplane.access``). ``reason`` makes the stable code (``access_<reason>``, e.g.
    ``access_tenant_root_refused``, ``access_approval_required``)."""

    code = "access_refused"
    http_status = 403
    template = "{message}"

    def __init__(self, message: str, *, reason: str, status: int = 403, hint: str | None = None, **fields: Any):
        super().__init__(message, hint=hint, reason=reason, **fields)
        self.code = f"access_{reason}"  # type: ignore[misc]
        self.http_status = status  # type: ignore[misc]
