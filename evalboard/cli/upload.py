"""``evalboard model upload``: send a bundle to a server, resumably, with a progress bar.

:func:`upload_bundle` does the work (and is what scripts call): it packs a directory into
a reproducible .tar.gz, announces the file (size and sha256), sends it in chunks at the
offset the server reports, resumes after a dropped connection from what the server has,
and completes the upload, which queues the evaluation.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer
from rich.progress import (
    BarColumn,
    DownloadColumn,
    Progress,
    TextColumn,
    TimeRemainingColumn,
    TransferSpeedColumn,
)

from evalboard.cli._output import console, err_console, print_json
from evalboard.cli._server import SERVER, checked, server_client
from evalboard.core.errors import PlatformError, UsageError
from evalboard.core.scratch import scratch_tree

if TYPE_CHECKING:
    import httpx

    from submission_sandbox import Manifest

__all__ = ["UploadInterrupted", "upload", "upload_bundle"]


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while block := handle.read(1024**2):
            digest.update(block)
    return digest.hexdigest()


def _archive_and_manifest(source: Path, workdir: Path) -> tuple[Path, Manifest]:
    from submission_sandbox import is_archive, load_bundle, package_bundle

    if is_archive(source):
        bundle = load_bundle(source, unpack_to=workdir / "check")
        return source, bundle.manifest
    bundle = load_bundle(source)
    archive, _ = package_bundle(source, workdir / f"{bundle.manifest.name}.tar.gz")
    return archive, bundle.manifest


def _announced(archive: Path, manifest: Manifest, release_of: int | None) -> dict[str, Any]:
    """The upload's announcement; a release named twice must be named alike."""
    if release_of is not None and manifest.release_of not in (None, release_of):
        raise UsageError(
            f"--release-of {release_of} disagrees with the bundle's evalboard.yaml "
            f"(release_of: {manifest.release_of}); make them agree or drop one"
        )
    body: dict[str, Any] = {
        "task": manifest.task,
        "filename": archive.name,
        "size": archive.stat().st_size,
        "sha256": _sha256(archive),
    }
    if release_of is not None:
        body["release_of"] = release_of
    return body


class UploadInterrupted(KeyboardInterrupt):
    """Ctrl-C during an upload the server holds: ``upload_id`` continues it (``--resume``)."""

    def __init__(self, upload_id: str) -> None:
        super().__init__(upload_id)
        self.upload_id = upload_id


def _send(
    client: httpx.Client,
    archive: Path,
    state: dict[str, Any],
    *,
    step: int,
    on_progress: Callable[[int, int], None] | None,
    retries: int,
) -> dict[str, Any]:
    """Send the chunks the server does not hold yet; after a dropped connection or a server
    error, ask what it holds and go on from there, ``retries`` times in a row at most."""
    import httpx

    size = archive.stat().st_size
    failures = 0
    stale = False  # after a failure, what the server holds must be asked before sending
    with archive.open("rb") as handle:
        while stale or state["received"] < size:
            try:
                if stale:
                    state = checked(client.get(f"/uploads/{state['id']}"))
                    stale = False
                    continue
                offset = int(state["received"])
                if on_progress is not None:
                    on_progress(offset, size)
                handle.seek(offset)
                response = client.patch(
                    f"/uploads/{state['id']}",
                    params={"offset": offset},
                    content=handle.read(step),
                    headers={"Content-Type": "application/octet-stream"},
                )
                if response.status_code == 409 or response.status_code >= 500:
                    raise httpx.TransportError(f"server answered {response.status_code}")
                state = checked(response)
                failures = 0
            except httpx.TransportError:
                failures += 1
                if failures > retries:
                    raise
                time.sleep(min(2.0**failures * 0.25, 10))
                stale = True
    return state


def upload_bundle(
    source: Path,
    *,
    server: str,
    token: str,
    on_progress: Callable[[int, int], None] | None = None,
    chunk_size: int | None = None,
    retries: int = 5,
    resume: str | None = None,
    release_of: int | None = None,
    transport: httpx.BaseTransport | None = None,
) -> dict[str, Any]:
    """Upload a bundle directory or archive; returns the new submission's status (JSON).

    Args:
        on_progress: called with (bytes stored on the server, total bytes).
        chunk_size: bytes per request (default: what the server suggests).
        retries: attempts per chunk after a dropped connection or a server error.
        resume: the id of an earlier upload of the same file to continue.
        release_of: the submission id of the model this is a new release of (its lineage).
    """
    import httpx  # here: the CLI's start does without it (--help, usage errors)

    with (
        scratch_tree("evalboard-upload") as tmp,
        server_client(server, token, transport=transport) as client,
    ):
        archive, manifest = _archive_and_manifest(source, Path(tmp))
        size = archive.stat().st_size
        if resume:
            state = checked(client.get(f"/uploads/{resume}"))
        else:
            state = checked(client.post("/uploads", json=_announced(archive, manifest, release_of)))
        step = chunk_size or int(state["chunk_size"])
        try:
            state = _send(
                client, archive, state, step=step, on_progress=on_progress, retries=retries
            )
            if on_progress is not None:
                on_progress(size, size)
            # Completing twice returns the same submission: a resume after this is safe too.
            return checked(client.post(f"/uploads/{state['id']}/complete", timeout=600))
        except httpx.TransportError:
            raise PlatformError(
                f"The connection to {server} kept failing; resume later with --resume {state['id']}"
            ) from None
        except KeyboardInterrupt:
            raise UploadInterrupted(state["id"]) from None


def _upload_showing_progress(
    bundle: Path, server: str, token: str, resume: str | None, release_of: int | None
) -> dict[str, Any]:
    """:func:`upload_bundle`, with a progress bar where stderr is a terminal."""
    if err_console.is_terminal:
        bar = Progress(
            TextColumn("uploading {task.description}"),
            BarColumn(),
            DownloadColumn(),
            TransferSpeedColumn(),
            TimeRemainingColumn(),
            console=err_console,
        )
        with bar:
            task_id = bar.add_task(bundle.name, total=None)
            return upload_bundle(
                bundle,
                server=server,
                token=token,
                resume=resume,
                release_of=release_of,
                on_progress=lambda done, total: bar.update(task_id, completed=done, total=total),
            )
    else:
        return upload_bundle(
            bundle, server=server, token=token, resume=resume, release_of=release_of
        )


def upload(
    bundle: Path = typer.Argument(..., help="Bundle directory, or a .tar.gz/.tgz/.tar/.zip."),
    server: str = SERVER,
    token: str = typer.Option(
        ..., "--token", envvar="EVALBOARD_TOKEN", help="API token (`evalboard token create NAME`)."
    ),
    resume: str | None = typer.Option(None, "--resume", help="Continue an earlier upload."),
    release_of: int | None = typer.Option(
        None,
        "--release-of",
        min=1,
        max=2**31 - 1,
        help="The submission id of the model this is a new release of (your own lineage).",
    ),
    as_json: bool = typer.Option(False, "--json", help="Print the submission as JSON."),
) -> None:
    """Upload a model; its evaluation is queued at once."""
    try:
        status = _upload_showing_progress(bundle, server, token, resume, release_of)
    except UploadInterrupted as stop:
        err_console.print(
            f"Interrupted; the server keeps the upload for a while: continue it with "
            f"`evalboard model upload {bundle} --resume {stop.upload_id}` "
            "(same --server and --token)",
            highlight=False,
            soft_wrap=True,
        )
        raise typer.Exit(130) from None
    if as_json:
        print_json(status)
        return
    url = f"{server.rstrip('/')}/ui/submissions/{status['id']}"
    lineage = (
        f", a new release in lineage {status['lineage']}"
        if status.get("release_of") is not None
        else ""
    )
    console.print(
        f"Submitted [bold]{status['name']}[/bold] to {status['task']} as submission "
        f"{status['id']}{lineage}: {len(status['jobs'])} dataset job(s) queued.\n"
        f"Follow it at {url}",
        highlight=False,
    )
