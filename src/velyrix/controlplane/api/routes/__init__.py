"""One router per resource under ``/v1``. Route modules never import SQLAlchemy: every query goes
through ``Ctx.scope`` (``velyrix.controlplane.scoping``)."""
