"""Public fakes and fixtures: a simulated region, a real Slurm on loopback, factories."""
