"""Per-submission images, built offline and tagged by bundle digest.

``evalboard/submission:<bundle sha256>`` is the runtime base (``Settings.base_image``, or
``Settings.torch_image`` for transformers bundles) plus the runner and the bundle, owned
by root and readable by all, run as an unprivileged user. An image is reused when its
tag exists and was built from the same runner and the same base image id; anything else
rebuilds it. ``image`` bundles are ``docker load``-ed and tagged the same way.

A bundle with a ``requirements.txt`` (see ``submission_sandbox.dependencies``) is built
on a dependency image, ``evalboard/deps:<resolved set sha256>``: the runtime base plus
the resolved site folder first on ``PYTHONPATH``. It is shared by every bundle that
resolves to the same set on the same base.

The legacy builder runs here (the Engine API's /build without BuildKit); nothing is
pulled and no build step has a network.
"""

from __future__ import annotations

import hashlib
import io
import os
import shutil
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from evalboard.core.errors import PlatformError
from evalboard.core.scratch import scratch_tree
from evalboard.core.states import FailureReason
from submission_sandbox.bundle import Bundle, iter_bundle_files
from submission_sandbox.dependencies import Dependencies
from submission_sandbox.manifest import Runtime
from submission_sandbox.sandbox import SandboxFailure

__all__ = [
    "CONTAINER_BUNDLE",
    "LABEL",
    "RUNNER_PATH",
    "SANDBOX_USER",
    "BuiltImage",
    "build_image",
    "runner_digest",
]

RUNNER_PATH = Path(__file__).with_name("_runner.py")
CONTAINER_BUNDLE = "/opt/bundle"
SANDBOX_USER = "10001:10001"
#: Prefix of every label Evalboard puts on images and containers.
LABEL = "org.evalboard"

_DOCKERFILE = f"""\
ARG BASE_IMAGE
FROM ${{BASE_IMAGE}}
COPY runner.py /opt/evalboard/runner.py
COPY bundle/ {CONTAINER_BUNDLE}/
ENV EVALBOARD_BUNDLE={CONTAINER_BUNDLE} PYTHONUNBUFFERED=1 PYTHONDONTWRITEBYTECODE=1 HOME=/tmp
WORKDIR {CONTAINER_BUNDLE}
USER {SANDBOX_USER}
ENTRYPOINT ["python3", "/opt/evalboard/runner.py"]
"""
DEPS_SITE = "/opt/evalboard/bundle-site"
# ${PYTHONPATH} is the runtime base's own site folder: the bundle's set comes first.
_DEPS_DOCKERFILE = f"""\
ARG BASE_IMAGE
FROM ${{BASE_IMAGE}}
COPY site/ {DEPS_SITE}/
ENV PYTHONPATH={DEPS_SITE}:${{PYTHONPATH}}
"""


@dataclass(frozen=True)
class BuiltImage:
    """A per-submission image, ready to run."""

    tag: str
    id: str
    reused: bool
    build_s: float
    #: True when the image is the researcher's own (``image`` runtime): it brings its
    #: entrypoint, and the runner is not in it.
    custom: bool = False


def runner_digest() -> str:
    return hashlib.sha256(RUNNER_PATH.read_bytes()).hexdigest()


def _stage(bundle: Bundle, context: Path) -> None:
    shutil.copyfile(RUNNER_PATH, context / "runner.py")
    (context / "Dockerfile").write_text(_DOCKERFILE)
    target = context / "bundle"
    target.mkdir()
    for relative, path in iter_bundle_files(bundle.path):
        destination = target / str(relative)
        destination.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, destination)
        # save_pretrained writes 0600 files: the sandbox user must read everything.
        os.chmod(destination, 0o755 if os.access(path, os.X_OK) else 0o644)
    for directory in [target, *[p for p in target.rglob("*") if p.is_dir()]]:
        os.chmod(directory, 0o755)


def _load_image(client: Any, bundle: Bundle, tag: str) -> BuiltImage:
    import docker.errors

    started = time.monotonic()
    existing = _labelled(client, tag)
    if existing:
        return BuiltImage(tag, existing, True, 0.0, custom=True)
    assert bundle.manifest.image is not None
    try:
        with open(bundle.path / bundle.manifest.image, "rb") as handle:
            images = client.images.load(handle)
    except docker.errors.APIError as exc:
        raise SandboxFailure(
            FailureReason.BUILD_FAILED,
            f"`docker load` refused {bundle.manifest.image}: {exc.explanation or exc}",
        ) from None
    if len(images) != 1:
        raise SandboxFailure(
            FailureReason.BUILD_FAILED,
            f"{bundle.manifest.image} holds {len(images)} images; save exactly one",
        )
    image = images[0]
    config = image.attrs.get("Config") or {}
    if not config.get("Entrypoint") and not config.get("Cmd"):
        raise SandboxFailure(
            FailureReason.BUILD_FAILED,
            f"{bundle.manifest.image} has no ENTRYPOINT or CMD; it must start the model",
        )
    image.tag(tag)
    return BuiltImage(tag, str(image.id), False, time.monotonic() - started, custom=True)


def _docker_build(
    client: Any, context: Path, *, tag: str, base: str, labels: dict[str, str]
) -> str:
    """Build ``context`` (legacy builder, no pull, no network); the image id."""
    import docker.errors

    log = io.StringIO()

    def failed(why: str) -> SandboxFailure:
        return SandboxFailure(FailureReason.BUILD_FAILED, why, log_tail=log.getvalue()[-4000:])

    try:
        for chunk in client.api.build(
            path=str(context),
            tag=tag,
            buildargs={"BASE_IMAGE": base},
            labels=labels,
            rm=True,
            forcerm=True,
            pull=False,
            network_mode="none",
            decode=True,
        ):
            if "stream" in chunk:
                log.write(str(chunk["stream"]))
            if "error" in chunk:
                raise failed(f"building the image failed: {chunk['error'].strip()}")
    except docker.errors.APIError as exc:
        raise failed(f"building the image failed: {exc.explanation or exc}") from None
    image_id = _labelled(client, tag)
    if image_id is None:
        raise failed("the build left no image")
    return image_id


def _labelled(client: Any, tag: str, labels: dict[str, str] | None = None) -> str | None:
    """The id of ``tag`` when it exists (with exactly these labels' values, if given)."""
    import docker.errors

    try:
        image = client.images.get(tag)
    except docker.errors.ImageNotFound:
        return None
    return (
        str(image.id) if all(image.labels.get(k) == v for k, v in (labels or {}).items()) else None
    )


def _deps_image(client: Any, dependencies: Dependencies, base: str, base_id: str) -> str:
    """The runtime base plus the bundle's resolved set: built once per (set, base)."""
    tag = f"evalboard/deps:{dependencies.digest[:40]}"
    labels = {f"{LABEL}.deps": dependencies.digest, f"{LABEL}.base": base_id}
    if _labelled(client, tag, labels) is None:
        # Beside the cache, so that the hard links below work (same file system).
        with scratch_tree("evalboard-deps", under=dependencies.site.parent) as context:
            (Path(context) / "Dockerfile").write_text(_DEPS_DOCKERFILE)
            # A hard-linked copy: the build context is read by the engine, never written.
            shutil.copytree(dependencies.site, Path(context) / "site", copy_function=_link_or_copy)
            _docker_build(client, Path(context), tag=tag, base=base, labels=labels)
    return tag


def _link_or_copy(source: str, destination: str) -> None:
    try:
        os.link(source, destination)
    except OSError:
        shutil.copy2(source, destination)


def build_image(
    bundle: Bundle,
    *,
    client: Any,
    base_image: str,
    torch_image: str | None = None,
    dependencies: Dependencies | None = None,
    force: bool = False,
) -> BuiltImage:
    """The bundle's image: reused when already built from the same runner and base.

    Args:
        dependencies: the bundle's resolved requirements (``dependencies.resolve``), laid
            under the bundle in a shared dependency image.

    Raises:
        SandboxFailure: ``build_failed``, with the build log's tail.
        PlatformError: the runtime base image is missing (run docker/bootstrap.sh).
    """
    tag = f"evalboard/submission:{bundle.sha256[:40]}"
    if bundle.manifest.runtime is Runtime.IMAGE:
        return _load_image(client, bundle, tag)
    base = (
        torch_image
        if bundle.manifest.runtime is Runtime.TRANSFORMERS and torch_image
        else base_image
    )
    base_id = _labelled(client, base)
    if base_id is None:
        raise PlatformError(
            f"the runtime image {base} is missing on this Docker engine; build it with "
            "`bash docker/bootstrap.sh`"
            + (" --torch" if bundle.manifest.runtime is Runtime.TRANSFORMERS else "")
        )
    labels = {
        f"{LABEL}.bundle": bundle.sha256,
        f"{LABEL}.runner": runner_digest(),
        f"{LABEL}.base": base_id,
        f"{LABEL}.deps": dependencies.digest if dependencies else "",
    }
    if not force:
        reused = _labelled(client, tag, labels)
        if reused is not None:
            return BuiltImage(tag, reused, True, 0.0)
    started = time.monotonic()
    if dependencies is not None:
        base = _deps_image(client, dependencies, base, base_id)
    with scratch_tree("evalboard-build") as context:
        _stage(bundle, Path(context))
        image_id = _docker_build(client, Path(context), tag=tag, base=base, labels=labels)
    return BuiltImage(tag, image_id, False, time.monotonic() - started)
