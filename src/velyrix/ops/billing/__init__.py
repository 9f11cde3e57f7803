"""Billing: usage events from the state history (``events``), meters (``meters``), invoices and credit
notes (``invoices``), money and its rounding rule (``money``), renderings (``rendering``), and their
database side (``ledger``). Definitions: docs/sla.md."""
