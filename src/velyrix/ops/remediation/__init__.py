"""Remediation: health verdicts carried out on the fleet.

- ``remediator``: ``Remediator`` (drain, quarantine and replace, RMA, NOC incidents) on a fleet seam;
- ``node_reports``: the control plane's handler of node reports (``app.state.report_handler``), which runs
  the ``Remediator`` on the node's database row.
"""
