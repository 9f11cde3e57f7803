"""Root, BMC and provider access to tenants' nodes: operating modes (``modes``), per-tenant SSH
certificate authorities (``ssh_ca``), the jump host's configuration (``jumphost``) and its session
proxy, whose sessions become audit events (``jump_proxy``)."""
