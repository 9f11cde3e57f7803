"""Health checks of the node agent: quick (between jobs, < 60 s), deep (idle nodes, on a schedule) and
acceptance (at delivery). They read ``NodeSample``s and use a ``Prober`` for active tests, so they run the
same on NVML/sysfs and on the twin. Each check has a hard timeout; one that could not run is a failure.
"""
