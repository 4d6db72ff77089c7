"""A bundle's own dependencies: ``requirements.txt`` (and ``wheels/``), resolved on the host.

A bundle may carry a pip ``requirements.txt`` and, optionally, a ``wheels/`` folder of
wheels to take them from. They are resolved at build time, on the host, by pip with the
runtime images' platform flags (CPython 3.11, manylinux x86_64, wheels only: the images
have no compiler and no pip), from the package index reachable then or the bundle's own
wheels. The model never reaches an index: its sandbox still has no network.

Resolution is two steps: ``pip install --dry-run --report`` names the exact set (name,
version and archive sha256 of every package), whose hash keys a cache folder; only a set
not seen before is installed, with ``--no-deps --require-hashes`` so that the folder holds
exactly that set. Two bundles with the same resolved set share the folder (and, in
Docker, the image layer made from it). A requirement that cannot be resolved, or has no
wheel for the platform, fails with pip's own error line.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from evalboard.core.scratch import scratch_tree
from evalboard.core.states import FailureReason
from submission_sandbox.sandbox import SandboxFailure

__all__ = [
    "PIP_PLATFORM_FLAGS",
    "REQUIREMENTS_FILE",
    "WHEELS_DIR",
    "Dependencies",
    "default_cache_dir",
    "resolve",
]

REQUIREMENTS_FILE = "requirements.txt"
WHEELS_DIR = "wheels"
#: The runtime images' platform, as pip must be told it (docker/bootstrap.sh builds the
#: images with the same list). pip matches platform tags exactly: with one manylinux tag
#: it silently skips or downgrades packages, so every tag the images' glibc accepts is named.
PIP_PLATFORM_FLAGS = (
    "--only-binary=:all:",
    "--python-version",
    "3.11",
    "--implementation",
    "cp",
    "--abi",
    "cp311",
    *(
        arg
        for tag in (
            "manylinux_2_28_x86_64",
            "manylinux_2_27_x86_64",
            "manylinux_2_17_x86_64",
            "manylinux2014_x86_64",
            "manylinux_2_5_x86_64",
            "manylinux1_x86_64",
            "any",
        )
        for arg in ("--platform", tag)
    ),
)
_PIP_TIMEOUT_S = 900
_COMPLETE = ".evalboard-complete"


@dataclass(frozen=True)
class Dependencies:
    """A bundle's resolved dependencies, installed in a folder to put on ``PYTHONPATH``."""

    #: sha256 of the resolved set (each package's name, version and archive sha256).
    digest: str
    #: ``name==version`` of every package, sorted.
    packages: tuple[str, ...]
    #: The folder they are installed in (``pip install --target``), readable by all.
    site: Path
    #: False when the folder was already there from an earlier build.
    installed_now: bool


def _pip_error(output: str) -> str:
    """pip's own line saying what failed (its last ``ERROR:`` line)."""
    errors = [line.strip() for line in output.splitlines() if line.startswith("ERROR:")]
    if errors:
        return errors[-1]
    lines = [line.strip() for line in output.splitlines() if line.strip()]
    return lines[-1] if lines else "pip failed with no message"


def _pip_install(
    pip: Sequence[str], bundle_dir: Path, requirements: Path, target: Path, options: list[str]
) -> None:
    """``pip install`` of ``requirements`` into ``target`` for the images' platform, from the
    index or the bundle's own wheels."""
    wheels = bundle_dir / WHEELS_DIR
    args = [
        *("install", "--quiet", *options, "--target", str(target), *PIP_PLATFORM_FLAGS),
        *(("--find-links", str(wheels)) if wheels.is_dir() else ()),
        *("--requirement", str(requirements)),
    ]
    env = {**os.environ, "PIP_DISABLE_PIP_VERSION_CHECK": "1", "PYTHONDONTWRITEBYTECODE": ""}
    try:
        done = subprocess.run(
            [*pip, *args],
            capture_output=True,
            text=True,
            env=env,
            timeout=_PIP_TIMEOUT_S,
            check=False,
        )
    except subprocess.TimeoutExpired:
        raise SandboxFailure(
            FailureReason.BUILD_FAILED,
            f"{REQUIREMENTS_FILE}: pip did not finish in {_PIP_TIMEOUT_S} s",
        ) from None
    if done.returncode != 0:
        output = done.stdout + done.stderr
        raise SandboxFailure(
            FailureReason.BUILD_FAILED,
            f"{REQUIREMENTS_FILE}: {_pip_error(output)}",
            log_tail=output[-4000:],
        )


def _check_lines(requirements: Path) -> None:
    """Named releases only: no pip options, no URLs or paths.

    pip would read ``-r /etc/passwd`` or ``pkg @ file:///...`` on the host and quote the
    file in its error, which the submitter sees; indexes other than the platform's are
    not the researcher's to choose either.
    """
    from packaging.requirements import InvalidRequirement, Requirement  # bundles with one

    for number, raw in enumerate(requirements.read_text(errors="replace").splitlines(), 1):
        line = raw.split(" #", 1)[0].strip()
        if not line or line.startswith("#"):
            continue
        where = f"{REQUIREMENTS_FILE} line {number}"
        if line.startswith("-"):
            raise SandboxFailure(
                FailureReason.INVALID_BUNDLE,
                f"{where}: pip options ({line.split()[0]}) are not allowed; list one "
                f"package per line and put wheels of your own in {WHEELS_DIR}/",
            )
        try:
            requirement = Requirement(line)
        except InvalidRequirement as exc:
            raise SandboxFailure(
                FailureReason.INVALID_BUNDLE, f"{where}: not a requirement ({exc})"
            ) from None
        if requirement.url:
            raise SandboxFailure(
                FailureReason.INVALID_BUNDLE,
                f"{where}: {requirement.name} @ URL is not allowed; name a release "
                f"(`{requirement.name}==VERSION`) or put its wheel in {WHEELS_DIR}/",
            )


def _resolve_set(
    bundle_dir: Path, work: Path, pip: Sequence[str]
) -> list[tuple[str, str, str, str]]:
    """(name, version, sha256, url) of every package pip would install, sorted by name."""
    report = work / "report.json"
    options = ["--dry-run", "--ignore-installed", "--report", str(report)]
    _pip_install(pip, bundle_dir, bundle_dir / REQUIREMENTS_FILE, work / "unused", options)
    resolved = []
    for item in json.loads(report.read_text())["install"]:
        info = item["download_info"]
        digest = (info.get("archive_info") or {}).get("hashes", {}).get("sha256")
        if digest is None:  # a local folder or VCS checkout: no archive to pin
            raise SandboxFailure(
                FailureReason.BUILD_FAILED,
                f"{REQUIREMENTS_FILE}: {info['url']} is not a wheel; name released packages "
                f"or put their wheels in {WHEELS_DIR}/",
            )
        metadata = item["metadata"]
        resolved.append((metadata["name"].lower(), metadata["version"], digest, info["url"]))
    return sorted(resolved)


def default_cache_dir() -> Path:
    """Where resolved sets are kept: ``bundle-deps`` under the data directory."""
    # Imported here: a bundle without requirements (and the local sandbox's start) does
    # not pay for pydantic-settings (asyncio and ssl with it).
    from evalboard.core.settings import get_settings

    return get_settings().data_dir / "bundle-deps"


def _remembered(cache_dir: Path, bundle_sha256: str | None) -> Dependencies | None:
    if bundle_sha256 is None:
        return None
    try:
        record = json.loads((cache_dir / "bundles" / f"{bundle_sha256}.json").read_text())
    except (OSError, ValueError):
        return None
    site = cache_dir / str(record["digest"])
    if not (site / _COMPLETE).is_file():
        return None
    return Dependencies(record["digest"], tuple(record["packages"]), site, installed_now=False)


def _remember(cache_dir: Path, bundle_sha256: str | None, dependencies: Dependencies) -> None:
    if bundle_sha256 is None:
        return
    folder = cache_dir / "bundles"
    folder.mkdir(exist_ok=True)
    record = {"digest": dependencies.digest, "packages": list(dependencies.packages)}
    partial = folder / f"{bundle_sha256}.json.{os.getpid()}"
    partial.write_text(json.dumps(record))
    partial.replace(folder / f"{bundle_sha256}.json")


def resolve(
    bundle_dir: Path,
    *,
    bundle_sha256: str | None = None,
    cache_dir: Path | None = None,
    pip: Sequence[str] | None = None,
) -> Dependencies | None:
    """Resolve and install ``bundle_dir``'s requirements.txt; None when it has none.

    Args:
        bundle_dir: an unpacked bundle.
        bundle_sha256: the bundle's digest: a bundle is resolved once, like its image is
            built once (every dataset of an evaluation starts a sandbox), and later starts
            reuse that set without asking an index.
        cache_dir: where resolved sets are kept, one folder per set (default:
            ``default_cache_dir()``).
        pip: the pip command (default: this Python's).

    Raises:
        SandboxFailure: ``build_failed`` with pip's own error line; ``invalid_bundle``
            for a line that is not a named release (pip options, URLs, paths).
    """
    if not (bundle_dir / REQUIREMENTS_FILE).is_file():
        return None
    _check_lines(bundle_dir / REQUIREMENTS_FILE)
    pip = list(pip or (sys.executable, "-m", "pip"))
    cache_dir = cache_dir or default_cache_dir()
    cache_dir.mkdir(parents=True, exist_ok=True)
    remembered = _remembered(cache_dir, bundle_sha256)
    if remembered is not None:
        return remembered
    dependencies = _resolve_and_install(bundle_dir, cache_dir, pip)
    _remember(cache_dir, bundle_sha256, dependencies)
    return dependencies


def _resolve_and_install(bundle_dir: Path, cache_dir: Path, pip: list[str]) -> Dependencies:
    with scratch_tree("evalboard-deps", under=cache_dir) as tmp:
        work = Path(tmp)
        resolved = _resolve_set(bundle_dir, work, pip)
        canonical = "".join(f"{n}=={v} sha256:{h}\n" for n, v, h, _ in resolved)
        digest = hashlib.sha256(
            ("evalboard-deps-v1\n" + " ".join(PIP_PLATFORM_FLAGS) + "\n" + canonical).encode()
        ).hexdigest()
        packages = tuple(f"{n}=={v}" for n, v, _, _ in resolved)
        site = cache_dir / digest
        if (site / _COMPLETE).is_file():
            return Dependencies(digest, packages, site, installed_now=False)
        pinned = work / "pinned.txt"
        pinned.write_text(
            "".join(f"{n}=={v} --hash=sha256:{h}\n" for n, v, h, _ in resolved), encoding="utf-8"
        )
        staging = work / "site"
        options = ["--no-deps", "--require-hashes", "--no-warn-script-location"]
        _pip_install(pip, bundle_dir, pinned, staging, options)
        # The sandbox user is not the builder: everything readable, folders enterable.
        for path in [staging, *staging.rglob("*")]:
            path.chmod(0o755 if path.is_dir() or os.access(path, os.X_OK) else 0o644)
        (staging / _COMPLETE).write_text(canonical, encoding="utf-8")
        try:
            staging.rename(site)  # atomic: a concurrent build of the same set wins or loses
        except OSError:
            if not (site / _COMPLETE).is_file():
                shutil.rmtree(site, ignore_errors=True)
                staging.rename(site)
    return Dependencies(digest, packages, site, installed_now=True)
