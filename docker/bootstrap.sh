#!/usr/bin/env bash
# Make a machine ready to run Evalboard's Docker sandbox, with no container registry.
#
# As root on Debian bookworm:
#     bash docker/bootstrap.sh                 # engine + base + evalboard/runtime-python
#     EVALBOARD_BUILD_TORCH_IMAGE=1 bash docker/bootstrap.sh    # also evalboard/runtime-torch
#     bash docker/bootstrap.sh --torch         # the same
#     EVALBOARD_GVISOR=0 bash docker/bootstrap.sh   # without the second wall (--no-gvisor)
#
# Idempotent: each step checks whether its result is already there, and everything
# downloaded (the debootstrap root filesystem, the pip site folders) is cached under
# /var/cache/evalboard (EVALBOARD_CACHE_DIR), so a second run takes seconds.
#
# Steps:
#   1. apt-get install docker.io and debootstrap when missing;
#   2. start dockerd in the background when it is not answering, and wait for it;
#   2b. the second wall: apt-get install runsc (gVisor), merge its runtime into
#      /etc/docker/daemon.json (other keys kept) and SIGHUP dockerd to reload it (running
#      containers untouched; never a restart), then check `docker info` lists runsc;
#   3. find a base image with Python 3.11 (python:3.11-slim, or evalboard/base:bookworm),
#      or make evalboard/base:bookworm with debootstrap + `docker import`;
#   4. pip install --target the runtime packages on the host (the base has no pip) and
#      build evalboard/runtime-python:latest (and evalboard/runtime-torch:latest) with the
#      legacy builder, the base image passed as BASE_IMAGE.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
CACHE="${EVALBOARD_CACHE_DIR:-/var/cache/evalboard}"
BASE_TAG="${EVALBOARD_BASE_TAG:-evalboard/base:bookworm}"
PYTHON_IMAGE="${EVALBOARD_PYTHON_IMAGE:-evalboard/runtime-python:latest}"
TORCH_IMAGE="${EVALBOARD_TORCH_IMAGE:-evalboard/runtime-torch:latest}"
BUILD_TORCH="${EVALBOARD_BUILD_TORCH_IMAGE:-0}"
GVISOR="${EVALBOARD_GVISOR:-1}"
DAEMON_JSON="${EVALBOARD_DOCKER_DAEMON_JSON:-/etc/docker/daemon.json}"
for arg in "$@"; do
    case "$arg" in
        --torch) BUILD_TORCH=1 ;;
        --no-torch) BUILD_TORCH=0 ;;
        --no-gvisor) GVISOR=0 ;;
        -h|--help) sed -n '2,24p' "$0"; exit 0 ;;
        *) echo "bootstrap.sh: unknown argument $arg (known: --torch, --no-torch, --no-gvisor)" >&2; exit 2 ;;
    esac
done
export DOCKER_BUILDKIT=0 DEBIAN_FRONTEND=noninteractive

START=$(date +%s)
log() { printf '[bootstrap %3ss] %s\n' "$(( $(date +%s) - START ))" "$*"; }
die() { printf 'bootstrap.sh: %s\n' "$*" >&2; exit 1; }

[ "$(id -u)" = 0 ] || die "run as root (it installs packages and starts dockerd)"
mkdir -p "$CACHE"

# 1. Packages ------------------------------------------------------------------------------
missing=()
command -v dockerd >/dev/null 2>&1 || missing+=(docker.io)
command -v debootstrap >/dev/null 2>&1 || missing+=(debootstrap)
if ! python3 -m pip --version >/dev/null 2>&1; then missing+=(python3-pip); fi
if [ ${#missing[@]} -gt 0 ]; then
    log "apt-get install ${missing[*]}"
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# 2. The engine ----------------------------------------------------------------------------
if ! docker info >/dev/null 2>&1; then
    log "starting dockerd (log: /var/log/evalboard-dockerd.log)"
    nohup dockerd >/var/log/evalboard-dockerd.log 2>&1 &
    for _ in $(seq 1 60); do
        docker info >/dev/null 2>&1 && break
        sleep 1
    done
    docker info >/dev/null 2>&1 || die "dockerd did not answer in 60 s; see /var/log/evalboard-dockerd.log"
fi
log "docker engine $(docker version --format '{{.Server.Version}}') is up"

# 2b. The second wall: gVisor's runsc as a Docker runtime -------------------------------
# docker/register_runsc.py merges runsc into daemon.json with the arguments the gvisor
# sandbox needs (--network=none, --host-uds=open: see that file), keeping every other
# setting, and leaves the file alone when it already says so.
# The engine reloads "runtimes" on SIGHUP: a restart would kill every running container.
REGISTER_RUNSC="$(dirname "$0")/register_runsc.py"
gvisor_registered() {
    docker info --format '{{json .Runtimes}}' 2>/dev/null | python3 "$REGISTER_RUNSC" --engine-lists
}
if [ "$GVISOR" = 1 ] && ! gvisor_registered; then
    if ! command -v runsc >/dev/null 2>&1; then
        log "apt-get install runsc (gVisor)"
        apt-get install -y -qq --no-install-recommends runsc >/dev/null 2>&1 \
            || { apt-get update -qq && apt-get install -y -qq --no-install-recommends runsc >/dev/null; } \
            || die "apt-get install runsc failed; rerun with --no-gvisor to skip the second wall"
    fi
    registered=$(python3 "$REGISTER_RUNSC" "$DAEMON_JSON" "$(command -v runsc)") \
        || die "could not register runsc in $DAEMON_JSON (the line above says why)"
    log "$registered"
    # The engine does not list runsc yet, so it has not read the file as it is now (even
    # when the file was already right): ask it to.
    pid=$(cat /var/run/docker.pid 2>/dev/null || true)
    [ -n "$pid" ] || die "no /var/run/docker.pid: cannot ask dockerd to reload $DAEMON_JSON"
    kill -HUP "$pid"
    for _ in $(seq 1 20); do gvisor_registered && break; sleep 0.5; done
    gvisor_registered || die "dockerd did not list runsc with --network=none --host-uds=open after SIGHUP; see its log and $DAEMON_JSON"
fi
if [ "$GVISOR" = 1 ]; then
    log "gVisor: runsc $(runsc --version 2>/dev/null | awk 'NR==1{print $3}') is a Docker runtime"
else
    log "gVisor skipped (--no-gvisor): sandboxes fall back to runc alone"
fi

# 3. A base image with Python 3.11 --------------------------------------------------------
debian_mirror() {
    local uri=""
    if [ -f /etc/apt/sources.list ]; then
        uri=$(awk '$1=="deb" && $0 !~ /security/ {print ($2 ~ /^\[/ ? $3 : $2); exit}' \
            /etc/apt/sources.list 2>/dev/null || true)
    fi
    if [ -z "$uri" ] && [ -f /etc/apt/sources.list.d/debian.sources ]; then
        uri=$(awk '/^URIs:/ && $2 !~ /security/ {print $2; exit}' /etc/apt/sources.list.d/debian.sources)
    fi
    echo "${uri:-http://deb.debian.org/debian}"
}

BASE_IMAGE="${EVALBOARD_BASE_IMAGE:-}"
if [ -z "$BASE_IMAGE" ]; then
    for candidate in python:3.11-slim python:3.11-slim-bookworm "$BASE_TAG"; do
        if docker image inspect "$candidate" >/dev/null 2>&1; then BASE_IMAGE="$candidate"; break; fi
    done
fi
if [ -z "$BASE_IMAGE" ]; then
    ROOTFS_TAR="$CACHE/base-bookworm.tar"
    if [ ! -s "$ROOTFS_TAR" ]; then
        MIRROR=$(debian_mirror)
        ROOTFS=$(mktemp -d "$CACHE/rootfs.XXXXXX")
        log "debootstrap bookworm from $MIRROR (about a minute)"
        debootstrap --variant=minbase --include=python3,libstdc++6,libgomp1 \
            bookworm "$ROOTFS" "$MIRROR" >"$CACHE/debootstrap.log" 2>&1 \
            || { rm -rf "$ROOTFS"; die "debootstrap failed; see $CACHE/debootstrap.log"; }
        # Smaller image: no apt lists, caches or docs.
        rm -rf "$ROOTFS"/var/lib/apt/lists/* "$ROOTFS"/var/cache/apt/* \
               "$ROOTFS"/usr/share/doc/* "$ROOTFS"/usr/share/man/* "$ROOTFS"/usr/share/locale/*
        tar -C "$ROOTFS" -cf "$ROOTFS_TAR.part" .
        mv "$ROOTFS_TAR.part" "$ROOTFS_TAR"
        rm -rf "$ROOTFS"
    fi
    log "docker import $BASE_TAG"
    docker import -c 'ENV LANG=C.UTF-8' -c 'CMD ["python3"]' "$ROOTFS_TAR" "$BASE_TAG" >/dev/null
    BASE_IMAGE="$BASE_TAG"
fi
log "base image: $BASE_IMAGE"

# 4. Runtime images ------------------------------------------------------------------------
PIP_PLATFORM=(--only-binary=:all: --python-version 3.11 --implementation cp --abi cp311
    --platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64
    --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64
    --platform manylinux_2_5_x86_64 --platform manylinux1_x86_64 --platform any)
PIP_EXTRA=()
if python3 -m pip install --help 2>/dev/null | grep -q -- --break-system-packages; then
    PIP_EXTRA+=(--break-system-packages)
fi

# site_folder NAME REQUIREMENTS: pip install --target into a cached folder keyed by the
# requirements' hash; prints the folder. __pycache__ files are kept on purpose.
site_folder() {
    local name="$1" requirements="$2" key dir
    key=$(sha256sum "$requirements" | cut -c1-16)
    dir="$CACHE/$name-$key"
    if [ ! -f "$dir/.complete" ]; then
        rm -rf "$dir"
        log "pip install --target $dir ($(grep -cv '^#' "$requirements") requirements)" >&2
        python3 -m pip install -q --no-warn-script-location "${PIP_EXTRA[@]}" \
            --cache-dir "$CACHE/pip" --target "$dir" "${PIP_PLATFORM[@]}" \
            -r "$requirements" >&2
        chmod -R a+rX "$dir"
        touch "$dir/.complete"
    fi
    echo "$dir"
}

# build_image TAG DOCKERFILE SITE_NAME SITE_DIR BUILD_ARG...: rebuild only when the recipe
# (Dockerfile, site folder, base image id) changed since the image was built.
build_image() {
    local tag="$1" dockerfile="$2" site_name="$3" site_dir="$4"; shift 4
    local recipe current context
    recipe=$( { cat "$dockerfile"; echo "$site_dir"; echo "$*";
                for arg in "$@"; do docker image inspect --format '{{.Id}}' "${arg#*=}" 2>/dev/null || true; done
              } | sha256sum | cut -c1-16)
    current=$(docker image inspect --format '{{index .Config.Labels "org.evalboard.recipe"}}' "$tag" 2>/dev/null || true)
    if [ "$current" = "$recipe" ]; then
        log "$tag is up to date (recipe $recipe)"
        return
    fi
    context=$(mktemp -d "$CACHE/context.XXXXXX")
    # Hard links: no copy of hundreds of MB; mtimes kept, so the .pyc files stay valid.
    cp -al "$site_dir" "$context/$site_name"
    rm -f "$context/$site_name/.complete"
    cp "$dockerfile" "$context/Dockerfile"
    local args=()
    for arg in "$@"; do args+=(--build-arg "$arg"); done
    log "docker build $tag"
    docker build -q "${args[@]}" --label "org.evalboard.recipe=$recipe" -t "$tag" "$context" >/dev/null \
        || { rm -rf "$context"; die "docker build $tag failed"; }
    rm -rf "$context"
    log "$tag: $(docker image inspect --format '{{.Size}}' "$tag" | awk '{printf "%.2f GB", $1/1e9}')"
}

SITE_PYTHON=$(site_folder site-python "$HERE/requirements-python.txt")
build_image "$PYTHON_IMAGE" "$HERE/Dockerfile.runtime-python" site-python "$SITE_PYTHON" \
    "BASE_IMAGE=$BASE_IMAGE"
docker run --rm --network none --read-only "$PYTHON_IMAGE" \
    python3 -c 'import numpy, onnxruntime, tokenizers' \
    || die "$PYTHON_IMAGE does not import numpy, onnxruntime and tokenizers"

if [ "$BUILD_TORCH" = 1 ]; then
    SITE_TORCH=$(site_folder site-torch "$HERE/requirements-torch.txt")
    build_image "$TORCH_IMAGE" "$HERE/Dockerfile.runtime-torch" site-torch "$SITE_TORCH" \
        "PYTHON_IMAGE=$PYTHON_IMAGE"
    docker run --rm --network none --read-only "$TORCH_IMAGE" \
        python3 -c 'import torch, transformers' \
        || die "$TORCH_IMAGE does not import torch and transformers"
else
    log "skipping $TORCH_IMAGE (set EVALBOARD_BUILD_TORCH_IMAGE=1 or pass --torch)"
fi

# Old per-submission images of a previous runtime stay until `docker image prune`.
rm -rf "$CACHE"/context.*
log "done"
