# The two set-up commands of the README, and what they stand on.
.PHONY: bootstrap demo test lint bench lock lower-bounds

# The lock: every package of .venv (evalboard[dev] and the build backend), pinned with
# hashes, resolved by pip itself under this machine's pip configuration. After changing a
# dependency in pyproject.toml, run `make lock` and commit requirements/dev.lock; existing
# pins are kept where they still fit (LOCK_FLAGS=--upgrade moves everything to the newest).
# About 5 minutes: pip-compile fetches the hash of every file of every pinned release.
LOCK_FLAGS ?=

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

lock:
	@test -x .venv/bin/pip-compile || .venv/bin/pip install -q "pip-tools>=7.4"
	.venv/bin/pip-compile --quiet --generate-hashes --allow-unsafe --strip-extras \
		--all-build-deps --extra dev --no-emit-index-url --no-emit-find-links \
		$(LOCK_FLAGS) --output-file requirements/dev.lock pyproject.toml

# pyproject.toml's lower bounds, tested: every direct dependency at its lowest allowed
# version (uv --resolution lowest-direct) in a throwaway venv, then the tests that need no
# Docker, browser or servers (about 3 minutes; needs the package index).
lower-bounds: bootstrap
	bash scripts/check_lower_bounds.sh

bench: bootstrap
	.venv/bin/python -m benchmarks
