"""A training job on the digital twin, measured (``velyrix sim workload``, ``velyrix report goodput``).

- ``job``: what the cluster's ``workload`` block asks of the twin (bytes per save, step time, interval).
- ``tier``: the twin's storage tier as the job sees it (nominal bandwidth, storage plane, other tenants).
- ``placement``: the scheduler seam the job is placed and requeued through (the twin's pool today).
- ``health_loop``: drains and replacements the health loop decides (reactive or proactive).
- ``runner``: the event loop: steps, saves, stalls, failures, lost work and restarts on a timeline.
- ``measure``: ETTR and stall share from the timeline; the comparison with the plan; what-if runs.
- ``export``: the timeline as JSON, a chart (SVG) and Prometheus metrics with the job's label.

The measurement is computed from simulated events only: nothing here reads the goodput planner's
prediction except ``measure.compare``, which puts the two side by side.
"""
