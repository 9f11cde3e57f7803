"""Authentication and authorization: API keys (``keys``), roles as scope sets (``roles``) and the
principal a request acts as (``principals``)."""
