"""Health: knowledge and policy. Evidence (XID events, counter samples, check results, repair history)
goes into ``engine.Engine.evaluate`` and comes out as a ``Verdict`` (level, reasons, an action on the
``ladder``); ``drains.SchedulerSeam`` is how actions reach a scheduler. Imports only catalog, units, errors.
"""
