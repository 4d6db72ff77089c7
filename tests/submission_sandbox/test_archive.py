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


_BUNDLE = [("file", "evalboard.yaml", "name: m\n"), ("file", "handler.py", "")]
#: From the destination tmp_path/x/y/out, with ``l2 -> .``, this really is tmp_path.
_CHAIN = "l2/l2/l2/../../.."


def _make(path: Path, entries: list[tuple[str, str, str]]) -> Path:
    """A .tar.gz or .zip of ("file", name, text) and ("sym" or "hard", name, target)."""
    if path.suffix != ".zip":
        kinds = {"sym": tarfile.SYMTYPE, "hard": tarfile.LNKTYPE}
        return _tar(
            path,
            [
                _file(name, text.encode()) if kind == "file" else _link(name, text, kinds[kind])
                for kind, name, text in entries
            ],
        )
    with zipfile.ZipFile(path, "w") as zf:
        for kind, name, text in entries:
            assert kind != "hard", "zip has no hard links"
            info = zipfile.ZipInfo(name)
            info.external_attr = (0o120777 if kind == "sym" else 0o100644) << 16
            zf.writestr(info, text)
    return path


def _everything_under(root: Path) -> set[str]:
    return {
        os.path.relpath(os.path.join(folder, name), root)
        for folder, folders, files in os.walk(root)
        for name in folders + files
    }


def _assert_refused_leaving_nothing(archive: Path, tmp_path: Path, match: str) -> None:
    dest = tmp_path / "x" / "y" / "out"
    dest.mkdir(parents=True)
    before = _everything_under(tmp_path)
    with pytest.raises(InvalidBundle, match=match):
        unpack_archive(archive, dest)
    assert _everything_under(tmp_path) == before
    assert list(dest.iterdir()) == []


@pytest.mark.parametrize("suffix", [".tar.gz", ".zip"])
@pytest.mark.parametrize(
    ("entries", "match"),
    [
        (
            [("sym", "l2", "."), ("sym", "m", _CHAIN), ("file", "m/escape/proof.txt", "pwned")],
            "m/escape/proof.txt would be written through the link m; refused",
        ),
        ([("sym", "l2", "."), ("sym", "m", _CHAIN)], r"link m -> .* leaves the bundle"),
        ([("sym", "m", _CHAIN), ("sym", "l2", ".")], r"through l2.*refused"),
        (
            [("sym", "a/up", ".."), ("sym", "out", "a/up/.."), ("file", "out/escape/e", "x")],
            "written through the link out",
        ),
        ([("sym", "a/up", ".."), ("sym", "out", "a/up/../..")], "link out -> .* leaves"),
        ([("sym", "a", "b"), ("sym", "b", "a")], "more than 40 links"),
    ],
    ids=["chain-write", "chain-link", "chain-made-later", "write-through", "nested-up", "loop"],
)
def test_links_are_followed_through_each_other_and_nothing_leaves(
    tmp_path: Path, suffix: str, entries: list[tuple[str, str, str]], match: str
) -> None:
    archive = _make(tmp_path / f"b{suffix}", _BUNDLE + entries)
    _assert_refused_leaving_nothing(archive, tmp_path, match)


def test_a_hard_link_is_not_read_through_a_linked_folder(tmp_path: Path) -> None:
    (tmp_path / "secret.txt").write_text("secret")
    entries = [("sym", "l2", "."), ("sym", "m", _CHAIN), ("hard", "copy", "m/secret.txt")]
    archive = _make(tmp_path / "b.tar.gz", _BUNDLE + entries)
    _assert_refused_leaving_nothing(archive, tmp_path, "does not point to an earlier file")


@pytest.mark.parametrize("suffix", [".tar.gz", ".zip"])
@pytest.mark.parametrize(
    "name", ["absolute", "../escape.txt", "a/../../escape.txt", "C:/escape.txt"]
)
def test_absolute_and_dotdot_members_write_nothing_outside(
    tmp_path: Path, suffix: str, name: str
) -> None:
    if name == "absolute":
        name = str(tmp_path / "escape.txt")
    archive = _make(tmp_path / f"b{suffix}", [*_BUNDLE, ("file", name, "pwned")])
    _assert_refused_leaving_nothing(archive, tmp_path, "points outside the bundle; refused")


def test_a_member_appearing_twice_is_refused(tmp_path: Path) -> None:
    archive = _make(tmp_path / "b.tar.gz", [*_BUNDLE, ("file", "a", "1"), ("sym", "a", "b")])
    _assert_refused_leaving_nothing(archive, tmp_path, "a appears twice in the archive")


def test_following_links_is_capped(tmp_path: Path) -> None:
    archive = _make(tmp_path / "b.tar.gz", [("sym", "deep", "a/b/c/d/e/f")])
    with pytest.raises(InvalidBundle, match="more than 5 steps"):
        unpack_archive(archive, tmp_path / "out", caps=ArchiveCaps(max_link_steps=5))


@pytest.mark.parametrize("suffix", [".tar.gz", ".zip"])
def test_links_that_stay_inside_through_other_links_are_kept(tmp_path: Path, suffix: str) -> None:
    entries = [
        ("sym", "model.bin", "current/model.bin"),  # before the file and the link it names
        ("file", "v2/model.bin", "weights"),
        ("sym", "current", "v2"),
        ("sym", "snap/x/config", "../../current/./model.bin"),
    ]
    root = unpack_archive(_make(tmp_path / f"b{suffix}", _BUNDLE + entries), tmp_path / "out")
    assert (root / "model.bin").read_text() == "weights"
    assert (root / "snap" / "x" / "config").read_text() == "weights"
    assert os.readlink(root / "current") == "v2"


def test_a_hard_link_to_an_earlier_file_is_a_copy_with_its_mode(tmp_path: Path) -> None:
    script, data = _file("run.sh", b"echo hi")
    script.mode = 0o755
    archive = _tar(
        tmp_path / "b.tar.gz", [(script, data), _link("again.sh", "run.sh", tarfile.LNKTYPE)]
    )
    root = unpack_archive(archive, tmp_path / "out")
    assert (root / "again.sh").read_bytes() == b"echo hi"
    assert os.access(root / "again.sh", os.X_OK)
