"""Evidence a tenant can verify offline: signed sanitization certificates (``sanitization``)."""
