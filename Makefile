# Velyrix developer entry points. Every target bootstraps .venv (and the Debian packages the tests
# need) first, idempotently.
PY := .venv/bin/python
BIN := .venv/bin

.PHONY: bootstrap demo test lint bench unit

bootstrap:
	@bash scripts/bootstrap.sh

demo: bootstrap
	$(BIN)/velyrix demo

lint: bootstrap
	$(BIN)/ruff check src tests bench
	$(BIN)/ruff format --check src tests bench
	$(BIN)/mypy
	$(BIN)/lint-imports
	$(PY) scripts/check_structure.py

test: lint
	$(PY) -m pytest -n 2

# The fast tier: no PostgreSQL, Slurm, Prometheus or GPU, nothing marked slow; two workers (pytest-xdist).
unit: bootstrap
	$(PY) -m pytest -n 2 -m "not postgres and not slurm and not prometheus and not gpu and not slow"

bench: bootstrap
	$(PY) -m bench
