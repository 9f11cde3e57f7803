"""The control plane service: database (``db``), authentication (``auth``), the tenant-scoped query
layer (``scoping``), audit records (``audit``) and the HTTP API (``api``)."""
