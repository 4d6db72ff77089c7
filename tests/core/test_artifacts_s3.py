"""The artifact store on a real S3-compatible server (moto's server mode, started here):
what the local store does, and a writer killed mid-upload leaves no object visible."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from evalboard.core.artifacts import ArtifactStore
from evalboard.core.errors import PlatformError

BUCKET = "evalboard-test"


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@dataclass
class S3Server:
    """A moto server of this test's: ``url`` is an empty bucket's prefix on it."""

    url: str
    process: subprocess.Popen[bytes]


@pytest.fixture
def s3_url(s3_server: S3Server) -> str:
    return s3_server.url


@pytest.fixture
def s3_server(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[S3Server]:
    """An empty bucket on a moto server of our own; the store finds it as an operator's
    worker would, through the standard AWS variables."""
    pytest.importorskip("s3fs")
    moto_server = Path(sys.executable).parent / "moto_server"
    if not moto_server.exists():
        pytest.skip("moto[server] is not installed (the dev extra has it)")
    port = _free_port()
    log = (tmp_path / "moto.log").open("wb")
    server = subprocess.Popen(
        [str(moto_server), "-H", "127.0.0.1", "-p", str(port)], stdout=log, stderr=log
    )
    endpoint = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                urllib.request.urlopen(f"{endpoint}/moto-api/", timeout=1).close()
                break
            except OSError:
                assert server.poll() is None and time.monotonic() < deadline, "moto did not start"
                time.sleep(0.1)
        for name, value in {
            "AWS_ACCESS_KEY_ID": "testing",
            "AWS_SECRET_ACCESS_KEY": "testing",
            "AWS_DEFAULT_REGION": "us-east-1",
            "AWS_ENDPOINT_URL": endpoint,
        }.items():
            monkeypatch.setenv(name, value)
        import s3fs

        s3fs.S3FileSystem.clear_instance_cache()  # one cached per arguments, not endpoint
        s3fs.S3FileSystem().mkdir(BUCKET)
        yield S3Server(f"s3://{BUCKET}/artifacts", server)
    finally:
        if server.poll() is None:
            server.terminate()
        server.wait(10)
        log.close()


def _objects() -> list[str]:
    import s3fs

    fs = s3fs.S3FileSystem(skip_instance_cache=True)
    return sorted(str(path) for path in fs.find(BUCKET))


def test_the_store_round_trips_on_s3(s3_url: str, tmp_path: Path) -> None:
    store = ArtifactStore(s3_url)
    assert not store.exists("bundles/a.tar.gz")
    store.put_bytes("predictions/1/job-1.jsonl", b'{"uid": "1"}\n')
    assert store.read_bytes("predictions/1/job-1.jsonl") == b'{"uid": "1"}\n'
    source = tmp_path / "bundle.tar.gz"
    source.write_bytes(os.urandom(3 * 1024 * 1024))
    digest = store.put_file("bundles/a.tar.gz", source)
    assert len(digest) == 64 and store.size("bundles/a.tar.gz") == source.stat().st_size
    assert store.local_path("bundles/a.tar.gz") is None  # not on this disk: copied
    copy = store.local_file("bundles/a.tar.gz", tmp_path / "work")
    assert copy.read_bytes() == source.read_bytes()
    assert _objects() == [
        f"{BUCKET}/artifacts/bundles/a.tar.gz",
        f"{BUCKET}/artifacts/predictions/1/job-1.jsonl",
    ]  # no temporary key left behind
    store.delete("bundles/a.tar.gz")
    assert not store.exists("bundles/a.tar.gz")


@pytest.mark.parametrize("where", ["local", "s3"])
def test_a_missing_artifact_is_a_platform_error_that_says_what_to_do(
    where: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    """A row that outlived its file (a bundle deleted by hand): a 503 that names the key,
    never a FileNotFoundError's 500."""
    url = request.getfixturevalue("s3_url") if where == "s3" else str(tmp_path / "store")
    store = ArtifactStore(url)
    with pytest.raises(PlatformError, match="'bundles/gone.tar.gz' is missing.*restore it"):
        store.local_file("bundles/gone.tar.gz", tmp_path / "work")


_KILLED_MID_UPLOAD = """
import os, signal, sys
from evalboard.core.artifacts import ArtifactStore

store = ArtifactStore(sys.argv[1])
with store.open_write("bundles/big.tar.gz") as handle:
    chunk = os.urandom(1024 * 1024)
    for _ in range(int(sys.argv[2])):
        handle.write(chunk)
        handle.flush()
    print("written", flush=True)
    os.kill(os.getpid(), signal.SIGKILL)  # the worker dies before the upload completes
"""


def test_a_writer_killed_mid_upload_leaves_no_object_visible(s3_url: str) -> None:
    # s3fs sends a multipart upload in 50 MiB parts: 60 MiB puts one part on the server
    # before the kill, so an incomplete upload exists there and must stay invisible.
    child = subprocess.run(
        [sys.executable, "-c", _KILLED_MID_UPLOAD, s3_url, "60"],
        capture_output=True,
        timeout=300,
        env=os.environ.copy(),
    )
    assert child.returncode == -9, child.stderr.decode()[-2000:]
    assert b"written" in child.stdout
    store = ArtifactStore(s3_url)
    assert not store.exists("bundles/big.tar.gz")
    assert _objects() == []  # neither the key nor its temporary name is visible
    import boto3

    client = boto3.client("s3")
    uploads = client.list_multipart_uploads(Bucket=BUCKET).get("Uploads", [])
    assert len(uploads) == 1  # the kill did land mid-upload: one part sent, never completed
    assert ".partial-" in uploads[0]["Key"]
