from __future__ import annotations

import io
import os
import tarfile
import zipfile
from pathlib import Path

import pytest

from evalboard.core.errors import InvalidBundle
from submission_sandbox.archive import ArchiveCaps, unpack_archive


def _tar(path: Path, members: list[tuple[tarfile.TarInfo, bytes | None]]) -> Path:
    with tarfile.open(path, "w:gz") as tar:
        for info, data in members:
            if data is not None:
                info.size = len(data)
            tar.addfile(info, io.BytesIO(data) if data is not None else None)
    return path


def _file(name: str, data: bytes = b"x") -> tuple[tarfile.TarInfo, bytes]:
    return tarfile.TarInfo(name), data


def _link(name: str, target: str, kind: bytes = tarfile.SYMTYPE) -> tuple[tarfile.TarInfo, None]:
    info = tarfile.TarInfo(name)
    info.type = kind
    info.linkname = target
    return info, None


def test_a_tarball_unpacks_and_its_single_top_folder_is_the_root(tmp_path: Path) -> None:
    archive = _tar(tmp_path / "b.tar.gz", [_file("bundle/evalboard.yaml"), _file("bundle/a.py")])
    root = unpack_archive(archive, tmp_path / "out")
    assert root == tmp_path / "out" / "bundle"
    assert sorted(p.name for p in root.iterdir()) == ["a.py", "evalboard.yaml"]


@pytest.mark.parametrize(
    "member",
    [
        _file("../evil.py"),
        _file("/etc/evil"),
        _file("a/../../evil"),
        _link("link", "/etc/passwd"),
        _link("a/link", "../../outside"),
        _link("hard", "/etc/passwd", tarfile.LNKTYPE),
    ],
    ids=["dotdot", "absolute", "nested-dotdot", "symlink-absolute", "symlink-up", "hardlink-out"],
)
def test_members_leaving_the_bundle_are_refused_and_nothing_is_kept(
    tmp_path: Path, member: tuple[tarfile.TarInfo, bytes | None]
) -> None:
    archive = _tar(tmp_path / "b.tar.gz", [_file("ok.txt"), member])
    with pytest.raises(InvalidBundle, match="refused"):
        unpack_archive(archive, tmp_path / "out")
    assert list((tmp_path / "out").iterdir()) == []
    assert not (tmp_path / "evil.py").exists()


def test_a_link_inside_the_bundle_is_kept(tmp_path: Path) -> None:
    archive = _tar(
        tmp_path / "b.tgz", [_file("data/real.txt", b"hi"), _link("alias", "data/real.txt")]
    )
    root = unpack_archive(archive, tmp_path / "out")
    assert (root / "alias").read_bytes() == b"hi"


def test_device_files_are_refused(tmp_path: Path) -> None:
    info = tarfile.TarInfo("dev")
    info.type = tarfile.CHRTYPE
    archive = _tar(tmp_path / "b.tar.gz", [(info, None)])
    with pytest.raises(InvalidBundle, match="special file"):
        unpack_archive(archive, tmp_path / "out")


def test_too_many_files_are_refused(tmp_path: Path) -> None:
    archive = _tar(tmp_path / "b.tar.gz", [_file(f"f{i}") for i in range(11)])
    with pytest.raises(InvalidBundle, match="more than 10 files"):
        unpack_archive(archive, tmp_path / "out", caps=ArchiveCaps(max_files=10))


def test_a_decompression_bomb_is_refused_while_unpacking(tmp_path: Path) -> None:
    archive = _tar(tmp_path / "bomb.tar.gz", [_file("zeros", bytes(8 * 1024**2))])
    assert archive.stat().st_size < 100_000
    caps = ArchiveCaps(max_ratio=50, ratio_floor_bytes=1024**2)
    with pytest.raises(InvalidBundle, match="decompression bomb"):
        unpack_archive(archive, tmp_path / "out", caps=caps)
    with pytest.raises(InvalidBundle, match="unpacks to more than"):
        unpack_archive(archive, tmp_path / "out2", caps=ArchiveCaps(max_bytes=1024**2))


def test_a_zip_is_capped_by_the_bytes_it_writes(tmp_path: Path) -> None:
    path = tmp_path / "b.zip"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("zeros", bytes(4 * 1024**2))
    with pytest.raises(InvalidBundle, match="unpacks to more than"):
        unpack_archive(path, tmp_path / "out", caps=ArchiveCaps(max_bytes=1024**2))


@pytest.mark.parametrize("name", ["../evil", "/abs/evil"])
def test_zip_traversal_is_refused(tmp_path: Path, name: str) -> None:
    path = tmp_path / "b.zip"
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr(zipfile.ZipInfo(name), b"x")
    with pytest.raises(InvalidBundle, match="outside the bundle"):
        unpack_archive(path, tmp_path / "out")


def test_a_zip_symlink_out_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "b.zip"
    info = zipfile.ZipInfo("link")
    info.external_attr = 0o120777 << 16
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr(info, "/etc/passwd")
    with pytest.raises(InvalidBundle, match="leaves the bundle"):
        unpack_archive(path, tmp_path / "out")
    assert not os.path.lexists(tmp_path / "out" / "link")


def test_garbage_is_not_an_archive(tmp_path: Path) -> None:
    path = tmp_path / "b.tar.gz"
    path.write_bytes(b"not an archive at all")
    with pytest.raises(InvalidBundle, match="not a readable tar"):
        unpack_archive(path, tmp_path / "out")
