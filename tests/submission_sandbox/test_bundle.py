from __future__ import annotations

import os
import tarfile
import zipfile
from pathlib import Path

import pytest

from evalboard.core.errors import InvalidBundle
from submission_sandbox.bundle import bundle_digest, load_bundle, package_bundle

MANIFEST = "name: echo\ntask: sentiment\nruntime: python\nentry: handler:Model\n"


def _bundle(root: Path) -> Path:
    root.mkdir(parents=True)
    (root / "evalboard.yaml").write_text(MANIFEST)
    (root / "handler.py").write_text("class Model:\n    pass\n")
    (root / "weights").mkdir()
    (root / "weights" / "w.bin").write_bytes(b"\x00\x01")
    return root


def test_the_digest_ignores_caches_and_timestamps(tmp_path: Path) -> None:
    root = _bundle(tmp_path / "b")
    before = bundle_digest(root)
    (root / "__pycache__").mkdir()
    (root / "__pycache__" / "handler.cpython-311.pyc").write_bytes(b"junk")
    os.utime(root / "handler.py", (1, 1))
    assert bundle_digest(root) == before


def test_the_digest_changes_with_content_names_and_the_executable_bit(tmp_path: Path) -> None:
    root = _bundle(tmp_path / "b")
    seen = {bundle_digest(root)}
    (root / "weights" / "w.bin").write_bytes(b"\x00\x02")
    seen.add(bundle_digest(root))
    (root / "weights" / "w.bin").rename(root / "weights" / "v.bin")
    seen.add(bundle_digest(root))
    os.chmod(root / "handler.py", 0o755)
    seen.add(bundle_digest(root))
    assert len(seen) == 4


def test_a_package_has_the_same_digest_as_its_directory_once_unpacked(tmp_path: Path) -> None:
    root = _bundle(tmp_path / "b")
    archive, digest = package_bundle(root, tmp_path / "echo.tar.gz")
    assert digest == bundle_digest(root)
    unpacked = load_bundle(archive, unpack_to=tmp_path / "unpacked")
    assert unpacked.sha256 == digest
    assert unpacked.manifest.name == "echo"
    again, _ = package_bundle(root, tmp_path / "again.tar.gz")
    assert again.read_bytes() == archive.read_bytes(), "packaging is reproducible"


def test_a_zip_bundle_loads(tmp_path: Path) -> None:
    root = _bundle(tmp_path / "b")
    with zipfile.ZipFile(tmp_path / "b.zip", "w") as zf:
        for path in root.rglob("*"):
            if path.is_file():
                zf.write(path, path.relative_to(root))
    assert load_bundle(tmp_path / "b.zip", unpack_to=tmp_path / "u").sha256 == bundle_digest(root)


@pytest.mark.parametrize(
    ("manifest", "message"),
    [
        ("runtime: python\nentry: missing:Model\n", "no missing.py"),
        ("runtime: onnx\nmodel: m.onnx\nlabels: [a, b]\n", "no such file"),
        ("runtime: transformers\nmodel: weights\n", "no config.json"),
        ("runtime: image\nimage: handler.py\n", "docker save"),
    ],
)
def test_files_the_manifest_names_must_exist(tmp_path: Path, manifest: str, message: str) -> None:
    root = _bundle(tmp_path / "b")
    (root / "evalboard.yaml").write_text("name: echo\ntask: sentiment\n" + manifest)
    with pytest.raises(InvalidBundle, match=message):
        load_bundle(root)


def test_a_link_out_of_a_directory_bundle_is_refused(tmp_path: Path) -> None:
    root = _bundle(tmp_path / "b")
    (root / "secret").symlink_to("/etc/hostname")
    with pytest.raises(InvalidBundle, match="outside the bundle"):
        load_bundle(root)


def test_the_package_is_written_outside_the_bundle(tmp_path: Path) -> None:
    root = _bundle(tmp_path / "b")
    with pytest.raises(InvalidBundle, match="outside the bundle"):
        package_bundle(root, root / "self.tar.gz")
    archive, _ = package_bundle(root)
    assert archive == tmp_path / "echo.tar.gz"
    with tarfile.open(archive) as tar:
        assert sorted(tar.getnames()) == ["evalboard.yaml", "handler.py", "weights/w.bin"]
