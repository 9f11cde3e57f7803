"""A session's last use moving on no longer moves the credential generation (migration ``0022``).

``last_seen_at`` is written once a minute per session in use (``identity/sessions.py`` TOUCH_INTERVAL_S);
under ``0022`` each of those writes dropped every cached principal of every replica
(``identity/verified.py``). A cached session row whose ``last_seen_at`` is older than the stored one is
only ever stricter (its idle timeout comes sooner, and a refusal or a due touch re-reads the row), so a
forward move takes no right away. Every other change of a session (end, second factor, step-up, expiry,
any other column), a delete, and a ``last_seen_at`` moved *back* still move the generation on.

Revision ID: 0025
Revises: 0024
Create Date: 2026-12-01
"""

from __future__ import annotations

from alembic import op

revision = "0025"
down_revision = "0024"
branch_labels = None
depends_on = None

OTHER_COLUMNS = (
    "id",
    "secret_sha256",
    "user_id",
    "tenant_id",
    "method",
    "created_at",
    "expires_at",
    "mfa_at",
    "step_up_at",
    "ended_at",
    "end_reason",
)
"""Every column of ``user_sessions`` but ``last_seen_at`` (``tests/identity/test_verified_cache.py``
checks the list against the model, so that a new column is watched too)."""
_BUMP = "UPDATE credential_generation SET generation = generation + 1 WHERE id = 1"
_OF = ", ".join(OTHER_COLUMNS)
_PG_OLD = "user_sessions_credential_generation"
_SQLITE_OLD = ("user_sessions_credential_generation_0", "user_sessions_credential_generation_1")
_SQLITE_NEW = {
    "user_sessions_credential_generation_0": f"AFTER UPDATE OF {_OF} ON user_sessions",
    "user_sessions_credential_generation_1": "AFTER DELETE ON user_sessions",
    "user_sessions_credential_generation_2": (
        "AFTER UPDATE OF last_seen_at ON user_sessions WHEN new.last_seen_at < old.last_seen_at"
    ),
}


def upgrade() -> None:
    bind = op.get_bind()
    if bind.dialect.name == "postgresql":
        # velyrix_bump_credential_generation() is 0022's: it returns NULL, valid for row triggers too
        op.execute(f"DROP TRIGGER IF EXISTS {_PG_OLD} ON user_sessions")
        op.execute(
            f"CREATE TRIGGER {_PG_OLD} AFTER UPDATE OF {_OF} OR DELETE ON user_sessions "
            "FOR EACH STATEMENT EXECUTE FUNCTION velyrix_bump_credential_generation()"
        )
        op.execute(
            f"CREATE TRIGGER {_PG_OLD}_back AFTER UPDATE OF last_seen_at ON user_sessions FOR EACH ROW "
            "WHEN (NEW.last_seen_at < OLD.last_seen_at) EXECUTE FUNCTION velyrix_bump_credential_generation()"
        )
    elif bind.dialect.name == "sqlite":
        for name in _SQLITE_OLD:
            op.execute(f"DROP TRIGGER IF EXISTS {name}")
        for name, event in _SQLITE_NEW.items():
            op.execute(f"CREATE TRIGGER {name} {event} BEGIN {_BUMP}; END")


def downgrade() -> None:
    bind = op.get_bind()
    if bind.dialect.name == "postgresql":
        op.execute(f"DROP TRIGGER IF EXISTS {_PG_OLD}_back ON user_sessions")
        op.execute(f"DROP TRIGGER IF EXISTS {_PG_OLD} ON user_sessions")
        op.execute(
            f"CREATE TRIGGER {_PG_OLD} AFTER UPDATE OR DELETE ON user_sessions "
            "FOR EACH STATEMENT EXECUTE FUNCTION velyrix_bump_credential_generation()"
        )
    elif bind.dialect.name == "sqlite":
        for name in _SQLITE_NEW:
            op.execute(f"DROP TRIGGER IF EXISTS {name}")
        for n, event in enumerate(("UPDATE", "DELETE")):
            op.execute(f"CREATE TRIGGER {_SQLITE_OLD[n]} AFTER {event} ON user_sessions BEGIN {_BUMP}; END")
