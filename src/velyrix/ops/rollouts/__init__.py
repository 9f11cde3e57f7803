"""Staged rollouts of firmware, drivers and inference engines: a staging pod first, then a canary, then
production in waves inside each tenant's maintenance windows, with gates and automatic rollback; durable
(every step journaled before it is acted on). See ``engine`` (the controller) and docs/rollouts.md."""
