"""Pure planners: the same inputs give the same plan; no I/O, no database, no clock."""
