"""Operations on top of the control plane, one package per concern:

- ``scheduler``: Slurm and Kueue (configuration, topology, drains, accounting, delivered capacity);
- ``remediation``: health verdicts carried out on the fleet (drain, quarantine, replace, RMA, incidents);
- ``study``: the offline health-policy study (``velyrix health evaluate``);
- ``noc``: incidents for the network operations centre;
- ``service``: the composition root of the running service (API app plus the ops layer).
"""
