#!/usr/bin/env bash
# The lower bounds of pyproject.toml, tested: a throwaway virtual environment with every
# direct dependency at the LOWEST version pyproject.toml allows (uv's
# --resolution lowest-direct; pip cannot resolve that way), then the tests that need no
# Docker, browser or server processes. A failure means a bound is too low: raise it.
# Library users install without the lock; this is what keeps `evalboard[...]` honest.
# Usage: bash scripts/check_lower_bounds.sh [PYTEST ARGS]   (about 3 minutes)
set -euo pipefail
cd "$(dirname "$0")/.."
UV=${UV:-.venv/bin/uv}
VENV=${LOWER_BOUNDS_VENV:-/tmp/evalboard-lower-bounds}
python3 -m venv --clear "$VENV"   # with pip: bundles' requirements are resolved by pip
"$UV" pip compile pyproject.toml --extra dev --resolution lowest-direct \
    --python-version 3.11 --quiet --output-file "$VENV/lowest.txt"
"$UV" pip install --quiet --python "$VENV/bin/python" -r "$VENV/lowest.txt"
"$UV" pip install --quiet --python "$VENV/bin/python" --no-deps -e .
grep -E '^(typer|rich|pydantic|sqlalchemy|numpy|fastapi|scikit-learn)==' "$VENV/lowest.txt" |
    tr '\n' ' ' >&2
echo >&2
if (($# == 0)); then
    set -- tests/core tests/scoring tests/datasets_registry tests/cli/test_task_dataset_cli.py \
        tests/evaluator/test_evaluation.py tests/submission_sandbox/test_dependencies.py \
        -m "not docker and not postgres and not redis and not browser and not slow"
fi
"$VENV/bin/python" -m pytest -q -p no:cacheprovider "$@"
