"""SLA: contracts (``contracts``, ``contract_hcl``), availability per cluster from the state history
(``availability``) and credits (``credits``). Definitions: docs/sla.md."""
