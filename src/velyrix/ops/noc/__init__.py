"""The NOC: incidents (``book`` dedup, ``states`` and ``lifecycle`` transitions, ``escalation`` timers),
their database side (``incidents``) and API (``routes``).

``NocBook``, ``Incident``, ``capacity_priority`` and ``P1_FRACTION`` keep the names callers used when this
was one module (``velyrix.ops.noc``): the capacity incidents of ``velyrix.ops.remediation.node_reports``.
"""

from __future__ import annotations

from velyrix.ops.noc.book import P1_FRACTION, Incident, NocBook, capacity_priority

__all__ = ["P1_FRACTION", "Incident", "NocBook", "capacity_priority"]
