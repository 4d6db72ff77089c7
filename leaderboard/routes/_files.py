"""Files across HTTP: a download the browser saves, an uploaded file of rows read from disk."""

from __future__ import annotations

import re
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from fastapi import Response
from starlette.datastructures import UploadFile

from evalboard.core.scratch import scratch_tree

__all__ = ["attachment", "received_file"]


def attachment(body: str | bytes, media_type: str, filename: str) -> Response:
    headers = {"Content-Disposition": f'attachment; filename="{filename}"'}
    return Response(body, media_type=media_type, headers=headers)


@contextmanager
def received_file(upload: UploadFile, stem: str, plain: re.Pattern[str]) -> Iterator[Path]:
    """The uploaded file, copied into a scratch folder as ``stem`` and its suffix.

    Only a plain suffix of the sender's file name is used (it names the format; any other
    reads as ``.jsonl``): the file is written under a fixed name, never under a name the
    caller chose.
    """
    suffix = Path(upload.filename or "").suffix.lower()
    if not plain.fullmatch(suffix):
        suffix = ".jsonl"
    with scratch_tree("evalboard-dataset") as tmp:  # an uploaded file of rows, as a dataset
        path = Path(tmp) / f"{stem}{suffix}"
        with path.open("wb") as out:
            shutil.copyfileobj(upload.file, out)
        yield path
