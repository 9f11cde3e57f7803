"""Collectors: each reads one kind of hardware and returns a ``NodeSample`` (see ``base``)."""
