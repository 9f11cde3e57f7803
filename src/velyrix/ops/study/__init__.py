"""The offline health-policy study (``velyrix health evaluate``): does proactive health save jobs?

- ``workload``: parameters, jobs and benign noise; ``simulation``: one policy on the twin;
  ``evaluation``: the three policies compared.
"""
