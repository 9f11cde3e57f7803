"""The control plane's database: models (the ``models`` package, one module per area), engines and sessions
(``engine``), and the Alembic migrations shipped in the package (``migrate``).

Use ``from velyrix.controlplane import db`` then ``db.upgrade()`` and ``with db.session() as s: ...``.
"""

from velyrix.controlplane.db import models
from velyrix.controlplane.db.engine import database_url, make_engine, session
from velyrix.controlplane.db.migrate import upgrade
from velyrix.controlplane.db.models import health as health_tables  # deprecated alias: use ``models``

__all__ = [
    "database_url",
    "health_tables",
    "make_engine",
    "models",
    "session",
    "upgrade",
]
