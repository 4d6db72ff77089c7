# The two set-up commands of the README, and what they stand on.
.PHONY: bootstrap demo test lint bench

bootstrap:
	bash scripts/bootstrap.sh

demo: bootstrap
	.venv/bin/evalboard demo

test: bootstrap
	.venv/bin/pytest

lint:
	.venv/bin/ruff check .
	.venv/bin/ruff format --check .
	.venv/bin/lint-imports
	.venv/bin/mypy

bench: bootstrap
	.venv/bin/python -m benchmarks
