"""Browser sessions end server-side: after the tenant's idle timeout, at the absolute timeout, and on
logout (CSRF-checked); an ended session answers 401 on its next request and leaves one ``sessions.end``
(or ``auth.logout``) audit event."""

from __future__ import annotations

import datetime as dt

import httpx
import sqlalchemy as sa

from tests.identity.conftest import Served


def _user_session(served: Served) -> tuple[str, str]:
    from velyrix.controlplane.db import models
    from velyrix.controlplane.db.models.identity import User
    from velyrix.controlplane.identity import sessions

    with served.app.state.sessionmaker() as s:
        tenant = models.Tenant(name="acme", display_name="acme")
        s.add(tenant)
        s.flush()
        user = User(tenant_id=tenant.id, user_name="alice@acme.example", role="viewer", groups=[], scim={})
        s.add(user)
        s.flush()
        row, secret = sessions.start(s, user, "oidc")
        s.commit()
        return row.id, secret


def _shift(served: Served, session_id: str, **columns: dt.datetime) -> None:
    from velyrix.controlplane.db.models.identity import UserSession

    with served.app.state.sessionmaker() as s:
        s.execute(sa.update(UserSession).where(UserSession.id == session_id).values(**columns))
        s.commit()


def _ends(served: Served, session_id: str) -> list[str]:
    from velyrix.controlplane.db import models

    with served.app.state.sessionmaker() as s:
        rows = s.scalars(sa.select(models.AuditEvent).where(models.AuditEvent.target == f"sessions/{session_id}"))
        return [f"{e.action}:{e.detail.get('reason', '')}" for e in rows]


def test_idle_timeout_ends_the_session(served: Served) -> None:
    from velyrix.controlplane.identity import sessions

    sid, secret = _user_session(served)
    jar = {sessions.COOKIE: secret}
    assert httpx.get(f"{served.url}/ui", cookies=jar).status_code == 200
    now = dt.datetime.now(dt.UTC)
    _shift(served, sid, last_seen_at=now - dt.timedelta(seconds=sessions.DEFAULT_IDLE_S + 1))
    idle = httpx.get(f"{served.url}/ui", cookies=jar)
    assert idle.status_code == 401 and "idle" in idle.json()["detail"]
    _shift(served, sid, last_seen_at=now)  # ended stays ended
    assert httpx.get(f"{served.url}/ui", cookies=jar).status_code == 401
    assert _ends(served, sid) == ["sessions.end:idle"]


def test_absolute_timeout_ends_the_session(served: Served) -> None:
    from velyrix.controlplane.identity import sessions

    sid, secret = _user_session(served)
    _shift(served, sid, expires_at=dt.datetime.now(dt.UTC) - dt.timedelta(seconds=1))
    expired = httpx.get(f"{served.url}/v1/clusters", cookies={sessions.COOKIE: secret})
    assert expired.status_code == 401 and "expired" in expired.json()["detail"]
    assert _ends(served, sid) == ["sessions.end:expired"]


def test_logout_needs_the_csrf_token_then_ends_the_session(served: Served) -> None:
    from velyrix.controlplane.identity import sessions

    sid, secret = _user_session(served)
    jar = {sessions.COOKIE: secret}
    forged = httpx.post(f"{served.url}/auth/logout", data={"csrf": "0" * 64}, cookies=jar)
    assert forged.status_code == 403 and forged.json()["code"] == "identity_csrf_failed"
    assert httpx.get(f"{served.url}/ui", cookies=jar).status_code == 200
    out = httpx.post(f"{served.url}/auth/logout", data={"csrf": sessions.csrf_token(secret)}, cookies=jar)
    assert out.status_code == 200 and "Max-Age=0" in out.headers["set-cookie"]
    assert httpx.get(f"{served.url}/ui", cookies=jar).status_code == 401
    assert _ends(served, sid) == ["auth.logout:"]
    assert httpx.get(f"{served.url}/ui", cookies={sessions.COOKIE: "forged"}).status_code == 401
