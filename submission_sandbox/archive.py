"""Safe unpacking of uploaded bundles (.tar.gz, .tgz, .tar, .zip).

An upload is untrusted: every member is checked before a byte is written. Refused are
absolute paths and ``..`` (path traversal), links whose target leaves the bundle, device
files and fifos, more than ``max_files`` members, and more than ``max_bytes`` once
unpacked. Sizes are counted while writing, not taken from headers (which can lie), and a
compression ratio above ``max_ratio`` on a large archive is refused as a decompression
bomb.

Links are where unpackers go wrong: a link's target text may look harmless on its own and
still leave the bundle through another link (``l2 -> .``, ``m -> l2/l2/../..``). So
nothing is ever written or read through a link: files, folders and hard links are
unpacked first, through real folders only, and symbolic links are made last. Each is then
followed, through the links beside it, on the unpacked tree itself, and the whole archive
is refused if one leaves the bundle. A member stored under a link's path (``m/x`` beside
``m -> ...``) is refused; archivers never write one.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import stat
import tarfile
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path, PurePosixPath, PureWindowsPath
from typing import IO

from evalboard.core.errors import InvalidBundle

__all__ = ["ARCHIVE_SUFFIXES", "ArchiveCaps", "is_archive", "unpack_archive"]

ARCHIVE_SUFFIXES = (".tar.gz", ".tgz", ".tar", ".zip")
_CHUNK = 1024 * 1024
#: Linux's own limits: links followed in one path lookup, and a link target's length.
_MAX_LINK_HOPS = 40
_MAX_TARGET = 4095
_NOFOLLOW: int = getattr(os, "O_NOFOLLOW", 0)  # absent on Windows
_LINK_FIX = "keep links relative and inside the bundle, or archive the files themselves"


@dataclass(frozen=True)
class ArchiveCaps:
    """Limits on what an archive may unpack to."""

    max_bytes: int = 8 * 1024**3
    max_files: int = 20_000
    #: Unpacked / packed size above which a large archive is called a bomb.
    max_ratio: float = 200.0
    #: The ratio is only checked past this many unpacked bytes (small text compresses well).
    ratio_floor_bytes: int = 64 * 1024**2
    #: Path components looked at while following the bundle's links, all links together.
    max_link_steps: int = 1_000_000


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
        or PureWindowsPath(cleaned).drive  # C:/x unpacks outside on Windows
    ):
        raise InvalidBundle(f"{archive.name}: member {name!r} points outside the bundle; refused")
    return PurePosixPath(*[part for part in path.parts if part not in ("", ".")])


class _Budget:
    def __init__(self, archive: Path, caps: ArchiveCaps) -> None:
        self.archive = archive
        self.caps = caps
        self.files = 0
        self.bytes = 0
        self.link_steps = 0
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

    def count_link_step(self) -> None:
        self.link_steps += 1
        if self.link_steps > self.caps.max_link_steps:
            raise InvalidBundle(
                f"{self.archive.name}: its links take more than {self.caps.max_link_steps} "
                "steps to follow; refused: use fewer or shorter links"
            )


class _Tree:
    """The destination, written through real folders only; its links are made last."""

    def __init__(self, archive: Path, dest: Path, budget: _Budget) -> None:
        self.archive = archive
        self.dest = dest
        self.budget = budget
        self.files: set[PurePosixPath] = set()
        self.links: dict[PurePosixPath, str] = {}

    def _refuse(self, why: str) -> InvalidBundle:
        return InvalidBundle(f"{self.archive.name}: {why}")

    def folder(self, relative: PurePosixPath, *, member: PurePosixPath) -> Path:
        """Makes ``relative`` and its parents, refusing to pass through a link or a file."""
        path = self.dest
        for depth, part in enumerate(relative.parts, start=1):
            path = path / part
            prefix = PurePosixPath(*relative.parts[:depth])
            if prefix not in self.links:
                with contextlib.suppress(FileExistsError):
                    os.mkdir(path)
            if prefix in self.links or os.path.islink(path):
                raise self._refuse(
                    f"{member} would be written through the link {prefix}; refused: "
                    "archive each file at its real path, not under a link"
                )
            if not os.path.isdir(path):
                raise self._refuse(f"{member} sits under {prefix}, which is a file; refused")
        return path

    def _twice(self, member: PurePosixPath) -> InvalidBundle:
        return self._refuse(f"{member} appears twice in the archive; refused: keep one")

    def write(self, member: PurePosixPath, source: IO[bytes], *, mode: int | None) -> None:
        """Writes a new regular file, counting its bytes; ``mode`` None keeps the default."""
        if member in self.links:
            raise self._twice(member)
        path = self.folder(member.parent, member=member) / member.name
        try:
            handle = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW, 0o644)
        except FileExistsError:
            raise self._twice(member) from None
        with open(handle, "wb") as out:
            while chunk := source.read(_CHUNK):
                self.budget.add(len(chunk))
                out.write(chunk)
        if mode is not None:
            os.chmod(path, mode)
        self.files.add(member)

    def copy(self, member: PurePosixPath, linked: PurePosixPath) -> None:
        """A hard link, unpacked as a copy of an earlier file (read without following links)."""
        if linked not in self.files:
            raise self._refuse(
                f"hard link {member} -> {linked} does not point to an earlier file of the "
                "bundle; refused"
            )
        source = self.dest.joinpath(*linked.parts)
        with open(os.open(source, os.O_RDONLY | _NOFOLLOW), "rb") as handle:
            self.write(member, handle, mode=stat.S_IMODE(os.fstat(handle.fileno()).st_mode))

    def add_link(self, member: PurePosixPath, target: str) -> None:
        """Keeps a symbolic link to make once every file is written."""
        if member in self.links or member in self.files:
            raise self._twice(member)
        if not 0 < len(os.fsencode(target)) <= _MAX_TARGET or "\0" in target:
            raise self._refuse(
                f"link {member}: a target must be 1 to {_MAX_TARGET} bytes, without NUL; refused"
            )
        if target.startswith("/"):
            raise self._refuse(f"link {member} -> {target} leaves the bundle; refused: {_LINK_FIX}")
        self.links[member] = target

    def make_links(self) -> None:
        """Makes every link, then refuses the archive if one leaves ``dest`` when followed."""
        for member, target in self.links.items():
            path = self.folder(member.parent, member=member) / member.name
            try:
                os.symlink(target, path)
            except FileExistsError:
                raise self._refuse(
                    f"link {member} is also a file or folder of the archive; refused: keep one"
                ) from None
            except OSError as exc:
                raise self._refuse(f"link {member} cannot be made ({exc}); refused") from None
        for member, target in self.links.items():
            self._follow(member, target)

    def _follow(self, link: PurePosixPath, target: str) -> None:
        """Resolves ``link`` step by step, as the OS would, through the links on disk."""
        where = list(link.parent.parts)
        pending = list(reversed(target.split("/")))
        followed: list[str] = []
        while pending:
            part = pending.pop()
            self.budget.count_link_step()
            if part in ("", "."):
                continue
            if part == "..":
                if not where:
                    through = f" (through {', '.join(dict.fromkeys(followed))})" if followed else ""
                    raise self._refuse(
                        f"link {link} -> {target} leaves the bundle{through}; refused: {_LINK_FIX}"
                    )
                where.pop()
                continue
            where.append(part)
            path = self.dest.joinpath(*where)
            try:
                mode = os.lstat(path).st_mode
            except (FileNotFoundError, NotADirectoryError):
                continue  # nothing there, nor below: the rest resolves by name alone
            except OSError as exc:
                raise self._refuse(
                    f"link {link} -> {target} cannot be followed ({exc}); refused"
                ) from None
            if not stat.S_ISLNK(mode):
                continue
            followed.append("/".join(where))
            if len(followed) > _MAX_LINK_HOPS:
                raise self._refuse(
                    f"link {link} -> {target} goes through more than {_MAX_LINK_HOPS} links "
                    "(a loop?); refused"
                )
            inner = os.readlink(path)
            if inner.startswith("/"):
                raise self._refuse(
                    f"link {link} -> {target} leaves the bundle through {followed[-1]}; "
                    f"refused: {_LINK_FIX}"
                )
            where.pop()
            pending.extend(reversed(inner.split("/")))


def _tar_members(archive: Path) -> Iterator[tuple[tarfile.TarFile, tarfile.TarInfo]]:
    try:
        with tarfile.open(archive, "r:*") as tar:
            for member in tar:
                yield tar, member
    except (tarfile.TarError, EOFError, OSError) as exc:
        raise InvalidBundle(f"{archive.name} is not a readable tar archive: {exc}") from None


def _unpack_tar(archive: Path, tree: _Tree) -> None:
    for tar, member in _tar_members(archive):
        relative = _safe_relative(member.name, archive)
        if not relative.parts:
            continue
        tree.budget.count_file()
        if member.isdir():
            tree.folder(relative, member=relative)
        elif member.isfile():
            source = tar.extractfile(member)
            assert source is not None
            tree.write(relative, source, mode=0o755 if member.mode & 0o111 else 0o644)
        elif member.issym():
            tree.add_link(relative, member.linkname)
        elif member.islnk():
            tree.copy(relative, _safe_relative(member.linkname, archive))
        else:
            raise InvalidBundle(
                f"{archive.name}: member {relative} is a device, fifo or other special file; "
                "refused"
            )


def _unpack_zip(archive: Path, tree: _Tree) -> None:
    try:
        zf = zipfile.ZipFile(archive)
    except (zipfile.BadZipFile, OSError) as exc:
        raise InvalidBundle(f"{archive.name} is not a readable zip archive: {exc}") from None
    with zf:
        for info in zf.infolist():
            relative = _safe_relative(info.filename, archive)
            if not relative.parts:
                continue
            tree.budget.count_file()
            mode = info.external_attr >> 16
            if info.is_dir():
                tree.folder(relative, member=relative)
                continue
            if stat.S_IFMT(mode) not in (0, stat.S_IFREG, stat.S_IFLNK):
                raise InvalidBundle(f"{archive.name}: member {relative} is a special file; refused")
            try:
                with zf.open(info) as source:
                    if stat.S_ISLNK(mode):
                        target = source.read(_MAX_TARGET + 1)
                        tree.add_link(relative, target.decode("utf-8", "replace"))
                    else:
                        tree.write(relative, source, mode=None)
            except (zipfile.BadZipFile, OSError) as exc:
                raise InvalidBundle(f"{archive.name}: member {relative}: {exc}") from None


def unpack_archive(archive: Path, dest: Path, *, caps: ArchiveCaps | None = None) -> Path:
    """Unpack ``archive`` into the empty or new directory ``dest``; returns the bundle root.

    An archive whose members all sit under one top-level folder (``tar -czf b.tgz mybundle``)
    has that folder as its root.

    Raises:
        InvalidBundle: the archive is unsafe or unreadable; nothing is left in ``dest``, and
            nothing was written outside it.
    """
    caps = caps or ArchiveCaps()
    dest.mkdir(parents=True, exist_ok=True)
    if any(dest.iterdir()):
        raise ValueError(f"{dest} is not empty")
    tree = _Tree(archive, dest, _Budget(archive, caps))
    name = archive.name.lower()
    try:
        if name.endswith(".zip"):
            _unpack_zip(archive, tree)
        elif name.endswith((".tar.gz", ".tgz", ".tar")):
            _unpack_tar(archive, tree)
        else:
            raise InvalidBundle(
                f"{archive.name}: unknown archive type; use one of {', '.join(ARCHIVE_SUFFIXES)}"
            )
        tree.make_links()
    except BaseException:
        shutil.rmtree(dest, ignore_errors=True)  # removes links, never follows them
        dest.mkdir(parents=True, exist_ok=True)
        raise
    entries = [entry for entry in dest.iterdir() if entry.name not in ("__MACOSX",)]
    if len(entries) == 1 and entries[0].is_dir() and not entries[0].is_symlink():
        return entries[0]
    return dest
