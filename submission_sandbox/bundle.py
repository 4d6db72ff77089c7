"""Model bundles: a directory (or archive of one) with ``evalboard.yaml``.

The bundle's sha256 is canonical over its files: the sorted relative paths, each with
its executable bit and the sha256 of its content, so a directory and any archive of it
have the same digest, whatever the archive's order, timestamps or owners. Caches
(``__pycache__``, ``*.pyc``), ``.git`` and editor droppings never count and are never
shipped.
"""

from __future__ import annotations

import gzip
import hashlib
import os
import tarfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from evalboard.core.errors import InvalidBundle, UsageError
from evalboard.core.whole_files import written_whole
from submission_sandbox.archive import ArchiveCaps, is_archive, unpack_archive
from submission_sandbox.manifest import Manifest, Runtime, load_manifest

__all__ = ["Bundle", "bundle_digest", "iter_bundle_files", "load_bundle", "package_bundle"]

_IGNORED_DIRS = {"__pycache__", ".git", ".hg", ".svn", ".mypy_cache", ".pytest_cache", ".venv"}
_IGNORED_FILES = {".DS_Store", "Thumbs.db"}
_PACKAGE_SUFFIXES = (".tar.gz", ".tgz")  # package_bundle writes a gzip tarball


@dataclass(frozen=True)
class Bundle:
    """An unpacked, validated bundle."""

    path: Path
    manifest: Manifest
    sha256: str

    @property
    def short_digest(self) -> str:
        return self.sha256[:16]


def iter_bundle_files(root: Path) -> Iterator[tuple[PurePosixPath, Path]]:
    """(relative posix path, absolute path) of every shipped file, sorted; links followed
    only when they stay inside the bundle."""
    root = root.resolve()
    found: list[tuple[PurePosixPath, Path]] = []
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        dirnames[:] = sorted(d for d in dirnames if d not in _IGNORED_DIRS)
        here = Path(dirpath)
        for name in list(dirnames):
            if (here / name).is_symlink():
                dirnames.remove(name)
                filenames.append(name)
        for name in filenames:
            if name in _IGNORED_FILES or name.endswith((".pyc", ".pyo")):
                continue
            path = here / name
            real = path.resolve()
            if not real.is_relative_to(root):
                raise InvalidBundle(
                    f"{path.relative_to(root)} links to {real}, outside the bundle; copy the "
                    "file in instead"
                )
            relative = PurePosixPath(path.relative_to(root).as_posix())
            if real.is_dir():
                found.extend(
                    (relative / inner.relative_to(real).as_posix(), inner)
                    for inner in sorted(real.rglob("*"))
                    if inner.is_file()
                )
                continue
            if not real.is_file():
                raise InvalidBundle(f"{path.relative_to(root)} is not a regular file; remove it")
            found.append((relative, real))
    yield from sorted(found, key=lambda item: str(item[0]))


def _file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while chunk := handle.read(1024 * 1024):
            digest.update(chunk)
    return digest.hexdigest()


def bundle_digest(root: Path) -> str:
    """The canonical sha256 of a bundle directory (see the module docstring)."""
    digest = hashlib.sha256(b"evalboard-bundle-v1\n")
    for relative, path in iter_bundle_files(root):
        executable = "x" if os.access(path, os.X_OK) else "-"
        digest.update(f"{relative}\0{executable}\0{_file_sha256(path)}\n".encode())
    return digest.hexdigest()


def _check_references(root: Path, manifest: Manifest) -> None:
    if manifest.runtime is Runtime.PYTHON:
        assert manifest.entry is not None
        module = manifest.entry.partition(":")[0].replace(".", "/")
        if not (root / f"{module}.py").is_file() and not (root / module / "__init__.py").is_file():
            raise InvalidBundle(
                f"entry {manifest.entry!r}: no {module}.py (or {module}/__init__.py) in the bundle"
            )
        return
    if manifest.runtime is Runtime.ONNX:
        assert manifest.model is not None
        if not (root / manifest.model).is_file():
            raise InvalidBundle(f"model {manifest.model!r}: no such file in the bundle")
        return
    if manifest.runtime is Runtime.TRANSFORMERS:
        assert manifest.model is not None
        if not (root / manifest.model / "config.json").is_file():
            raise InvalidBundle(
                f"model {manifest.model!r}: not a saved transformers model (no config.json); "
                "save it with model.save_pretrained(DIR) and tokenizer.save_pretrained(DIR)"
            )
        return
    assert manifest.image is not None
    image = root / manifest.image
    if not image.is_file() or not tarfile.is_tarfile(image):
        raise InvalidBundle(
            f"image {manifest.image!r}: not a `docker save` tarball in the bundle "
            "(make one with `docker save IMAGE -o image.tar`)"
        )


def load_bundle(
    source: Path, *, unpack_to: Path | None = None, caps: ArchiveCaps | None = None
) -> Bundle:
    """Validate a bundle directory, or safely unpack an archive into ``unpack_to`` first.

    Raises:
        InvalidBundle: the manifest, a referenced file or the archive is not usable.
    """
    if not source.exists():
        raise InvalidBundle(f"{source} does not exist")
    if is_archive(source):
        if unpack_to is None:
            raise ValueError("an archive needs unpack_to, an empty directory")
        root = unpack_archive(source, unpack_to, caps=caps)
    elif source.is_dir():
        root = source
    else:
        raise InvalidBundle(
            f"{source} is neither a bundle directory nor a .tar.gz/.tgz/.tar/.zip archive"
        )
    root = root.resolve()
    manifest = load_manifest(root)
    _check_references(root, manifest)
    return Bundle(path=root, manifest=manifest, sha256=bundle_digest(root))


def package_bundle(source: Path, output: Path | None = None) -> tuple[Path, str]:
    """Write ``source`` (a bundle directory) as a reproducible .tar.gz; returns (path, sha256).

    The sha256 returned is the bundle's canonical digest (the one the server records), not
    the archive file's. The archive appears whole or not at all.

    Raises:
        InvalidBundle: the bundle does not validate, or ``output`` lies inside it.
        UsageError: ``output`` is not named .tar.gz/.tgz, or cannot be written.
    """
    if output is not None and output.is_dir():
        raise UsageError(f"{output} is a directory; name the archive, e.g. {output}/model.tar.gz")
    if output is not None and not output.name.endswith(_PACKAGE_SUFFIXES):
        raise UsageError(
            f"{output}: the archive written is a gzip tarball; name it .tar.gz or .tgz "
            f"(e.g. {output.with_name(output.name.partition('.')[0] or 'model')}.tar.gz)"
        )
    bundle = load_bundle(source)
    output = output or source.resolve().parent / f"{bundle.manifest.name}.tar.gz"
    if output.resolve().is_relative_to(bundle.path):
        raise InvalidBundle(f"write the archive outside the bundle, not to {output}")
    with written_whole(output, fix="choose a writable path ending .tar.gz") as partial:
        _write_archive(bundle.path, partial)
    return output, bundle.sha256


def _write_archive(root: Path, output: Path) -> None:
    # gzip by hand: tarfile's "w:gz" writes the file name and time into the gzip header.
    with (
        open(output, "wb") as raw,
        gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0) as zipped,
        tarfile.open(fileobj=zipped, mode="w", format=tarfile.PAX_FORMAT) as tar,
    ):
        for relative, path in iter_bundle_files(root):
            info = tarfile.TarInfo(str(relative))
            info.size = path.stat().st_size
            info.mode = 0o755 if os.access(path, os.X_OK) else 0o644
            info.mtime = 0
            info.uname = info.gname = ""
            with open(path, "rb") as handle:
                tar.addfile(info, handle)
