"""Safe unpacking of uploaded bundles (.tar.gz, .tgz, .tar, .zip).

An upload is untrusted: every member is checked before a byte is written. Refused are
absolute paths and ``..`` (path traversal), links whose target leaves the bundle, device
files and fifos, more than ``max_files`` members, and more than ``max_bytes`` once
unpacked. Sizes are counted while writing, not taken from headers (which can lie), and a
compression ratio above ``max_ratio`` on a large archive is refused as a decompression
bomb.
"""

from __future__ import annotations

import os
import shutil
import stat
import tarfile
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import IO

from evalboard.core.errors import InvalidBundle

__all__ = ["ARCHIVE_SUFFIXES", "ArchiveCaps", "is_archive", "unpack_archive"]

ARCHIVE_SUFFIXES = (".tar.gz", ".tgz", ".tar", ".zip")
_CHUNK = 1024 * 1024


@dataclass(frozen=True)
class ArchiveCaps:
    """Limits on what an archive may unpack to."""

    max_bytes: int = 8 * 1024**3
    max_files: int = 20_000
    #: Unpacked / packed size above which a large archive is called a bomb.
    max_ratio: float = 200.0
    #: The ratio is only checked past this many unpacked bytes (small text compresses well).
    ratio_floor_bytes: int = 64 * 1024**2


def is_archive(path: Path) -> bool:
    """True for a file whose name says it is a bundle archive (.tar.gz, .tgz, .tar, .zip)."""
    return path.is_file() and path.name.lower().endswith(ARCHIVE_SUFFIXES)


def _safe_relative(name: str, archive: Path) -> PurePosixPath:
    cleaned = name.replace("\\", "/")
    path = PurePosixPath(cleaned)
    if (
        path.is_absolute()
        or cleaned.startswith("/")
        or ".." in path.parts
        or ":" in path.parts[0:1]
    ):
        raise InvalidBundle(f"{archive.name}: member {name!r} points outside the bundle; refused")
    return PurePosixPath(*[part for part in path.parts if part not in ("", ".")])


def _link_stays_inside(member: PurePosixPath, target: str, archive: Path) -> None:
    depth = len(member.parent.parts)
    for part in PurePosixPath(target).parts:
        depth += -1 if part == ".." else (0 if part == "." else 1)
        if depth < 0:
            break
    if target.startswith("/") or depth < 0:
        raise InvalidBundle(f"{archive.name}: link {member} -> {target} leaves the bundle; refused")


class _Budget:
    def __init__(self, archive: Path, caps: ArchiveCaps) -> None:
        self.archive = archive
        self.caps = caps
        self.files = 0
        self.bytes = 0
        self.packed = max(archive.stat().st_size, 1)

    def count_file(self) -> None:
        self.files += 1
        if self.files > self.caps.max_files:
            raise InvalidBundle(
                f"{self.archive.name} has more than {self.caps.max_files} files; "
                "bundle fewer (e.g. one model file instead of many shards)"
            )

    def add(self, size: int) -> None:
        self.bytes += size
        if self.bytes > self.caps.max_bytes:
            raise InvalidBundle(
                f"{self.archive.name} unpacks to more than {self.caps.max_bytes} bytes; refused"
            )
        if (
            self.bytes > self.caps.ratio_floor_bytes
            and self.bytes / self.packed > self.caps.max_ratio
        ):
            raise InvalidBundle(
                f"{self.archive.name} unpacks to over {self.caps.max_ratio:.0f}x its size "
                "(a decompression bomb?); refused"
            )


def _copy_counted(source: IO[bytes], target: Path, budget: _Budget) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    with open(target, "xb") as out:
        while chunk := source.read(_CHUNK):
            budget.add(len(chunk))
            out.write(chunk)


def _tar_members(archive: Path) -> Iterator[tuple[tarfile.TarFile, tarfile.TarInfo]]:
    try:
        with tarfile.open(archive, "r:*") as tar:
            for member in tar:
                yield tar, member
    except (tarfile.TarError, EOFError, OSError) as exc:
        raise InvalidBundle(f"{archive.name} is not a readable tar archive: {exc}") from None


def _unpack_tar(archive: Path, dest: Path, budget: _Budget) -> None:
    for tar, member in _tar_members(archive):
        relative = _safe_relative(member.name, archive)
        if not relative.parts:
            continue
        target = dest.joinpath(*relative.parts)
        budget.count_file()
        if member.isdir():
            target.mkdir(parents=True, exist_ok=True)
        elif member.isfile():
            source = tar.extractfile(member)
            assert source is not None
            _copy_counted(source, target, budget)
            os.chmod(target, 0o755 if member.mode & 0o111 else 0o644)
        elif member.issym():
            _link_stays_inside(relative, member.linkname, archive)
            target.parent.mkdir(parents=True, exist_ok=True)
            os.symlink(member.linkname, target)
        elif member.islnk():
            linked = _safe_relative(member.linkname, archive)
            source_path = dest.joinpath(*linked.parts)
            if not source_path.is_file() or source_path.is_symlink():
                raise InvalidBundle(
                    f"{archive.name}: hard link {relative} -> {member.linkname} does not point "
                    "to an earlier file of the bundle; refused"
                )
            budget.add(source_path.stat().st_size)
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(source_path, target)
        else:
            raise InvalidBundle(
                f"{archive.name}: member {relative} is a device, fifo or other special file; "
                "refused"
            )


def _unpack_zip(archive: Path, dest: Path, budget: _Budget) -> None:
    try:
        zf = zipfile.ZipFile(archive)
    except (zipfile.BadZipFile, OSError) as exc:
        raise InvalidBundle(f"{archive.name} is not a readable zip archive: {exc}") from None
    with zf:
        for info in zf.infolist():
            relative = _safe_relative(info.filename, archive)
            if not relative.parts:
                continue
            target = dest.joinpath(*relative.parts)
            budget.count_file()
            mode = info.external_attr >> 16
            if info.is_dir():
                target.mkdir(parents=True, exist_ok=True)
            elif stat.S_ISLNK(mode):
                link = zf.read(info).decode("utf-8", "replace")
                _link_stays_inside(relative, link, archive)
                target.parent.mkdir(parents=True, exist_ok=True)
                os.symlink(link, target)
            elif stat.S_IFMT(mode) not in (0, stat.S_IFREG):
                raise InvalidBundle(f"{archive.name}: member {relative} is a special file; refused")
            else:
                try:
                    with zf.open(info) as source:
                        _copy_counted(source, target, budget)
                except (zipfile.BadZipFile, OSError) as exc:
                    raise InvalidBundle(f"{archive.name}: member {relative}: {exc}") from None


def unpack_archive(archive: Path, dest: Path, *, caps: ArchiveCaps | None = None) -> Path:
    """Unpack ``archive`` into the empty or new directory ``dest``; returns the bundle root.

    An archive whose members all sit under one top-level folder (``tar -czf b.tgz mybundle``)
    has that folder as its root.

    Raises:
        InvalidBundle: the archive is unsafe or unreadable; nothing is left in ``dest``.
    """
    caps = caps or ArchiveCaps()
    dest.mkdir(parents=True, exist_ok=True)
    if any(dest.iterdir()):
        raise ValueError(f"{dest} is not empty")
    budget = _Budget(archive, caps)
    name = archive.name.lower()
    try:
        if name.endswith(".zip"):
            _unpack_zip(archive, dest, budget)
        elif name.endswith((".tar.gz", ".tgz", ".tar")):
            _unpack_tar(archive, dest, budget)
        else:
            raise InvalidBundle(
                f"{archive.name}: unknown archive type; use one of {', '.join(ARCHIVE_SUFFIXES)}"
            )
    except BaseException:
        shutil.rmtree(dest, ignore_errors=True)
        dest.mkdir(parents=True, exist_ok=True)
        raise
    entries = [entry for entry in dest.iterdir() if entry.name not in ("__MACOSX",)]
    if len(entries) == 1 and entries[0].is_dir() and not entries[0].is_symlink():
        return entries[0]
    return dest
