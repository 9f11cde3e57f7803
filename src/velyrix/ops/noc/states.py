"""Incident states and priorities: documented constants, no logic (CONTRIBUTING.md, "State"). The allowed moves are
the table of ``velyrix.ops.noc.lifecycle``."""

from __future__ import annotations

OPEN = "open"
"""Detected (auto-opened by the control plane, an Alertmanager group or a PagerDuty event); nobody has
responded yet. The first-response timer runs; escalation pages the policy's levels."""

ACKNOWLEDGED = "acknowledged"
"""An engineer owns it (first response given). The update timer runs: no update within the contract's
interval re-escalates."""

MITIGATED = "mitigated"
"""The impact is gone (capacity restored, alert group resolved) but the cause is not yet closed."""

RESOLVED = "resolved"
"""Closed: cause fixed or understood. May reopen if it comes back."""

POSTMORTEM = "postmortem"
"""Resolved and its postmortem written (terminal)."""

STATES: tuple[str, ...] = (OPEN, ACKNOWLEDGED, MITIGATED, RESOLVED, POSTMORTEM)
"""Every state, in lifecycle order."""

ACTIVE_STATES: frozenset[str] = frozenset({OPEN, ACKNOWLEDGED, MITIGATED})
"""States of an incident that still deduplicates new signals (its ``key`` is taken)."""

PRIORITIES: tuple[str, ...] = ("P1", "P2", "P3", "P4")
"""P1 (whole service or a large share of a cluster down) .. P4 (informational); REFERENCE.md section 5."""
