"""The artifact store: bundles, datasets, predictions and logs on any fsspec filesystem.

Keys are relative paths (``datasets/<sha256>.jsonl``). Writes go to a temporary key and are
renamed into place, so a reader never sees half a file and a crash leaves no partial
artifact behind.
"""

from __future__ import annotations

import errno
import hashlib
import shutil
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path, PurePosixPath
from typing import IO, Any

import fsspec
from fsspec.core import url_to_fs

from evalboard.core.errors import PlatformError

__all__ = ["ArtifactStore"]

_CHUNK = 1024 * 1024
# Faults of the store itself, not of what is written into it.
_STORE_FAULTS = {
    errno.ENOSPC: "its disk is full; free space or move EVALBOARD_ARTIFACTS",
    errno.EDQUOT: "its disk quota is spent; free space or move EVALBOARD_ARTIFACTS",
    errno.EROFS: "it is read-only; make it writable or set EVALBOARD_DATA_DIR",
    errno.EACCES: "this user may not write there; fix its permissions or set EVALBOARD_DATA_DIR",
    errno.EPERM: "this user may not write there; fix its permissions or set EVALBOARD_DATA_DIR",
}


def _store_fault(exc: OSError, where: str) -> PlatformError | None:
    """The :class:`PlatformError` for a full, read-only or forbidden store, else None."""
    why = _STORE_FAULTS.get(exc.errno or 0)
    return PlatformError(f"Cannot write to the artifact store at {where}: {why}") if why else None


class ArtifactStore:
    """A folder of immutable artifacts behind an fsspec URL (a local path by default)."""

    def __init__(self, url: str) -> None:
        self.url = url.rstrip("/")
        self.fs: fsspec.AbstractFileSystem
        self.fs, self.root = url_to_fs(self.url)
        try:
            self.fs.makedirs(self.root, exist_ok=True)
        except OSError as exc:
            fault = _store_fault(exc, self.url)
            if fault is None:
                raise
            raise fault from None

    def _path(self, key: str) -> str:
        if key.startswith("/") or ".." in key.split("/"):
            raise ValueError(f"Artifact key {key!r} must be a relative path without '..'")
        return f"{self.root}/{key}"

    def exists(self, key: str) -> bool:
        return bool(self.fs.exists(self._path(key)))

    def size(self, key: str) -> int:
        return int(self.fs.size(self._path(key)))

    def local_path(self, key: str) -> Path | None:
        """The file's path when the store is on the local disk, else None."""
        if getattr(self.fs, "protocol", None) in ("file", ("file", "local")):
            return Path(self._path(key))
        return None

    def local_file(self, key: str, workdir: Path) -> Path:
        """A local path to read the artifact from: the file itself on a local store, else a
        copy in ``workdir`` (the caller owns that folder)."""
        local = self.local_path(key)
        if local is not None and local.exists():
            return local
        return self.get_file(key, workdir / PurePosixPath(key).name)

    @contextmanager
    def open_write(self, key: str) -> Iterator[IO[bytes]]:
        """Write a whole artifact atomically: it appears under ``key`` only if the block ends.

        A full or read-only store raises :class:`PlatformError`, and nothing is left.
        """
        final = self._path(key)
        tmp = f"{final}.partial-{uuid.uuid4().hex}"
        try:
            self.fs.makedirs(final.rsplit("/", 1)[0], exist_ok=True)
            with self.fs.open(tmp, "wb") as handle:
                yield handle
            self.fs.mv(tmp, final)
        except OSError as exc:
            fault = _store_fault(exc, self.url)
            if fault is None:
                raise
            raise fault from None
        finally:
            if self.fs.exists(tmp):
                self.fs.rm(tmp)

    def put_bytes(self, key: str, data: bytes) -> None:
        with self.open_write(key) as handle:
            handle.write(data)

    def put_file(self, key: str, source: Path) -> str:
        """Copy a local file in; returns its sha256."""
        digest = hashlib.sha256()
        with source.open("rb") as src, self.open_write(key) as dst:
            while chunk := src.read(_CHUNK):
                digest.update(chunk)
                dst.write(chunk)
        return digest.hexdigest()

    def open(self, key: str, mode: str = "rb") -> Any:
        return self.fs.open(self._path(key), mode)

    def read_bytes(self, key: str) -> bytes:
        with self.open(key) as handle:
            data: bytes = handle.read()
            return data

    def get_file(self, key: str, target: Path) -> Path:
        """Copy an artifact to a local file (used before handing it to a sandbox).

        Raises:
            PlatformError: the store has no such artifact (a 503 with what to do, not a
                traceback: the row that names it outlived its file).
        """
        target.parent.mkdir(parents=True, exist_ok=True)
        try:
            src = self.open(key)
        except FileNotFoundError:
            raise PlatformError(
                f"Artifact {key!r} is missing from the artifact store ({self.root}): it was "
                "deleted or never written. An operator must restore it from a backup, or "
                "its owner upload it again"
            ) from None
        with src, target.open("wb") as dst:
            shutil.copyfileobj(src, dst, _CHUNK)
        return target

    def delete(self, key: str) -> None:
        if self.exists(key):
            self.fs.rm(self._path(key))

    def delete_tree(self, key: str) -> None:
        """Delete a folder of artifacts and everything in it."""
        if self.exists(key):
            self.fs.rm(self._path(key), recursive=True)
