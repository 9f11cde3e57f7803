"""Rollout states: documented constants, no logic. Allowed moves: ``MOVES``."""

from __future__ import annotations

PENDING = "pending"
"""Applied and announced; the controller has not started its first wave."""

RUNNING = "running"
"""Waves in progress (or waiting for a tenant's window or the canary's soak)."""

PAUSED = "paused"
"""Stopped by an operator between steps (``rollout pause``); ``resume`` continues where it stopped."""

HALTED = "halted"
"""A gate failed (or the failed-node limit was reached) with ``rollback = "manual"``: touched nodes stay on
the new version, drained, until an operator aborts (rolls back) the rollout. A rollback ends here too when a
node failed its validation after it: that node is quarantined instead of returned, and the reason names it."""

ROLLING_BACK = "rolling_back"
"""Returning every node the rollout upgraded to its previous version, re-validated."""

ROLLED_BACK = "rolled_back"
"""Terminal: every upgraded node is back on its previous version and returned to service."""

COMPLETED = "completed"
"""Terminal: every wave passed its gates; every node of the plan runs the new version."""

ACTIVE = (PENDING, RUNNING, ROLLING_BACK)
"""States in which the controller has work."""

TERMINAL = (ROLLED_BACK, COMPLETED)

MOVES: dict[str, frozenset[str]] = {
    # started by the controller; paused or aborted before anything was touched
    PENDING: frozenset({RUNNING, PAUSED, ROLLING_BACK}),
    # done; a gate failed (automatic rollback, or halted for a person); paused; aborted
    RUNNING: frozenset({COMPLETED, ROLLING_BACK, HALTED, PAUSED}),
    # resumed; aborted while paused
    PAUSED: frozenset({RUNNING, ROLLING_BACK}),
    # an operator aborts: roll back
    HALTED: frozenset({ROLLING_BACK}),
    # every node back; or a node failed its validation after the rollback: quarantined, halted for a person
    ROLLING_BACK: frozenset({ROLLED_BACK, HALTED}),
    ROLLED_BACK: frozenset(),
    COMPLETED: frozenset(),
}
