"""Scheduler operations: Slurm configuration, policy as code, reports, Fair Tree, drains, Kueue.

Modules: ``clusters`` (what the scheduler runs on), ``slurm_config`` (slurm.conf and friends),
``topology`` (topology.conf seam), ``policies`` (HCL policy files), ``commands`` (running Slurm
tools), ``converging`` (sacctmgr plan/apply), ``accounting`` (sacct/sshare readers), ``reports``,
``fairtree``, ``slurm_drains`` and ``kueue``.
"""
