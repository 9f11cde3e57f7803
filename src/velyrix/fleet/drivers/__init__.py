"""Fleet drivers: the seam between the control plane and hardware (``base.Driver``) and its implementations."""
